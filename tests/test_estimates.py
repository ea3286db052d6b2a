"""The ETA `figures` prints counts only what runs: with ``--only``, the runs of the chosen
notebooks, not every run of their papers."""
from pathlib import Path
from types import SimpleNamespace

import pytest

from dpdl_core import pipeline

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
    from dpdl_core import plan as plan_module

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
