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

# The same work runs at different paces on a core that holds only it and on one shared with
# other work: the store holds MNIST runs of one estimate timed 4.3x apart (DP-CGA: 600 s
# beside a low-priority study, 2,589 s beside a test suite), so no estimate is within 2x of
# every run. A run outside 2x is accepted when the store itself shows why: the same work (same
# study, dataset, kind, estimate and execution: the kernels it ran with), timed at least 1.5x
# nearer the estimate and within 2x of it (or past it, on the other side). A wrong estimate
# has no such twin: every run of its work is off on the same side. Nor has a run made with a
# faster kernel than its twin (the LEASGD MNIST runs: 6.5x between the vmap and book-keeping
# kernels), which the estimate of the kernel it ran with must cover.
TWIN_GAP = 1.5
# A job resumed from its kept partial work records the wall time of its last sitting only:
# the CIFAR-10 attack cell's two trainings (168 core-minutes) were kept from earlier sittings
# and the last one ran the inversion (28 minutes); 196 minutes in all against the estimate's 210.
RESUMED = {("dpdl", "cifar10/attack/bipartite_n10")}


@pytest.fixture(scope="module")
def stored_runs():
    """Every committed CPU study run: paper, key, kind, execution, estimate (of the kernels it
    ran with), recorded wall time and ratio.

    The estimates are seconds on one CPU core; a run made on a GPU (device cuda) took 3-190x
    less (its wall time says nothing of a core's pace), so those are left out."""
    import pandas as pd

    from dpdl_core.runs.studies import load_study, study_papers

    frames = []
    for paper in study_papers():
        status = load_study(paper).status()
        frames.append(status[status["stored"] & (status["device"] == "cpu")].assign(paper=paper))
    runs = pd.concat(frames, ignore_index=True)
    runs = runs.assign(wall_s=runs["wall_s"].astype(float), dataset=runs["key"].str.split("/").str[0])
    return runs.assign(ratio=runs["estimate_s"] / runs["wall_s"]).set_index(["paper", "key"])


def _load_twin(runs, paper: str, key: str) -> str | None:
    """A key of the same work as ``key`` whose wall time shows the load explains ``key``'s gap
    to its estimate, or None."""
    run = runs.loc[(paper, key)]
    same = runs.loc[paper]
    same = same[(same["dataset"] == run["dataset"]) & (same["kind"] == run["kind"])
                & (same["execution"] == run["execution"])
                & ((same["estimate_s"] / run["estimate_s"] - 1).abs() <= 0.01) & (same.index != key)]
    if run["ratio"] > 2:  # faster than estimated: a slower twin, not too slow for the estimate
        twins = same[(same["wall_s"] > TWIN_GAP * run["wall_s"]) & (same["ratio"] <= 2)]
    else:
        twins = same[(same["wall_s"] * TWIN_GAP < run["wall_s"]) & (same["ratio"] >= 0.5)]
    return None if twins.empty else str(twins.index[0])


def test_every_committed_cpu_run_is_within_2x_of_its_estimate_or_has_a_load_twin(stored_runs):
    assert len(stored_runs) >= 150, "the committed studies hold fewer CPU runs than when this test was written"
    off = stored_runs[(stored_runs["ratio"] < 0.5) | (stored_runs["ratio"] > 2)]
    unexplained = [key for key in off.index if key not in RESUMED and _load_twin(stored_runs, *key) is None]
    assert not unexplained, f"estimate off by more than 2x: {off.loc[unexplained, ['estimate_s', 'wall_s']]}"
    # The estimates are centred: most runs are within 2x without a twin.
    assert len(off) <= 0.15 * len(stored_runs), f"{len(off)} of {len(stored_runs)} runs off by more than 2x"
    # A resumed job is named only while it is off (a name would hide a later regression).
    for paper, key in RESUMED:
        assert stored_runs.loc[(paper, key), "kind"] == "job" and stored_runs.loc[(paper, key), "ratio"] > 2


def test_a_wrong_estimate_has_no_load_twin(stored_runs):
    # Every run of one work off on the same side, as a mis-set per-round cost makes them.
    work = stored_runs.loc["dpdl"]
    work = work[work["estimate_s"] == 1310.0].index
    assert len(work) >= 3
    wrong = stored_runs.copy()
    wrong.loc[[("dpdl", k) for k in work], "ratio"] *= 5
    assert all(_load_twin(wrong, "dpdl", k) is None for k in work)
    # And the store as it is explains a quiet run of that work by a loaded one.
    fast = stored_runs.loc[[("dpdl", k) for k in work]]["ratio"].idxmax()
    assert stored_runs.loc[fast, "ratio"] > 2 and _load_twin(stored_runs, *fast) is not None
