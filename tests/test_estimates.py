"""Estimates. The ETA `figures` prints counts only what runs (with ``--only``, the runs of the
chosen notebooks, not every run of their papers) and each notebook's start-up; the studies'
estimates are within 2x of every committed CPU run's recorded wall time, or the run is named
with the measured reason it cannot be. Nothing here is timed: the wall times are the store's."""
from pathlib import Path
from types import SimpleNamespace

import pytest

from dpdl_core.verdicts import pipeline

SOURCES = pipeline.ROOT / "notebooks"


@pytest.fixture
def plan(monkeypatch):
    """A plan whose DPDL figures lack 8 CPU-hours of runs and tables 16 (24 distinct), and
    whose LEASGD fig02 group lacks 1 (and nothing else)."""
    def group(paper, name, hours):
        return SimpleNamespace(paper=paper, name=name, cpu_hours_missing=hours)

    groups = [group("dpdl", "figures", 8.0), group("dpdl", "tables", 16.0), group("dpdl", "all", 24.0),
              group("leasgd", "fig02", 1.0), group("leasgd", "tab01", 0.0), group("leasgd", "ext01", 0.0),
              group("leasgd", "all", 1.0)]
    fake = SimpleNamespace(groups=groups, total=SimpleNamespace(cpu_hours_missing=25.0))
    from dpdl_core.runs import plan as plan_module

    monkeypatch.setattr(plan_module, "make_plan", lambda profile, papers=None: fake)
    monkeypatch.setattr(pipeline.os, "cpu_count", lambda: 1)


def _notebooks(paper: str, *stems: str) -> list[Path]:
    return [SOURCES / paper / f"{stem}.ipynb" for stem in stems]


def test_only_counts_the_runs_of_the_chosen_notebooks(plan):
    figures = sorted(p.stem for p in (SOURCES / "dpdl").glob("fig*.ipynb"))
    # One figure notebook of the dpdl folder: its share of the figures group, not the paper's 24 h.
    one = pipeline._planned_seconds("cpu", ["dpdl"], _notebooks("dpdl", "fig01_mnist_bipartite"))
    assert one == pytest.approx(8 * 3600 / len(figures))
    # A notebook that sweeps no group (it computes in place or renders stored runs): nothing planned.
    assert pipeline._planned_seconds("cpu", ["dpdl"], _notebooks("dpdl", "ext01_quickstart")) is None
    assert pipeline._planned_seconds("cpu", ["leasgd"], _notebooks("leasgd", "tab01_accuracy_epsilon")) is None
    # A group named after its notebook belongs to it alone.
    assert pipeline._planned_seconds("cpu", ["leasgd"], _notebooks("leasgd", "fig02_mnist_communication")) == 3600
    # Every notebook of the folder: the paper's distinct runs, as without --only.
    every = sorted((SOURCES / "dpdl").glob("*.ipynb"))
    assert pipeline._planned_seconds("cpu", ["dpdl"], every) == 24 * 3600
    assert pipeline._planned_seconds("cpu", ["dpdl", "leasgd"]) == 25 * 3600


def test_the_figures_estimate_counts_each_notebooks_start_up(plan):
    # Rendering the committed studies computes nothing: each notebook's measured render time.
    studies = [SOURCES / p / "study_paper_scale.ipynb" for p in ("dpdl", "pdsl")]
    assert pipeline._notebook_seconds(studies, "paper", ["dpdl", "pdsl"], ["study_paper_scale"]) == \
        2 * pipeline.COMMITTED_NOTEBOOK_S
    # A computing notebook: its start-up and its share of the runs to compute.
    one = _notebooks("dpdl", "fig01_mnist_bipartite")
    assert pipeline._notebook_seconds(one, "cpu", ["dpdl"], ["fig01_mnist_bipartite"]) == \
        pipeline.NOTEBOOK_START_S + pipeline._planned_seconds("cpu", ["dpdl"], one)
    # One that sweeps nothing still starts a kernel.
    quick = _notebooks("dpdl", "ext01_quickstart")
    assert pipeline._notebook_seconds(quick, "cpu", ["dpdl"], ["ext01_quickstart"]) == pipeline.NOTEBOOK_START_S
    # A study notebook renders a committed store at every profile, besides any runs of its own.
    study = _notebooks("dpdl", "study_paper_scale")
    assert pipeline._notebook_seconds(study, "smoke", ["dpdl"], ["study_paper_scale"]) == pipeline.COMMITTED_NOTEBOOK_S


# -- the studies' estimates against the committed runs' recorded wall times ------------------

# Runs whose recorded wall time is more than 2x from their estimate, for a reason the store
# itself shows: the same work, timed elsewhere in the store, took less than half as long (or
# more than twice as long), so no estimate can be within 2x of both; these are the runs that
# shared their core with other work. Each entry names that twin, and the test checks the gap.
LOAD_TWINS = {
    ("dpdl", "mnist/code_hp/paper_noise/dpdl/seed2"): "mnist/code_hp/paper_noise/dpdl/seed1",
    ("dpdl", "mnist/paper_hp/paper_noise/dp_dpsgd/seed0"): "mnist/paper_hp/equal_eps/dp_dpsgd/seed0",
    ("dpdl", "mnist/paper_hp/equal_eps/dpdl/seed0"): "mnist/paper_hp/equal_eps/dpdl/seed2",
    ("dpdl", "mnist/code_hp/paper_noise/dp_netfleet/seed1"): "mnist/paper_hp/equal_eps/dp_netfleet/seed1",
    ("dpdl", "mnist/paper_hp/paper_noise/dp_netfleet/seed2"): "mnist/paper_hp/equal_eps/dp_netfleet/seed1",
    ("dpdl", "cifar10/paper_hp/paper_noise/dp_netfleet/seed0"): "cifar10/paper_hp/paper_noise/dp_netfleet/seed1",
    # DP-DPSGD computes one gradient per agent, whatever the graph: the two are the same work.
    ("dpdl", "cifar10/paper_hp/paper_noise/dp_dpsgd/seed0"): "cifar10/paper_hp/paper_noise/ring/dp_dpsgd/seed0",
    ("dpdl", "cifar10/paper_hp/paper_noise/ring/dp_dpsgd/seed0"): "cifar10/paper_hp/paper_noise/dp_dpsgd/seed0",
}
# The slowest of three seeds of the same work, their spread under 2x: 4,747 s against 2,744
# and 3,527 s. The estimate (2,075 s) is within 2x of the other two; 3.5 s a round instead of
# 2.75 would hold all three, at the price of the hours left that docs/answer.md states for the
# study's CIFAR-10 runs not yet stored (`python -m dpdl_core answer` rewrites them).
SLOWEST_SEED = {("dpdl", "cifar10/paper_hp/paper_noise/dp_cga/seed0"): ("cifar10/paper_hp/paper_noise/dp_cga/seed1",
                                                                       "cifar10/paper_hp/paper_noise/dp_cga/seed2")}
# Runs made on a quiet core (beside them, one study at a lower priority, or a test run that
# started after them): the same work, timed elsewhere in the store on a core shared with more, took more than
# 1.5x as long, and the estimate, within 2x of that twin, is just over 2x from the quiet run.
# Each entry names that twin, and the test checks the gap.
QUIET_TWINS = {
    ("dpdl", "mnist/code_hp/paper_noise/eps0.25/dp_cga/seed2"): "mnist/code_hp/paper_noise/eps0.25/dp_cga/seed0",
    ("dpdl", "mnist/code_hp/paper_noise/eps1/dp_cga/seed1"): "mnist/code_hp/paper_noise/eps1/dp_cga/seed0",
    ("dpdl", "mnist/code_hp/paper_noise/eps1/dp_cga/seed2"): "mnist/code_hp/paper_noise/eps1/dp_cga/seed0",
    ("dpdl", "mnist/code_hp/paper_noise/ring/eps1/dpdl/seed0"): "mnist/code_hp/paper_noise/ring/eps0.25/dpdl/seed0",
    ("dpdl", "mnist/code_hp/paper_noise/ring/eps1/dp_cga/seed0"): "mnist/code_hp/paper_noise/ring/eps0.25/dp_cga/seed0",
    ("dpdl", "mnist/code_hp/paper_noise/ring/eps0.25/dpdl/seed1"): "mnist/code_hp/paper_noise/ring/eps0.25/dpdl/seed0",
    ("dpdl", "mnist/code_hp/paper_noise/ring/eps0.25/dpdl/seed2"): "mnist/code_hp/paper_noise/ring/eps0.25/dpdl/seed0",
}
# A job resumed from its kept partial work records the wall time of its last sitting only:
# the CIFAR-10 attack cell's two trainings (168 core-minutes) were kept from earlier sittings
# and the last one ran the inversion (28 minutes); 196 minutes in all against the estimate's 210.
RESUMED = {("dpdl", "cifar10/attack/bipartite_n10")}


@pytest.fixture(scope="module")
def stored_runs():
    """Every committed study run: paper, key, estimate, recorded wall time and device."""
    import pandas as pd

    from dpdl_core.runs.studies import load_study, study_papers

    frames = []
    for paper in study_papers():
        status = load_study(paper).status()
        frames.append(status[status["stored"]].assign(paper=paper))
    runs = pd.concat(frames, ignore_index=True)
    return runs.assign(ratio=runs["estimate_s"] / runs["wall_s"].astype(float)).set_index(["paper", "key"])


def test_every_committed_cpu_run_is_within_2x_of_its_estimate(stored_runs):
    # The estimates are seconds on one CPU core; a run made on a GPU (device cuda) took 3-190x
    # less (its wall time says nothing of a core's pace), so those are left out.
    cpu = stored_runs[stored_runs["device"] == "cpu"]
    assert len(cpu) >= 150, "the committed studies hold fewer CPU runs than when this test was written"
    off = cpu[(cpu["ratio"] < 0.5) | (cpu["ratio"] > 2)]
    named = set(LOAD_TWINS) | set(SLOWEST_SEED) | set(QUIET_TWINS) | RESUMED
    assert set(off.index) <= named, f"estimate off by more than 2x: {off[['estimate_s', 'wall_s']]}"
    # The list names no run that is within 2x (it would hide a later regression of its estimate).
    assert set(off.index) == named


def test_the_runs_named_off_are_so_for_their_stated_reason(stored_runs):
    for (paper, key), twin in LOAD_TWINS.items():
        run, other = stored_runs.loc[(paper, key)], stored_runs.loc[(paper, twin)]
        assert run["estimate_s"] == pytest.approx(other["estimate_s"], rel=0.01)  # the same work
        gap = float(run["wall_s"]) / float(other["wall_s"])
        assert not 0.5 <= gap <= 2, f"{key} and {twin} are timed within 2x of each other"
        assert 0.5 <= other["ratio"] <= 2 or (paper, twin) in LOAD_TWINS
    for (paper, key), seeds in SLOWEST_SEED.items():
        others = stored_runs.loc[[(paper, k) for k in seeds]]
        assert (others["ratio"].between(0.5, 2)).all()
        assert float(stored_runs.loc[(paper, key), "wall_s"]) > others["wall_s"].astype(float).max()
    for (paper, key), twin in QUIET_TWINS.items():
        run, other = stored_runs.loc[(paper, key)], stored_runs.loc[(paper, twin)]
        assert run["estimate_s"] == pytest.approx(other["estimate_s"], rel=0.01)  # the same work
        assert float(other["wall_s"]) > 1.5 * float(run["wall_s"]) and 0.5 <= other["ratio"] <= 2
    for paper, key in RESUMED:
        assert stored_runs.loc[(paper, key), "kind"] == "job" and stored_runs.loc[(paper, key), "ratio"] > 2
