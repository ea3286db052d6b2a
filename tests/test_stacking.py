"""Stacked runs (dpdl_core.runs.stacking) equal their plain runs bit for bit.

Every stackable algorithm of the registry runs its pinned case stacked with two other runs
that differ in everything a stack lets differ (seed, α_d, ε, η); each history must equal the
plain run's exactly, and the pinned one must also equal its pin. Then the corners: random
schedules and graphs, per-agent initialisation, a run that diverges inside a stack, runs
resuming from different rounds, and how sweeps cut configs into stacks.
"""
import json
from pathlib import Path

import pandas as pd
import pytest
from pinned.make_pins import METRICS, platform_signature

from dpdl_core.runs import runner
from dpdl_core.runs.config import ExperimentConfig
from dpdl_core.runs.runner import run, run_stack
from dpdl_core.runs.stacking import build_stack, plan_stacks, stack_key
from dpdl_core.sim.algorithms import get_algorithm, known_algorithms

PINNED = Path(__file__).resolve().parent / "pinned"
CASES = json.loads((PINNED / "cases.json").read_text())
PLATFORM_PIN = PINNED / "platforms" / f"{platform_signature()}.csv.gz"
TINY = dict(n_agents=4, batch_size=8, train_samples=400, rounds=4, eval_every=2, eval_samples=100,
            checkpoint_every=1)


def _variants(base: dict, kernels: str = "pinned") -> list[ExperimentConfig]:
    """The case and two runs differing in seed, α_d, ε (or σ = 0 kept) and η; ``kernels``:
    the execution strategies its pin ran (``pinned``) or today's defaults (``default``)."""
    eps = base.get("epsilon", 0.5)
    out = [base, {**base, "seed": 1, "alpha_d": 0.5, "epsilon": eps and 2 * eps, "lr": 0.01},
           {**base, "seed": 2, "epsilon": eps and 4 * eps}]
    make = ExperimentConfig.from_stored if kernels == "pinned" else ExperimentConfig.from_dict
    return [make(d) for d in out]


def _assert_identical(got: pd.DataFrame, expected: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(got.reset_index(drop=True), expected.reset_index(drop=True), check_exact=True)


def test_every_stackable_algorithm_has_a_pinned_case():
    # The four papers' algorithms (a fixture paper on $DPDL_PAPERS_PATH brings its own).
    stackable = {name for name in known_algorithms()
                 if get_algorithm(name).stackable and get_algorithm(name).__module__.startswith("dpdl_core.")}
    pinned = {c["algorithm"] for c in CASES.values()}
    assert {"dpdl", "dp_dpsgd", "muffliato", "dp_netfleet", "dp_cga", "pdsl", "leasgd"} <= stackable
    assert stackable <= pinned, f"stackable algorithms without a pinned case: {sorted(stackable - pinned)}"


@pytest.mark.parametrize("case", sorted(c for c in CASES if get_algorithm(CASES[c]["algorithm"]).stackable))
def test_a_stacked_run_is_bit_identical_to_its_plain_run_and_its_pin(case):
    configs = _variants(CASES[case])
    stacked = run_stack(configs, save=False, progress=False)
    assert [r.meta["stacked_runs"] for r in stacked] == [3, 3, 3]
    for cfg, res in zip(configs, stacked):
        _assert_identical(res.history, run(cfg, save=False, progress=False).history)
    if PLATFORM_PIN.is_file():
        pin = pd.read_csv(PLATFORM_PIN)
        pin = pin[pin["case"] == case].drop(columns="case").reset_index(drop=True)
        h = stacked[0].history
        got = h[h["metric"].isin(METRICS)].reset_index(drop=True).copy()
        got["value"] = got["value"].map(float.hex)
        pd.testing.assert_frame_equal(got[pin.columns], pin, check_dtype=False)


@pytest.mark.parametrize("case", ["dpdl", "dp_cga_batch_matched", "leasgd", "pdsl_stratified"])
def test_a_stacked_run_is_bit_identical_to_its_plain_run_with_the_default_kernels(case):
    configs = _variants(CASES[case], kernels="default")
    assert configs[0].per_sample_strategy == "bookkeeping" and configs[0].eval_strategy == "per_model"
    for cfg, res in zip(configs, run_stack(configs, save=False, progress=False)):
        assert res.meta["stacked_runs"] == 3
        _assert_identical(res.history, run(cfg, save=False, progress=False).history)


@pytest.mark.parametrize("changes", [
    dict(schedule="random_ring", topology="ring"),
    dict(init="per_agent"),
    dict(mixing="random_sinkhorn", topology="fully_connected"),  # graphs differ per seed: separate stacks
    dict(lr_decay=0.5, lr_decay_every=2),
    dict(algorithm="dp_cga", algo={"clip": "per_sample"}),
    # Exact Shapley values (no generator), per-sample clipping, each run's own Q.
    dict(algorithm="pdsl", topology="ring", sigma_rule="per_message", validation_samples=40,
         algo={"clipping": "per_sample"}),
    # Each run's own α = η_r·ρ, pools and groups; communication every 2nd round.
    dict(algorithm="leasgd", topology="fully_connected", sigma_rule="leasgd_common", lr_decay=0.5, lr_decay_every=2,
         algo={"leaders_per_follower": 3, "tau": 2, "k": 1}),
], ids=["random_ring", "per_agent_init", "random_sinkhorn", "lr_decay", "dp_cga_per_sample", "pdsl_exact",
        "leasgd_tau2"])
def test_stacks_of_random_schedules_graphs_and_inits_equal_plain_runs(changes):
    base = {**TINY, "epsilon": 0.5, "sigma_rule": "authors_code", **changes}
    configs = [ExperimentConfig.from_dict({**base, "seed": s, "lr": lr})
               for s, lr in [(0, 0.005), (1, 0.02), (2, 0.005)]]
    for cfg, res in zip(configs, run_stack(configs, save=False, progress=False)):
        _assert_identical(res.history, run(cfg, save=False, progress=False).history)


def test_a_diverging_run_stops_alone_and_leaves_the_others_untouched():
    base = {**TINY, "epsilon": None, "rounds": 6}
    configs = [ExperimentConfig.from_dict({**base, "seed": 0}), ExperimentConfig.from_dict({**base, "lr": 1e6}),
               ExperimentConfig.from_dict({**base, "seed": 2})]
    results = run_stack(configs, save=False, progress=False)
    assert [r.meta["diverged"] for r in results] == [False, True, False]
    assert results[1].history["round"].max() < 6
    for cfg, res in zip(configs, results):
        _assert_identical(res.history, run(cfg, save=False, progress=False).history)


@pytest.mark.parametrize("changes", [
    {},
    # Its state (loss window, pools) and its generator (the groups) come back from the checkpoint.
    dict(algorithm="leasgd", topology="fully_connected", sigma_rule="leasgd_common",
         algo={"leaders_per_follower": 3, "k": 2}),
    # Their diagnostic counters (QP solves; Shapley evaluations, ties, weights) come back too.
    dict(algorithm="dp_cga"),
    dict(algorithm="pdsl", topology="fully_connected", sigma_rule="per_message", validation_samples=40,
         algo={"exact_max_players": 2}),
], ids=["dpdl", "leasgd", "dp_cga", "pdsl"])
def test_runs_resuming_from_different_rounds_finish_as_their_plain_runs(store, monkeypatch, changes):
    configs = [ExperimentConfig.from_dict({**TINY, "epsilon": 0.5, "seed": s, **changes}) for s in range(3)]
    real = runner.training_rounds

    def interrupted_after_round_2(*args, **kwargs):
        for t, losses in real(*args, **kwargs):
            if t == 3:
                raise KeyboardInterrupt
            yield t, losses

    monkeypatch.setattr(runner, "training_rounds", interrupted_after_round_2)
    with pytest.raises(KeyboardInterrupt):
        run(configs[0], store=store, progress=False)
    monkeypatch.setattr(runner, "training_rounds", real)
    assert store.checkpoint_path(configs[0].hash).exists() and not store.has(configs[0].hash)
    results = run_stack(configs, store=store, progress=False)
    assert [r.meta["stacked_runs"] for r in results] == [1, 2, 2]  # the resumed one trained apart
    for cfg, res in zip(configs, results):
        assert store.has(cfg.hash) and not store.checkpoint_path(cfg.hash).exists()
        plain = run(cfg, save=False, progress=False)
        _assert_identical(res.history, plain.history)
        diagnostics = set(runner.prepare(cfg).algorithm.diagnostics())
        assert diagnostics or cfg.algorithm == "dpdl"
        assert {k: res.meta[k] for k in diagnostics} == {k: plain.meta[k] for k in diagnostics}
    again = run_stack(configs, store=store, progress=False)
    assert all(r.cached for r in again)


def test_algorithms_that_are_not_stackable_run_alone(monkeypatch):
    # Every algorithm of the four papers stacks: take one's declaration away.
    monkeypatch.setattr(get_algorithm("dp_dpsgd"), "stackable", False)
    alone = [name for name in known_algorithms() if not get_algorithm(name).stackable]
    assert "dp_dpsgd" in alone
    for name in alone:
        cfg = ExperimentConfig.from_dict({**TINY, "algorithm": name, "epsilon": None})
        assert stack_key(cfg) is None
        assert plan_stacks([cfg, cfg.replace(seed=1)]) == [[cfg], [cfg.replace(seed=1)]]


def test_build_stack_refuses_runs_of_different_shapes():
    a = runner.prepare(ExperimentConfig.from_dict({**TINY, "epsilon": None}))
    b = runner.prepare(ExperimentConfig.from_dict({**TINY, "epsilon": None, "batch_size": 16}))
    with pytest.raises(ValueError, match="cannot share a stack"):
        build_stack([a, b])


def test_plan_stacks_groups_by_key_caps_and_spreads(monkeypatch):
    seeds = [ExperimentConfig.from_dict({**TINY, "seed": s}) for s in range(10)]
    other = [ExperimentConfig.from_dict({**TINY, "algorithm": "dp_dpsgd", "seed": s}) for s in range(2)]
    mixed = seeds[:5] + other + seeds[5:]
    assert [len(s) for s in plan_stacks(mixed, cap=16)] == [10, 2]
    assert [len(s) for s in plan_stacks(mixed, cap=4)] == [4, 4, 2, 2]
    assert [len(s) for s in plan_stacks(mixed, cap=16, workers=2)] == [5, 5, 1, 1]
    monkeypatch.setenv("DPDL_STACK", "1")
    assert all(len(s) == 1 for s in plan_stacks(mixed))
    monkeypatch.setenv("DPDL_STACK", "3")
    assert [len(s) for s in plan_stacks(mixed)] == [3, 3, 3, 1, 2]
    monkeypatch.setenv("DPDL_STACK_MEMORY_MB", str(2 * 16 * 4 * 4 * 100_000 * 4.0 / 2**20))
    assert max(len(s) for s in plan_stacks(mixed)) == 2  # two runs' state fit the budget
    monkeypatch.setenv("DPDL_STACK", "many")
    with pytest.raises(ValueError, match=r"\$DPDL_STACK='many' must be a whole number of at least 1"):
        plan_stacks(mixed)
    monkeypatch.setenv("DPDL_STACK", "0")
    with pytest.raises(ValueError, match=r"\$DPDL_STACK='0' must be a whole number of at least 1"):
        plan_stacks(mixed)


def test_stacked_and_plain_runs_share_the_stored_file_format(store):
    configs = [ExperimentConfig.from_dict({**TINY, "epsilon": 0.5, "seed": s}) for s in range(2)]
    run_stack(configs, store=store, progress=False)
    head, hist = store.load_run(configs[1].hash)
    plain = run(configs[1], save=False, progress=False)
    assert head["config"] == configs[1].to_dict()
    _assert_identical(hist, plain.history)
    how = {"wall_seconds", "stacked_runs"}  # how it ran, not what it computed
    assert {k: v for k, v in head["meta"].items() if k not in how} == \
           {k: v for k, v in plain.meta.items() if k not in how}
    assert head["meta"]["stacked_runs"] == 2 and plain.meta["stacked_runs"] == 1


def test_evaluation_in_chunks_of_runs_changes_nothing(monkeypatch):
    monkeypatch.setattr(runner, "EVAL_MODELS_PER_CALL", 2 * TINY["n_agents"])  # calls of 2 runs, then 1
    configs = [ExperimentConfig.from_dict({**TINY, "epsilon": 0.5, "seed": s}) for s in range(3)]
    for cfg, res in zip(configs, run_stack(configs, save=False, progress=False)):
        _assert_identical(res.history, run(cfg, save=False, progress=False).history)
