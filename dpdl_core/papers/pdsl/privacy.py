"""PDSL's noise levels: Theorem 1 (eq 27) and the per-message Gaussian mechanism.

Both return the absolute noise std σ of one message (z ~ N(0, σ²I_d)); the package's
noise multiplier is σ/C.

Theorem 1 is per round (ε, δ ∈ (0, 1), no composition over rounds) and depends on
φ̂_min = min_{j,t} φ̂_{i,j}/Σ_k φ̂_{i,k}. Eq (19) gives the worst player of every game
weight 0, so with Algorithm 1 as written φ̂_min = 0 and the bound is σ = ∞:
:func:`theorem1_sigma` returns ``math.inf`` in that case and :func:`theorem1_phi_min`
explains why. A floor f on the shares (``shapley_weights(..., floor=f)``) guarantees
φ̂_min ≥ f/n_max.

Registered σ rules (noise multipliers σ/C, the same for every agent):

``per_message``
    σ_b/C = 2√(2 ln(1.25/δ))/ε for every message, the spec's rule for the baselines (§3).
``pdsl_theorem1``
    Eq (27)/C with φ̂_min = f/n_max from PDSL's ``algo.floor``; a :class:`PrivacyError`
    saying σ = ∞ when f = 0 (Algorithm 1 as written).
``pdsl_code_base``
    The convention of the same group's code base (DisAIGroup/DPDL, whose argument parser is
    titled 'PPDSL'): its helper ``add_dp`` clips the whole vector to C and adds noise of std
    2·4.2·C/(8·B·ε) per coordinate, i.e. the multiplier 1.05/(B·ε). It is not on DPDL's
    path in that code, so it is evidence of a convention, not of what PDSL ran; about
    2,300 times less noise than σ_b at MNIST's ε 0.3, C 2. One reading of the best-faith
    search (:mod:`.search`), labelled with the accountant ε it buys.

Whatever the rule, each run stores the RDP accountant's ε over all T rounds for the σ
that ran (:func:`dpdl_core.sim.privacy.calibrate`), with PDSL's ``noise_scale``.
"""
from __future__ import annotations

import math

import numpy as np

from ...sim import PrivacyError, SigmaRequest, register_sigma_rule

__all__ = ["code_base_multiplier", "gaussian_factor", "per_message_sigma", "theorem1_phi_min", "theorem1_sigma"]


def gaussian_factor(delta: float) -> float:
    """√(2 ln(1.25/δ)), the classic Gaussian mechanism's factor (Dwork & Roth, Thm A.1)."""
    if not 0 < delta < 1:
        raise ValueError(f"delta={delta!r} must be in (0, 1)")
    return math.sqrt(2 * math.log(1.25 / delta))


def per_message_sigma(epsilon: float, delta: float, clip: float) -> float:
    """σ_b = 2C·√(2 ln(1.25/δ))/ε: one release of a vector clipped to norm C (replace-one
    sensitivity 2C) is (ε, δ)-DP.

    The classic proof needs ε < 1; at ε ≥ 1 (CIFAR-10's ε = 1) the formula is used as the
    paper's baselines use it, and the accountant ε stored with each run is the guarantee.
    """
    if not epsilon > 0:
        raise ValueError(f"epsilon={epsilon!r} must be > 0")
    if not clip > 0:
        raise ValueError(f"clip={clip!r} must be > 0")
    return 2 * clip * gaussian_factor(delta) / epsilon


def theorem1_phi_min(counts: np.ndarray, floor: float) -> float:
    """The smallest share φ̂_{i,j}/Σ_k φ̂_{i,k} that Algorithm 1 can produce: f/max_i n_i.

    With f = 0 (eq 20 exactly) this is 0: eq (19) maps the worst player of every game to
    0, so Theorem 1's σ is infinite. φ̂_min is also data-dependent and unknowable before a
    run; a floor is the only way to bound it in advance.
    """
    if not 0.0 <= floor <= 1.0:
        raise ValueError(f"floor={floor!r} must be in [0, 1]")
    return floor / int(np.max(counts))


def theorem1_sigma(epsilon: float, delta: float, W: np.ndarray, clip: float, phi_min: float) -> float:
    """Eq (27): σ ≥ max_i 2C(1/ω_min + Σ_{j∈M_i} 1/ω_ij)·√(2 ln(1.25/δ))
    / (φ̂_min·ε·√(Σ_{j∈M_i} ω_ij^{-2})).

    Parameters
    ----------
    epsilon, delta : float
        Per-round budget; the theorem assumes both in (0, 1).
    W : (N, N)
        Mixing matrix; M_i = {j : ω_ij > 0}, ω_min over all positive entries.
    clip : float
        C.
    phi_min : float
        φ̂_min (see :func:`theorem1_phi_min`).

    Returns
    -------
    float
        σ (absolute std); ``math.inf`` when ``phi_min == 0``, which is Algorithm 1 as
        written.

    Raises
    ------
    ValueError
        For ε or δ outside (0, 1), where the theorem makes no claim.
    """
    if not 0 < epsilon < 1:
        raise ValueError(f"epsilon={epsilon!r}: Theorem 1 holds only for epsilon in (0, 1)")
    if phi_min < 0:
        raise ValueError(f"phi_min={phi_min!r} must be >= 0")
    if phi_min == 0:
        return math.inf
    W = np.asarray(W, dtype=float)
    pos = W > 0
    inv = np.where(pos, 1.0 / np.where(pos, W, 1.0), 0.0)
    w_min = W[pos].min()
    num = 2 * clip * (1 / w_min + inv.sum(1)) * gaussian_factor(delta)
    den = phi_min * epsilon * np.sqrt((inv**2).sum(1))
    return float((num / den).max())


@register_sigma_rule("per_message")
def _per_message(req: SigmaRequest) -> np.ndarray:
    # σ_b is proportional to C, so the multiplier σ_b/C is σ_b at C = 1.
    return np.full(req.W.shape[0], per_message_sigma(req.epsilon, req.delta, 1.0))


def code_base_multiplier(epsilon: float, batch_size: int) -> float:
    """The noise multiplier of the group's ``add_dp`` helper: std 2·4.2·C/(8·B·ε) over C."""
    if not epsilon > 0:
        raise ValueError(f"epsilon={epsilon!r} must be > 0")
    return 2 * 4.2 / (8 * batch_size * epsilon)


@register_sigma_rule("pdsl_code_base")
def _code_base(req: SigmaRequest) -> np.ndarray:
    return np.full(req.W.shape[0], code_base_multiplier(req.epsilon, req.batch_size))


@register_sigma_rule("pdsl_theorem1")
def _theorem1(req: SigmaRequest) -> np.ndarray:
    floor = getattr(req.params, "floor", None)
    if floor is None:
        raise PrivacyError("sigma_rule='pdsl_theorem1' bounds PDSL's own mechanism (its φ̂_min); "
                           "run it with algorithm='pdsl'")
    counts = (np.asarray(req.W) > 0).sum(1)
    phi_min = theorem1_phi_min(counts, floor)
    if phi_min == 0:
        raise PrivacyError(
            "PDSL Theorem 1 (eq 27) gives sigma = infinity: with algo.floor = 0, eq (19) gives the worst "
            "player of every game weight 0, so phi_min = 0. Set algo.floor > 0 (the spec's 0.5 gives "
            "phi_min = 1/(2n)) or use sigma_rule='per_message'."
        )
    try:
        sigma = theorem1_sigma(req.epsilon, req.delta, req.W, 1.0, phi_min)
    except ValueError as err:
        raise PrivacyError(str(err)) from err
    return np.full(req.W.shape[0], sigma)
