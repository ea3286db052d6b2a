"""PDSL's best-faith search: the readings the text leaves open, declared before any of their
runs is read.

PDSL as the paper states it does not train: every committed run of it diverged (training
loss past 1,000 times its first round's), so its claims read "not reproducible as written".
The text leaves three things open that decide whether it can train, and the search tries each:

σ
    ``sigma_b``: the per-message Gaussian mechanism standing in for Theorem 1's σ = ∞
    (``per_message``, the study's reading); ``code_base``: the same group's code-base
    convention (``pdsl_code_base``, about 2,300 times less noise); ``per_sample``: per-sample
    clipping, the DP-SGD mechanism of the baselines, under ``per_message``.
Σ_j π_ij
    ``omega``: eq (20) as printed (n for uniform ω); ``average``: eq (21) as "a weighted
    average" (1).
γ
    :data:`GAMMAS`, the paper's 0.001 first, for every method alike: PDSL and each of the four
    baselines get the same grid (the same budget of γ points); the baselines have one σ
    reading, the paper's rule for them.

Every search run is the study's first cell (MNIST, fully connected, M = 10, ε 0.3, the
paper's 200 rounds, B and |Q|), seed 0, and stores the accountant's ε of what ran. The
choice (:func:`choose`) reads each run's *validation* accuracy at its last round, never the
test set: per baseline its best γ; for PDSL its best (reading, γ) among runs that did not
diverge. The chosen points then run with :data:`SEEDS_AT_CHOICE`, and the paper's claims of
that cell are judged there as best-faith verdicts, beside "not reproducible as written".

Cost on one CPU core at the first cell: about 2.2 h a PDSL run and 0.2-1 h a baseline run
(the committed runs' wall times), 24 PDSL and 16 baseline runs: a GPU's work.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pandas as pd

__all__ = ["GAMMAS", "READINGS", "SEEDS_AT_CHOICE", "WEIGHTINGS", "SearchRun", "choose", "search_runs"]

# The γ grid, the paper's first; the same for every method.
GAMMAS = (0.001, 0.01, 0.03, 0.1)
# PDSL's σ readings: the config changes each makes.
READINGS = {"sigma_b": {"sigma_rule": "per_message"},
            "code_base": {"sigma_rule": "pdsl_code_base"},
            "per_sample": {"sigma_rule": "per_message", "algo": {"clipping": "per_sample"}}}
WEIGHTINGS = ("omega", "average")
SEEDS_AT_CHOICE = (0, 1, 2)


@dataclass(frozen=True)
class SearchRun:
    """One run of the search: the method's label, its reading (``"paper"`` for a baseline),
    the weighting (PDSL only), γ and the config."""

    label: str
    reading: str
    weighting: str
    gamma: float
    config: object

    @property
    def key(self) -> str:
        """The run's study key under ``mnist/fc10/eps0.3/search/``."""
        weighting = f"/{self.weighting}" if self.label == "PDSL" else ""
        return f"mnist/fc10/eps0.3/search/{self.label}/{self.reading}{weighting}/gamma{self.gamma:g}"


def search_runs(base: Mapping[str, object]) -> list[SearchRun]:
    """Every run of the search from ``base``, the seed-0 config of PDSL and of each baseline in
    the study's first cell by label (:func:`.study.search_base`)."""
    out = []
    for gamma in GAMMAS:
        for reading, change in READINGS.items():
            for weighting in WEIGHTINGS:
                cfg = base["PDSL"]
                algo = {**cfg.algo, **change.get("algo", {}), "weighting": weighting}
                out.append(SearchRun("PDSL", reading, weighting, gamma,
                                     cfg.replace(lr=gamma, algo=algo,
                                                 **{k: v for k, v in change.items() if k != "algo"})))
        for label in (label for label in base if label != "PDSL"):
            out.append(SearchRun(label, "paper", "", gamma, base[label].replace(lr=gamma)))
    return out


def choose(results: pd.DataFrame) -> pd.DataFrame:
    """The chosen point of each method from the search's ``results`` (one row per run: label,
    reading, weighting, gamma, val_acc at the last round, diverged): the best validation
    accuracy among runs that did not diverge; a method whose every run diverged has no row."""
    ok = results[~results["diverged"].astype(bool)]
    best = ok.loc[ok.groupby("label")["val_acc"].idxmax()]
    return best[["label", "reading", "weighting", "gamma", "val_acc"]].reset_index(drop=True)
