"""Privacy accounting of LEASGD (Sec. 2.3, eqs 4–5; Sec. 4 "momentum account").

Each worker's only data-dependent release per iteration is its noised gradient
g̃ = (Σ_b clip_C(g_b) + z)/B, z ~ N(0, σ₂²C²I) (eq. 4 in the Abadi form); the models it
sends to its group are post-processing of earlier releases. With its batch a Poisson
sample at rate q_i = B/|S_i|, worker i after T iterations has spent the ε of T
compositions of ``PoissonSampled(q_i, Gaussian(σ₂))`` — the moments accountant of
Abadi et al. [9], computed with the RDP accountant of ``dp_accounting``
(:func:`dpdl_core.sim.privacy.rdp_epsilon` with k = 1 release per iteration). Shards are
disjoint, so there is no composition across workers: the total ε is per worker.

Why Table 1's ε differs between LEASGD and D-PSGD at equal σ₂, q and δ: ε then depends
only on the number of noisy steps, so the algorithms stopped at different steps. We
reproduce that with early stopping on validation accuracy (:func:`early_stopping`) and
report ε at the stopping step (:func:`total_epsilon`). Stopping post hoc on the stored
history is the same as stopping during training, because later iterations never change
earlier ones.

The σ rule ``leasgd_common`` (registered here) gives every worker of a run the σ₂ of
:func:`calibrate_sigma`; with it LEASGD and D-PSGD of one (dataset, m) share one noise
scale, as in the paper.

Not accounted (the paper does not noise them): the loss values each worker sends to the
recategorized worker every kτ iterations, which depend on its data.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...sim import PrivacyError, SigmaRequest, rdp_epsilon, rdp_sigma, register_sigma_rule

__all__ = ["EarlyStop", "calibrate_sigma", "early_stopping", "gaussian_epsilon", "sampling_rates",
           "strong_composition_epsilon", "total_epsilon"]


def sampling_rates(local_sizes, batch_size: int) -> np.ndarray:
    """q_i = B/|S_i| of every worker."""
    sizes = np.asarray(local_sizes, dtype=float)
    if (sizes < batch_size).any():
        raise ValueError(f"batch_size={batch_size} exceeds the smallest shard ({int(sizes.min())} samples)")
    return batch_size / sizes


def total_epsilon(sigma: float, local_sizes, batch_size: int, steps: int, delta: float) -> np.ndarray:
    """Each worker's total ε after ``steps`` iterations (moments/RDP accountant).

    Parameters
    ----------
    sigma : float
        σ₂, the noise multiplier (noise std σ₂C on the clipped sum); 0 gives ∞.
    local_sizes : (m,) array
        |S_i|.
    batch_size : int
    steps : int
        Iterations run (the stopping step).
    delta : float

    Returns
    -------
    (m,) array of ε_i.
    """
    q = sampling_rates(local_sizes, batch_size)
    cache = {r: rdp_epsilon(sigma, float(r), 1, int(steps), delta) for r in np.unique(q)}
    return np.array([cache[r] for r in q])


def gaussian_epsilon(sigma: float, delta: float) -> float:
    """The smallest ε with which one Gaussian mechanism of noise multiplier ``sigma``
    (sensitivity 1) is (ε, ``delta``)-DP: the exact privacy profile of Balle and Wang
    (2018), δ(ε) = Φ(1/(2σ) − εσ) − e^ε Φ(−1/(2σ) − εσ), solved for ε. Tighter than the
    classical σ = √(2 ln(1.25/δ))/ε, which holds only for ε < 1."""
    from scipy.optimize import brentq
    from scipy.stats import norm

    def profile(e: float) -> float:
        return norm.cdf(0.5 / sigma - e * sigma) - np.exp(e) * norm.cdf(-0.5 / sigma - e * sigma) - delta

    if profile(0.0) <= 0:
        return 0.0
    hi = 1.0
    while profile(hi) > 0:
        hi *= 2
    return float(brentq(profile, 0.0, hi, xtol=1e-12))


def strong_composition_epsilon(sigma: float, q: float, steps: int, delta: float, splits: int = 99) -> float:
    """Total ε of ``steps`` Poisson-subsampled Gaussian steps (rate ``q``, noise multiplier
    ``sigma``) at total ``delta`` by the strong (advanced) composition theorem of Dwork,
    Rothblum and Vadhan (LEASGD's [10]): each step (ε₀, δ₀)-DP by :func:`gaussian_epsilon`,
    amplified by sampling to ε₁ = ln(1 + q(e^ε₀ − 1)), δ₁ = qδ₀; T of them are
    (√(2T ln(1/δ')) ε₁ + T ε₁(e^ε₁ − 1), Tδ₁ + δ')-DP. ``delta`` is split between Tδ₁ and δ'
    at ``splits`` fractions, and the smallest ε is returned (the theorem at its best)."""
    best = np.inf
    for f in np.linspace(0.01, 0.99, splits):
        d_prime, d_step = f * delta, (1 - f) * delta / (steps * q)
        e1 = float(np.log1p(q * np.expm1(gaussian_epsilon(sigma, d_step))))
        best = min(best, np.sqrt(2 * steps * np.log(1 / d_prime)) * e1 + steps * e1 * np.expm1(e1))
    return float(best)


def calibrate_sigma(target_epsilon: float, local_sizes, batch_size: int, max_steps: int, delta: float) -> float:
    """σ₂ with every worker's ε(T_max) ≤ ``target_epsilon`` (spec §4.1).

    One σ₂ for all workers (and, in Table 1, for both algorithms: "the adding noise scales
    are the same", Sec. 4), set by the largest sampling rate, i.e. the smallest shard.
    """
    q = float(sampling_rates(local_sizes, batch_size).max())
    return rdp_sigma(float(target_epsilon), q, 1, int(max_steps), float(delta))


@dataclass(frozen=True)
class EarlyStop:
    """Outcome of early stopping.

    Attributes
    ----------
    stop_step : int
        The iteration at which training stops: ``patience`` iterations after the best
        validation accuracy, or the last iteration when that never happens. ε is charged
        up to here (every iteration that ran released a noised gradient).
    best_step : int
        The evaluation round of the best validation accuracy up to ``stop_step``; its
        models are the ones reported (restore-best).
    best_value : float
    stopped : bool
        True when patience ran out before the last iteration.
    """

    stop_step: int
    best_step: int
    best_value: float
    stopped: bool


def early_stopping(steps, values, patience: int, last_step: int) -> EarlyStop:
    """Stop when validation accuracy has not improved for ``patience`` iterations.

    Parameters
    ----------
    steps : (K,) ints
        Evaluation rounds, increasing.
    values : (K,) floats
        Validation accuracy at each (a strict increase counts as an improvement).
    patience : int
        Iterations without improvement before stopping (spec: 200).
    last_step : int
        T_max, the iteration budget.

    Returns
    -------
    EarlyStop
    """
    if patience < 1:
        raise ValueError(f"patience={patience!r} must be an integer >= 1")
    steps = np.asarray(steps)
    values = np.asarray(values, dtype=float)
    if len(steps) == 0 or len(steps) != len(values) or (np.diff(steps) <= 0).any():
        raise ValueError("steps must be non-empty, increasing and as long as values")
    best_k = 0
    for k in range(1, len(steps)):
        if values[k] > values[best_k]:
            best_k = k
        elif steps[k] - steps[best_k] >= patience:
            return EarlyStop(int(steps[k]), int(steps[best_k]), float(values[best_k]), True)
    return EarlyStop(int(last_step), int(steps[best_k]), float(values[best_k]), False)


@register_sigma_rule("leasgd_common")
def _common_sigma(req: SigmaRequest) -> np.ndarray:
    """One σ₂ for every worker: ε(T) ≤ target for the smallest shard (:func:`calibrate_sigma`)."""
    if (np.asarray(req.messages) != 1).any():
        raise PrivacyError("sigma_rule='leasgd_common' accounts one noised gradient per worker per round (k = 1)")
    sigma = calibrate_sigma(req.epsilon, req.local_sizes, req.batch_size, req.rounds, req.delta)
    return np.full(len(req.local_sizes), sigma)
