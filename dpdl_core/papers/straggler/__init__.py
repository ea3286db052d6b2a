"""Straggler-resilient differentially-private decentralized learning (Yakimenka, Weng, Lin,
Rosnes, Kliewer, ITW 2022): the skipping scheme (Algorithm 1) on a fixed or randomized
logical ring, latency models with Lemmas 1–2, the bounds of Theorems 1–3, and Fig. 2.
See README.md beside this file and docs/straggler.md."""
from .housing import HousingData, RunSplits, load_housing, prepare_housing, split_runs
from .latency import LATENCY_MODELS, LatencyModel, paper_models
from .theorems import (
    SCHEMES,
    PaperParams,
    h_tilde,
    lambda1,
    thm1_bound,
    thm1_bound_bruteforce,
    thm1_e_h,
    thm2_epsilon,
    thm3_as_printed,
    thm3_diagnostic,
)
from .token_ring import HopSampler, TokenRingConfig, TokenRingResult, run_token_ring

TITLE = "Straggler-Resilient Differentially-Private Decentralized Learning"

__all__ = [
    "LATENCY_MODELS", "SCHEMES", "TITLE", "HopSampler", "HousingData", "LatencyModel", "PaperParams", "RunSplits",
    "TokenRingConfig", "TokenRingResult", "fig02_tradeoffs", "h_tilde", "lambda1", "load_housing", "paper_models",
    "prepare_housing", "run_token_ring", "split_runs", "thm1_bound", "thm1_bound_bruteforce", "thm1_e_h",
    "thm2_epsilon", "thm3_as_printed", "thm3_diagnostic",
]


def __getattr__(name: str):
    # The figure builder pulls in matplotlib; import it only when asked for, so that
    # importing every paper package (dpdl_core.papers.load_all) stays light.
    if name == "fig02_tradeoffs":
        from .figures import fig02_tradeoffs

        return fig02_tradeoffs
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
