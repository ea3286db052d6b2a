"""``python -m dpdl_core plan``: run counts of every profile and paper, the stored count, the
CPU-hour estimate from the engine benchmark (or its documented fallback), the CLI."""
import json

import pandas as pd
import pytest

from dpdl_core.cli import main
from dpdl_core.papers import PAPERS
from dpdl_core.runs.plan import (
    EVAL_S_PER_MODEL_IMAGE,
    FALLBACK_ROWS,
    RUN_START_S,
    Benchmark,
    format_plan,
    make_plan,
    overhead_seconds,
    paper_groups,
)
from dpdl_core.runs.profiles import PROFILES

SWEEPING = ("dpdl", "leasgd", "pdsl")  # the papers whose notebooks sweep runs into a store


@pytest.fixture
def no_benchmark(tmp_path):
    return Benchmark.load(tmp_path / "missing.json")


@pytest.mark.parametrize("profile", PROFILES)
def test_every_profile_and_paper_has_runs(profile, store, no_benchmark):
    plan = make_plan(profile, store=store, benchmark=no_benchmark)
    assert set(plan.papers()) == set(SWEEPING) and plan.no_runs == sorted(set(PAPERS) - set(SWEEPING))
    for paper in SWEEPING:
        (distinct,) = [g for g in plan.groups if g.paper == paper and g.name == "all"]
        groups = [g for g in plan.groups if g.paper == paper and g.name != "all"]
        assert distinct.runs > 0 and all(g.runs > 0 for g in groups)
        assert max(g.runs for g in groups) <= distinct.runs <= sum(g.runs for g in groups)
        assert distinct.cpu_hours > 0 and distinct.unestimated == 0
    assert plan.total.runs > 0 and plan.total.missing == plan.total.runs - plan.total.stored
    text = format_plan(plan, executor="ray")
    assert "ESTIMATE" in text and "missing" in text and "Executor ray" in text


def test_stored_count_after_storing_one_run(store, no_benchmark):
    (fig02, *_) = paper_groups("leasgd", "smoke")
    before = make_plan("smoke", papers=["leasgd"], store=store, benchmark=no_benchmark)
    assert before.total.stored == 0
    cfg = fig02.configs[0]
    history = pd.DataFrame({"round": [1], "agent": [-1], "metric": ["train_loss_mean"], "value": [1.0]})
    store.save(cfg.hash, cfg.to_dict(), history, {})
    after = make_plan("smoke", papers=["leasgd"], store=store, benchmark=no_benchmark)
    assert after.total.stored == 1 and after.total.runs == before.total.runs
    assert after.total.cpu_hours_missing < before.total.cpu_hours_missing
    fig02_line = [g for g in after.groups if g.name == "fig02"][0]
    assert (fig02_line.stored, fig02_line.store) == (1, store.root)


def test_benchmark_rows_and_scaling(tmp_path):
    rows = [dict(case="mnist_bipartite_10", dataset="mnist", topology="bipartite", n_agents=10, batch_size=216,
                 engine_round_s=0.5),
            dict(case="mnist_fully_connected_20", dataset="mnist", topology="fully_connected", n_agents=20,
                 batch_size=216, engine_round_s=4.0)]
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"environment": {"torch": "x", "threads": 4, "cpu": "y"}, "results": rows}))
    bench = Benchmark.load(path)
    assert bench.measured and bench.threads == 4 and str(path) in bench.source
    (cfg,) = paper_groups("leasgd", "smoke")[0].configs[:1]
    cfg = cfg.replace(dataset="mnist", topology="ring", n_agents=18, batch_size=108, rounds=10)
    seconds, row = bench.cpu_seconds(cfg)
    assert row.case == "mnist_fully_connected_20"  # the nearest N
    assert seconds == pytest.approx(4.0 * (18 * 108) / (20 * 216) * 10 * 4 + overhead_seconds(cfg))
    # Set-up, plus 18 models on the test images at rounds 0 (10 // eval_every) and the end.
    evaluations = 10 // cfg.eval_every + 1
    assert overhead_seconds(cfg) == pytest.approx(
        RUN_START_S
        + evaluations * 18 * (cfg.eval_samples or 10_000) * EVAL_S_PER_MODEL_IMAGE[("mnist", cfg.eval_strategy)])
    assert bench.row_for(cfg.replace(n_agents=10, topology="bipartite")).case == "mnist_bipartite_10"
    assert bench.cpu_seconds(cfg.replace(dataset="cifar10")) == (None, None)
    fallback = Benchmark.load(tmp_path / "missing.json")
    assert not fallback.measured and fallback.rows == FALLBACK_ROWS and "missing" in fallback.source


def test_cli_plan(capsys, tmp_path):
    with pytest.raises(SystemExit) as exc:
        main(["plan", "--help"])
    assert exc.value.code == 0
    assert "--executor" in capsys.readouterr().out
    assert main(["plan", "--profile", "smoke", "--paper", "leasgd", "--results", str(tmp_path / "results")]) == 0
    out, err = capsys.readouterr()
    assert "leasgd" in out and "pdsl" not in out and str(tmp_path / "results") in out
    assert "does not exist yet, so every run counts as to run" in err  # a new folder, or a typo: said either way
    assert main(["plan", "--profile", "smoke", "--paper", "nope"]) == 2


def test_a_benchmark_file_that_is_missing_or_not_a_benchmark_is_an_error(capsys, tmp_path):
    # Given explicitly, a missing file is a mistake; only the default's absence means the docs' table.
    assert main(["plan", "--paper", "leasgd", "--benchmark", str(tmp_path / "missing.json")]) == 2
    assert "does not exist; pass a file written by `benchmarks/bench_engine.py" in capsys.readouterr().err
    for name, text in (("empty.json", "{}"), ("broken.json", "{x"), ("rows.json", '{"results": [{"case": 1}]}')):
        (tmp_path / name).write_text(text)
        with pytest.raises(ValueError, match=f"benchmark file .*{name} is not an engine benchmark .*make bench"):
            Benchmark.load(tmp_path / name)
    with pytest.raises(ValueError, match="is not an engine benchmark"):
        Benchmark.load(tmp_path)  # a folder


def test_plan_executor_from_the_environment_is_checked(capsys, monkeypatch):
    from dpdl_core.cli import EXECUTOR_CHOICES
    from dpdl_core.runs.executors import EXECUTORS

    assert EXECUTOR_CHOICES == sorted(EXECUTORS)  # the CLI's copy, kept so that --help needs no torch
    monkeypatch.setenv("DPDL_EXECUTOR", "nope")
    assert main(["plan", "--paper", "leasgd"]) == 2
    assert "$DPDL_EXECUTOR='nope' is not an executor; allowed values: ['local', 'ray']" in capsys.readouterr().err
    monkeypatch.setenv("DPDL_EXECUTOR", "ray")
    monkeypatch.setenv("DPDL_THREADS", "abc")
    assert main(["plan", "--paper", "leasgd"]) == 2
    assert "$DPDL_THREADS='abc' must be a whole number of at least 1" in capsys.readouterr().err
    monkeypatch.setenv("DPDL_EXECUTOR", "local")
    monkeypatch.setenv("DPDL_WORKERS", "many")
    assert main(["plan", "--paper", "leasgd"]) == 2
    assert "$DPDL_WORKERS='many' must be a whole number of at least 1 (worker processes" in capsys.readouterr().err
