"""The DPDL paper's σ rules (registered as ``theorem1`` and ``authors_code``).

``theorem1``
    Eq. (23) of the DPDL paper. Its constants c2 (from the moments accountant) and h are
    unspecified there; defaults c2 = 1 and h = 1 (the minimiser of (h+1)²/h). α is DPDL's
    ``algo.alpha`` (the paper's value for the topology when unset).
``authors_code``
    What the DPDL authors' released code does — not an accountant:
    sample_rate = B·N/(5·10⁵), σ_i = (96·sample_rate/ε)·(1/√w_ii + 1.5·N)/√(Σ_{j∈N_i} 1/w_ij).

The ε each run stores is the RDP accountant's for the σ these rules give
(:func:`dpdl_core.sim.privacy.calibrate`), not the nominal ε.
"""
from __future__ import annotations

import math

import numpy as np

from ...sim import SigmaRequest, register_sigma_rule
from .algorithm import paper_alpha

__all__ = ["authors_code_sigma", "theorem1_sigma"]


def theorem1_sigma(
    epsilon: float,
    delta: float,
    W: np.ndarray,
    batch_size: int,
    min_local: int,
    rounds: int,
    alpha: float,
    c2: float = 1.0,
    h: float = 1.0,
) -> np.ndarray:
    """σ_i of eq. (23) for every agent i.

    σ ≥ (2/√w_min + 15αN/8 + α·w_max·(h+1)²·N/(2h)) · c2 · q · √(T ln(1/δ))
        / (√(Σ_{j∈N_i} 1/w_max) · ε),   q = B/(N·min_i |D_i|).
    """
    N = W.shape[0]
    pos = W[W > 0]
    w_min, w_max = pos.min(), pos.max()
    q = batch_size / (N * min_local)
    num = (2 / math.sqrt(w_min) + 15 * alpha * N / 8 + alpha * w_max * (h + 1) ** 2 * N / (2 * h)) * c2 * q
    num *= math.sqrt(rounds * math.log(1 / delta))
    n_i = (W > 0).sum(axis=1)
    return num / (np.sqrt(n_i / w_max) * epsilon)


def authors_code_sigma(epsilon: float, W: np.ndarray, batch_size: int) -> np.ndarray:
    """σ_i of the DPDL authors' released code (a heuristic, not an accountant)."""
    N = W.shape[0]
    sample_rate = batch_size * N / 5e5
    inv = np.where(W > 0, 1.0 / np.where(W > 0, W, 1.0), 0.0)
    return (96 * sample_rate / epsilon) * (1 / np.sqrt(np.diag(W)) + 1.5 * N) / np.sqrt(inv.sum(axis=1))


@register_sigma_rule("theorem1")
def _theorem1(req: SigmaRequest) -> np.ndarray:
    alpha = getattr(req.params, "alpha", None) or paper_alpha(req.topology.name)
    return theorem1_sigma(req.epsilon, req.delta, req.W, req.batch_size, int(np.min(req.local_sizes)), req.rounds,
                          alpha)


@register_sigma_rule("authors_code")
def _authors_code(req: SigmaRequest) -> np.ndarray:
    return authors_code_sigma(req.epsilon, req.W, req.batch_size)
