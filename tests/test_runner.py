import pytest

from dpdl_core.papers.dpdl.algorithm import DPDL
from dpdl_core.runs.config import ExperimentConfig
from dpdl_core.runs.runner import run

CFG = dict(n_agents=4, batch_size=16, train_samples=800, rounds=6, eval_every=3, eval_samples=200, epsilon=1.0,
           checkpoint_every=2)


def test_second_run_is_loaded_from_store(store):
    cfg = ExperimentConfig(**CFG)
    first = run(cfg, store=store)
    second = run(cfg, store=store)
    assert second.cached and second.history.equals(first.history)
    assert second.meta["sigma_mean"] == pytest.approx(first.meta["sigma_mean"])
    assert set(first.history["metric"]) >= {"train_loss", "train_loss_mean", "test_acc", "avg_test_acc", "consensus"}


def test_interrupted_run_resumes_without_loss_or_duplication(store, tmp_path, monkeypatch):
    from dpdl_core.runs.results import ResultStore

    cfg = ExperimentConfig(**CFG)
    reference = run(cfg, store=ResultStore(tmp_path / "ref"))

    calls = {"n": 0}
    original = DPDL.step

    def dying_step(self, state, xb, yb):
        calls["n"] += 1
        if calls["n"] == 5:  # die in round 5: rounds 1-4 are checkpointed
            raise KeyboardInterrupt
        return original(self, state, xb, yb)

    monkeypatch.setattr(DPDL, "step", dying_step)
    with pytest.raises(KeyboardInterrupt):
        run(cfg, store=store)
    assert not store.has(cfg.hash)
    assert (store.root / "checkpoints" / f"{cfg.hash}.pt").exists()
    monkeypatch.setattr(DPDL, "step", original)
    resumed = run(cfg, store=store)
    assert resumed.history.equals(reference.history)
    assert not (store.root / "checkpoints" / f"{cfg.hash}.pt").exists()


def test_result_records_privacy_and_provenance(store):
    res = run(ExperimentConfig(**CFG), store=store)
    m = res.meta
    assert m["sigma_rule"] == "rdp" and m["epsilon_rdp_max"] <= 1.0 + 1e-9
    assert len(m["sigma"]) == 4 and m["messages_per_round"] == [3, 3, 3, 3]
    assert m["dataset"]["subset"] is True and m["topology"]["topology"] == "bipartite"


def test_cli_run_and_help(tmp_path, capsys):
    from dpdl_core.cli import main

    assert main(["run", "--results", str(tmp_path), "--set", "rounds=2", "--set", "n_agents=3",
                 "--set", "batch_size=8", "--set", "train_samples=300", "--set", "eval_samples=100"]) == 0
    assert '"final_avg_test_acc"' in capsys.readouterr().out
    assert main(["run", "--set", "topology=torus"]) == 2
    assert "allowed values" in capsys.readouterr().err
    with pytest.raises(SystemExit) as ex:
        main(["run", "--help"])
    assert ex.value.code == 0


def test_benchmark_script_runs_and_reports_ratios(tmp_path):
    """Smoke test of the benchmark's plumbing (no timing is asserted)."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_engine.py"
    out = tmp_path / "bench.json"
    args = ["--cases", "mnist_bipartite_10", "--repeats", "1", "--naive-edges", "1", "--batch-size", "4",
            "--run-rounds", "2", "--out", str(out)]
    subprocess.run([sys.executable, str(script), *args], check=True)
    rows = {r["case"]: r for r in json.loads(out.read_text())["results"]}
    over = rows["run_overhead_mnist_bipartite_10"]
    assert over["rounds"] == 2 and over["run_over_engine"] > 0
    assert set(over["breakdown_s"]) >= {"step", "evaluate", "prepare"}
    row = rows["mnist_bipartite_10"]
    assert row["edges"] == 60 and row["params"] == 5142
    for key in ("engine_round_s", "per_edge_loop_round_s", "naive_round_s", "speedup_vs_per_edge", "speedup_vs_naive",
                "kernel_fraction", "engine_microbatch_round_s", "microbatch_loop_round_s", "speedup_vs_microbatch_loop",
                "microbatch_kernel_fraction_of_sgemm", "microbatch_loop_fraction_of_sgemm", "bookkeeping_round_s",
                "bookkeeping_speedup_vs_engine"):
        assert row[key] > 0


@pytest.mark.parametrize("changes", [{"dataset": "cifar10", "per_sample_strategy": "per_model"},
                                     {"algorithm": "dp_cga", "algo": {"clip": "batch"},
                                      "batch_grad_strategy": "per_model"}])
def test_execution_strategies_change_how_not_what(changes):
    """A run with the per-model per-sample kernel, or per-model whole-batch gradients (DP-CGA
    clipping whole batches), has the history of the default run to float rounding, and
    its own hash."""
    strategies = {k: v for k, v in changes.items() if k.endswith("_strategy")}
    base = ExperimentConfig(**{**CFG, **{k: v for k, v in changes.items() if k not in strategies}})
    fast = base.replace(**strategies)
    assert fast.hash != base.hash
    h0, h1 = (run(c, save=False, progress=False).history for c in (base, fast))
    assert h0[["round", "metric", "agent"]].equals(h1[["round", "metric", "agent"]])
    assert h1["value"].to_numpy() == pytest.approx(h0["value"].to_numpy(), rel=1e-4, abs=1e-5)
