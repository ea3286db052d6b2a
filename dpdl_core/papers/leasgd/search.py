"""LEASGD's best-faith search for Table 1's MNIST cell, declared before any of its runs is read.

At the paper's stated setting (m = 5, B = 64, η = 0.05, C = 1, ε = 5 at T_max = 1,500) our
LEASGD ends at 87.7% against the paper's 97%, so Table 1's claims read "not calibrated". The
gap is not the noise: the same run without noise ends at 87.7% too. It is the clipped step
within the iteration budget, and η cannot rise (η·ρ·leaders < 1 caps it at 0.055). The text
leaves two things open that set that budget, and the search tries each:

C
    :data:`CLIPS`: the per-sample clipping norm, the paper's 1 first.
T_max
    :data:`T_MAXES`: the iterations, the paper's 1,500 first. σ is calibrated for ε = 5 over
    T_max (``sigma_rule: leasgd_common``), so every point keeps the paper's privacy: a longer
    run gets more noise, never a larger ε.

Both methods of Table 1 (LEASGD and D-PSGD) get the same grid, the same budget of points.
Every search run is Table 1's MNIST cell at m = 5, seed 0, at the ``paper`` profile's other
settings. The choice (:func:`choose`) reads each run's *validation* accuracy at its early
stop, never the test set: per method its best (C, T_max). The chosen points then run with
:data:`SEEDS_AT_CHOICE`; LEASGD counts as calibrated there if its test accuracy reaches the
paper's number within the claims' margin, and Table 1's comparison is judged at that point.

Cost on one CPU core with the default kernels: about 2 min a run at T_max = 1,500 (a Table 1
run took 108-116 s), in proportion to T_max beyond: 18 runs, about 2 core-hours
(docs/benchmarks.md, "Planner estimates").
"""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

__all__ = ["CHOSEN", "CLIPS", "SEEDS_AT_CHOICE", "T_MAXES", "SearchRun", "choose", "chosen_runs", "search_runs"]

# The grids, the paper's value first; the same for both methods.
CLIPS = (1.0, 3.0, 10.0)
T_MAXES = (1500, 3000, 6000)
SEEDS_AT_CHOICE = (0, 1, 2)
# Each method's chosen (C, T_max): :func:`choose` on the committed search, written here once
# the search is complete so that the study's runs never depend on what a store holds
# (``tests/test_leasgd_search.py`` recomputes it from the committed runs). Validation accuracy
# there: LEASGD 0.9143, D-PSGD 0.9142 (docs/leasgd.md, "The best-faith search").
CHOSEN: dict[str, tuple[float, int]] | None = {"leasgd": (3.0, 6000), "dp_dpsgd": (3.0, 3000)}


@dataclass(frozen=True)
class SearchRun:
    """One run of the search: the algorithm, C, T_max and the config."""

    algorithm: str
    clip: float
    t_max: int
    config: object

    @property
    def key(self) -> str:
        """The run's study key under ``tab01/mnist/m5/search/`` (seed 0 unnamed: the search's)."""
        seed = f"/seed{self.config.seed}" if self.config.seed else ""
        return f"tab01/mnist/m5/search/{self.algorithm}/clip{self.clip:g}/T{self.t_max}{seed}"


def search_runs(profile: str = "paper") -> list[SearchRun]:
    """Every run of the search: seed 0 of Table 1's MNIST m = 5 cell at ``profile``'s scale,
    at each (C, T_max) of the grid, for both methods."""
    from .figures import Tab01Settings

    base = {c.algorithm: c for c in Tab01Settings.from_profile(profile).configs()
            if c.dataset == "mnist" and c.n_agents == 5 and c.seed == 0}
    return [SearchRun(alg, clip, t_max, cfg.replace(clip=clip, rounds=t_max))
            for clip in CLIPS for t_max in T_MAXES for alg, cfg in base.items()]


def choose(results: pd.DataFrame) -> pd.DataFrame:
    """The chosen point of each method from the search's ``results`` (one row per run:
    algorithm, clip, t_max, val_acc at its early stop): the best validation accuracy."""
    best = results.loc[results.groupby("algorithm")["val_acc"].idxmax()]
    return best[["algorithm", "clip", "t_max", "val_acc"]].reset_index(drop=True)


def chosen_runs(profile: str = "paper") -> list[SearchRun]:
    """The runs at each method's :data:`CHOSEN` point, one per seed of :data:`SEEDS_AT_CHOICE`
    (seed 0 is the search's own run there); none while :data:`CHOSEN` is None, nor at a
    profile without Table 1's MNIST m = 5 cell (as :func:`search_runs`)."""
    from .figures import Tab01Settings

    base = {c.algorithm: c for c in Tab01Settings.from_profile(profile).configs()
            if c.dataset == "mnist" and c.n_agents == 5 and c.seed == 0}
    if CHOSEN is None or not base:
        return []
    return [SearchRun(alg, clip, t_max, base[alg].replace(clip=clip, rounds=t_max, seed=seed))
            for alg, (clip, t_max) in CHOSEN.items() for seed in SEEDS_AT_CHOICE]
