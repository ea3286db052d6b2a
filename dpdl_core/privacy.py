"""Noise calibration: σ (the noise multiplier, z ~ N(0, σ²C²I)) from (ε, δ).

Four rules, named in every run's config (``sigma_rule``) and recorded with its result:

``rdp`` (default)
    Google's ``dp_accounting`` RDP accountant. Agent i's batch is taken as a Poisson
    sample at rate q_i = B/|D_i| and, each round, enters k_i Gaussian messages (its
    cross-gradients and its self-gradient for DPDL, one message for DP-DPSGD, ...), each
    of sensitivity C and noise σC. k Gaussian queries of one batch are one Gaussian query
    with noise multiplier σ/√k, so the round is ``PoissonSampled(q, Gaussian(σ/√k))``,
    composed T times. (Counting k·T independent sampled steps would under-count.) σ is
    found by bisection to a relative tolerance of 1e-4, each agent for its own (q_i, k_i).
``theorem1``
    Eq. (23) of the DPDL paper. Its constants c2 (from the moments accountant) and h are
    unspecified there; defaults c2 = 1 and h = 1 (the minimiser of (h+1)²/h).
``authors_code``
    What the DPDL authors' released code does — not an accountant:
    sample_rate = B·N/(5·10⁵), σ_i = (96·sample_rate/ε)·(1/√w_ii + 1.5·N)/√(Σ_{j∈N_i} 1/w_ij).
``fixed``
    σ given in the config.
"""
from __future__ import annotations

import functools
import logging
import math
from dataclasses import dataclass

import numpy as np

__all__ = [
    "PrivacyError",
    "SigmaReport",
    "authors_code_sigma",
    "calibrate",
    "rdp_epsilon",
    "rdp_sigma",
    "theorem1_sigma",
]

# dp_accounting's default orders plus a fine grid near 1 and very large orders, which the
# small-ε / large-σ regime of the paper (ε down to 0.25 over 1000 rounds) needs.
RDP_ORDERS = tuple(
    sorted(
        set(
            [1 + x / 100.0 for x in range(1, 100)]
            + [1 + x / 10.0 for x in range(10, 100)]
            + list(range(11, 64))
            + [64, 80, 96, 128, 192, 256, 384, 512, 768, 1024, 2048, 4096]
        )
    )
)
SIGMA_MAX = 1e6


class PrivacyError(ValueError):
    """A privacy budget that cannot be met, or invalid accounting inputs."""


def rdp_epsilon(sigma: float, q: float, k: int, rounds: int, delta: float) -> float:
    """ε after ``rounds`` rounds of ``PoissonSampled(q, Gaussian(σ/√k))``.

    Parameters
    ----------
    sigma : float
        Noise multiplier of each of the k messages (0 gives ε = ∞).
    q : float
        Sampling rate B/|D_i| in (0, 1].
    k : int
        Gaussian messages computed from one batch per round.
    """
    import dp_accounting as dpa
    from dp_accounting import rdp

    if sigma <= 0:
        return math.inf
    if not 0 < q <= 1:
        raise PrivacyError(f"sampling rate q={q} must be in (0, 1]; is the batch larger than an agent's data?")
    acc = rdp.RdpAccountant(orders=RDP_ORDERS)
    event = dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(sigma / math.sqrt(k)))
    # Fractional orders near 1 do not converge at small σ; the accountant drops them and
    # warns once per order. The remaining orders bound ε correctly, so keep the log quiet.
    absl_log = logging.getLogger("absl")
    level = absl_log.level
    absl_log.setLevel(logging.ERROR)
    try:
        acc.compose(event, int(rounds))
        return float(acc.get_epsilon(delta))
    finally:
        absl_log.setLevel(level)


@functools.lru_cache(maxsize=256)
def rdp_sigma(epsilon: float, q: float, k: int, rounds: int, delta: float, rtol: float = 1e-4) -> float:
    """Smallest σ (to ``rtol``) with ``rdp_epsilon(σ, ...) <= epsilon``.

    Raises
    ------
    PrivacyError
        When even σ = 10⁶ does not reach ``epsilon`` (ε is unreachable).
    """
    if epsilon <= 0:
        raise PrivacyError(f"epsilon={epsilon} must be > 0")
    lo, hi = 1e-3, 1.0
    while rdp_epsilon(hi, q, k, rounds, delta) > epsilon:
        lo, hi = hi, hi * 2
        if hi > SIGMA_MAX:
            raise PrivacyError(
                f"epsilon={epsilon} is unreachable with delta={delta}, q={q:.4g}, k={k}, T={rounds}: "
                f"even sigma={SIGMA_MAX:g} gives more. Raise epsilon or delta, or lower rounds or q."
            )
    while (hi - lo) > rtol * hi:
        mid = 0.5 * (lo + hi)
        if rdp_epsilon(mid, q, k, rounds, delta) > epsilon:
            lo = mid
        else:
            hi = mid
    return hi


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


@dataclass(frozen=True)
class SigmaReport:
    """σ per agent and what it buys.

    Attributes
    ----------
    rule : str
    sigma : np.ndarray
        Noise multiplier of each agent's messages, shape (N,).
    epsilon_rdp : np.ndarray
        ε of each agent's messages under the RDP accountant with the σ actually used
        (∞ where σ = 0).
    q, k : np.ndarray
        Sampling rate and messages per round of each agent.
    """

    rule: str
    sigma: np.ndarray
    epsilon_rdp: np.ndarray
    q: np.ndarray
    k: np.ndarray

    def summary(self) -> dict:
        return {
            "sigma_rule": self.rule,
            "sigma_mean": float(np.mean(self.sigma)),
            "sigma_min": float(np.min(self.sigma)),
            "sigma_max": float(np.max(self.sigma)),
            "epsilon_rdp_max": float(np.max(self.epsilon_rdp)),
        }


def calibrate(
    rule: str,
    *,
    epsilon: float | None,
    delta: float,
    W: np.ndarray,
    local_sizes: np.ndarray,
    messages: np.ndarray,
    batch_size: int,
    rounds: int,
    sigma: float | None = None,
    alpha: float = 1.5,
    c2: float = 1.0,
    h: float = 1.0,
) -> SigmaReport:
    """σ for every agent under ``rule`` and the RDP ε each σ achieves.

    Parameters
    ----------
    epsilon : float or None
        None means non-private: σ = 0, unless the rule is ``fixed``.
    local_sizes : array of int
        |D_i|.
    messages : array of int
        k_i, Gaussian messages computed from agent i's batch per round.
    """
    local_sizes = np.asarray(local_sizes)
    messages = np.asarray(messages, dtype=int)
    q = np.minimum(batch_size / local_sizes, 1.0)
    N = W.shape[0]
    if rule == "fixed":
        if sigma is None:
            raise PrivacyError("sigma_rule='fixed' needs sigma")
        s = np.full(N, float(sigma))
    elif epsilon is None:
        s = np.zeros(N)
    elif rule == "rdp":
        cache: dict[tuple, float] = {}
        s = np.array([
            cache.setdefault((qi, ki), rdp_sigma(epsilon, qi, ki, rounds, delta)) for qi, ki in zip(q, messages)
        ])
    elif rule == "theorem1":
        s = theorem1_sigma(epsilon, delta, W, batch_size, int(local_sizes.min()), rounds, alpha, c2, h)
    elif rule == "authors_code":
        s = authors_code_sigma(epsilon, W, batch_size)
    else:
        raise PrivacyError(f"sigma_rule={rule!r} is not known; allowed values: ['rdp', 'theorem1', 'authors_code', 'fixed']")
    eps = np.array([rdp_epsilon(si, qi, ki, rounds, delta) for si, qi, ki in zip(s, q, messages)])
    return SigmaReport(rule, s, eps, q, messages)
