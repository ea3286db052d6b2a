"""Noise calibration: σ (the noise multiplier, z ~ N(0, σ²C²I)) from (ε, δ), and the ε an
accountant gives for the mechanism that ran.

σ rules are a registry (:func:`register_sigma_rule`); a config names its rule in
``sigma_rule`` and every stored run records it. The generic rules:

``rdp`` (default)
    Google's ``dp_accounting`` RDP accountant. Agent i's batch is taken as a Poisson
    sample at rate q_i = B/|D_i| and, each round, enters k_i Gaussian releases (its
    cross-gradients and its self-gradient for DPDL, one release for DP-DPSGD, ...), each
    with noise multiplier σ·s (s: the algorithm's ``noise_scale``, noise std over the
    sensitivity of one release; 1 for a per-sample clipped sum with noise σC). k Gaussian
    queries of one batch are one Gaussian query with multiplier σs/√k, so the round is
    ``PoissonSampled(q, Gaussian(σs/√k))``, composed T times. (Counting k·T independent
    sampled steps would under-count.) σ is found by bisection to a relative tolerance of
    1e-4, each agent for its own (q_i, k_i).
``fixed``
    σ given in the config.

Papers add their own rules (the DPDL paper's ``theorem1`` and ``authors_code`` live in
:mod:`dpdl_core.papers.dpdl.privacy`). Whatever the rule, :func:`calibrate` reports the RDP
ε each agent's σ really buys.
"""
from __future__ import annotations

import functools
import logging
import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from .registry import load_plugins, named_registry

__all__ = [
    "PrivacyError",
    "SIGMA_RULES",
    "SigmaReport",
    "SigmaRequest",
    "calibrate",
    "rdp_epsilon",
    "rdp_sigma",
    "register_sigma_rule",
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
    noise_scale : float
        The mechanism's noise std over its sensitivity, in units of σ.
    """

    rule: str
    sigma: np.ndarray
    epsilon_rdp: np.ndarray
    q: np.ndarray
    k: np.ndarray
    noise_scale: float = 1.0

    def summary(self) -> dict:
        return {
            "sigma_rule": self.rule,
            "sigma_mean": float(np.mean(self.sigma)),
            "sigma_min": float(np.min(self.sigma)),
            "sigma_max": float(np.max(self.sigma)),
            "epsilon_rdp_max": float(np.max(self.epsilon_rdp)),
        }


@dataclass(frozen=True)
class SigmaRequest:
    """What a σ rule may look at.

    Attributes
    ----------
    epsilon : float
        The privacy budget (never ``None`` here: non-private runs get σ = 0 before any rule).
    local_sizes, messages : np.ndarray
        |D_i| and k_i (Gaussian releases from agent i's batch per round).
    params : dataclass
        The algorithm's options; ``topology`` the run's graph.
    """

    epsilon: float | None
    delta: float
    W: np.ndarray
    local_sizes: np.ndarray
    messages: np.ndarray
    batch_size: int
    rounds: int
    sigma: float | None = None
    params: Any = None
    topology: Any = None

    @property
    def q(self) -> np.ndarray:
        """Sampling rate B/|D_i| of every agent (at most 1)."""
        return np.minimum(self.batch_size / np.asarray(self.local_sizes), 1.0)


SIGMA_RULES: dict[str, Callable[[SigmaRequest], np.ndarray]] = {}


register_sigma_rule = named_registry(SIGMA_RULES, "sigma rules")
"""``@register_sigma_rule("name")`` on ``rule(req: SigmaRequest) -> σ (N,)``."""


@register_sigma_rule("fixed")
def _fixed(req: SigmaRequest) -> np.ndarray:
    if req.sigma is None:
        raise PrivacyError("sigma_rule='fixed' needs sigma")
    return np.full(req.W.shape[0], float(req.sigma))


@register_sigma_rule("rdp")
def _rdp(req: SigmaRequest, noise_scale: float = 1.0) -> np.ndarray:
    cache: dict[tuple, float] = {}
    return np.array([
        cache.setdefault((qi, ki), rdp_sigma(req.epsilon, qi, ki, req.rounds, req.delta) / noise_scale)
        for qi, ki in zip(req.q, req.messages)
    ])


def calibrate(rule: str, req: SigmaRequest, noise_scale: float = 1.0) -> SigmaReport:
    """σ for every agent under ``rule`` and the RDP ε each σ achieves.

    Parameters
    ----------
    req : SigmaRequest
        ``req.epsilon = None`` means non-private: σ = 0, unless the rule is ``fixed``.
    noise_scale : float
        The algorithm's noise std over the sensitivity of one release, in units of σ; the
        accountant sees the multiplier σ·noise_scale (and ``rdp`` calibrates for it).
    """
    load_plugins()  # papers register their rules
    if rule not in SIGMA_RULES:
        raise PrivacyError(f"sigma_rule={rule!r} is not known; allowed values: {sorted(SIGMA_RULES)}")
    messages = np.asarray(req.messages, dtype=int)
    q = req.q
    if rule == "fixed":
        s = SIGMA_RULES[rule](req)
    elif req.epsilon is None:
        s = np.zeros(req.W.shape[0])
    elif rule == "rdp":
        s = _rdp(req, noise_scale)
    else:
        s = np.asarray(SIGMA_RULES[rule](req), dtype=float)
    eps = np.array([rdp_epsilon(si * noise_scale, qi, ki, req.rounds, req.delta) for si, qi, ki in zip(s, q, messages)])
    return SigmaReport(rule, s, eps, q, messages, noise_scale)
