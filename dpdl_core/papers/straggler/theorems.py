"""Utility (Theorem 1) and privacy (Theorems 2 and 3) bounds of the skipping scheme.

All functions are analytic and take the paper's constants from :class:`PaperParams`
(Sec. VI-A: n = 10, ε = 1, δ = 1e-6, δ' = 1/10, d = 8, d_W = 10, k = 1, ζ = 3/100).

Theorem 3 is provided twice: :func:`thm3_as_printed` implements the formula exactly as
printed in the paper; :func:`thm3_diagnostic` is *our* guess at an intended form (spec
§5.2), labelled as such wherever it is shown. See ``docs/straggler.md``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import signal, stats

from ...sim import check_int

__all__ = [
    "SCHEMES",
    "PaperParams",
    "h_tilde",
    "lambda1",
    "thm1_bound",
    "thm1_bound_bruteforce",
    "thm1_e_h",
    "thm2_epsilon",
    "thm3_as_printed",
    "thm3_diagnostic",
]

SCHEMES = ("ss_ring", "ss_rand_ring")


@dataclass(frozen=True)
class PaperParams:
    """Constants of Theorems 1–3 (defaults: Sec. VI-A of the paper).

    Attributes
    ----------
    n : int
        Nodes on the ring.
    epsilon, delta : float
        (ε, δ) of one noisy update (footnote 3); they fix σ.
    delta_prime : float
        δ' of the Chernoff bound on a node's number of updates (Thms 2, 3).
    d : int
        Model dimension (the paper's d = 8).
    d_W : float
        Diameter of W (W is the ℓ2 ball of radius d_W/2).
    k : float
        Lipschitz constant of every f_v.
    zeta : float
        Learning-rate parameter: η = ζ/√c (Algorithm 1, line 6).
    """

    n: int = 10
    epsilon: float = 1.0
    delta: float = 1e-6
    delta_prime: float = 0.1
    d: int = 8
    d_W: float = 10.0
    k: float = 1.0
    zeta: float = 0.03

    def __post_init__(self):
        check_int(self, "n", 2)
        check_int(self, "d", 1)
        for name in ("epsilon", "d_W", "k", "zeta"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name}={getattr(self, name)!r} must be > 0")
        for name in ("delta", "delta_prime"):
            if not 0 < getattr(self, name) < 1:
                raise ValueError(f"{name}={getattr(self, name)!r} must be in (0, 1)")

    @property
    def sigma(self) -> float:
        """Gaussian-mechanism noise, σ = k√(8 log(1.25/δ))/ε (footnote 3; 10.5976 in Sec. VI-A)."""
        return self.k * math.sqrt(8 * math.log(1.25 / self.delta)) / self.epsilon

    @property
    def radius(self) -> float:
        """Radius d_W/2 of the ℓ2 ball W (centre 0)."""
        return self.d_W / 2


def _check_p(p: float, scheme: str) -> None:
    if scheme == "ss_ring" and not 0 < p < 1:
        raise ValueError(f"p={p!r} must be in (0, 1) for ss_ring (Theorem 1 needs |λ₁| < 1)")
    if not 0 <= p < 1:
        raise ValueError(f"p={p!r} must be in [0, 1)")


def lambda1(p: float, scheme: str, n: int) -> float:
    """|λ₁| of Theorem 1: (1−p)/√((1+p²) − 2p cos(2π/n)) for SS-Ring, 0 for SS-Rand-Ring."""
    if scheme not in SCHEMES:
        raise ValueError(f"scheme={scheme!r} is not allowed; allowed values: {list(SCHEMES)}")
    _check_p(p, scheme)
    if scheme == "ss_rand_ring":
        return 0.0
    return (1 - p) / math.sqrt((1 + p * p) - 2 * p * math.cos(2 * math.pi / n))


def _geom(lam: float, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Σ_{i=a}^{b} λ^i = λ^a(1 − λ^{b−a+1})/(1 − λ) for 0 ≤ λ < 1 and a ≥ 1."""
    if lam == 0.0:
        return np.zeros(np.broadcast(a, b).shape)
    log_lam = math.log(lam)
    # expm1/log1p keep the ratio accurate when λ is within 1e-5 of 1 (SS-Ring, p = 1e-4).
    return np.exp(a * log_lam) * -np.expm1((b - a + 1) * log_lam) / -math.expm1(log_lam)


def thm1_e_h(h_max: int, p: float, scheme: str, params: PaperParams = PaperParams()) -> np.ndarray:
    """e_h of Theorem 1 for h = 0 … h_max (e₀ = d_W k).

    e_h = (d_W² + ζ²(k² + dσ²))(2 + log(h+1))/(ζ√(h+1))
          + d_W k √n [ (1/(h+1)) Σ_{i=1}^{h+1} |λ₁|^i + Σ_{j=1}^{h} 1/(j(j+1)) Σ_{i=h+1−j}^{h+1} |λ₁|^i ].

    The inner geometric sums are closed forms; the sum over j is
    Σ_j w_j(λ^{h+1−j} − λ^{h+2})/(1−λ) with w_j = 1/(j(j+1)), whose first part
    U_h = Σ_{j≤h} λ^{h+1−j} w_j obeys U_{h+1} = λ(U_h + w_{h+1}), a first-order linear
    recursion run by ``scipy.signal.lfilter`` in O(h_max).
    """
    lam = lambda1(p, scheme, params.n)
    h = np.arange(h_max + 1, dtype=float)
    P = params
    e = (P.d_W**2 + P.zeta**2 * (P.k**2 + P.d * P.sigma**2)) * (2 + np.log(h + 1)) / (P.zeta * np.sqrt(h + 1))
    if lam > 0 and h_max >= 1:
        hh = h[1:]
        first = _geom(lam, np.ones_like(hh), hh + 1) / (hh + 1)
        w = 1.0 / (hh * (hh + 1))
        U = signal.lfilter([lam], [1.0, -lam], w)  # U[h−1] = Σ_{j=1}^{h} λ^{h+1−j} w_j
        second = (U - np.exp((hh + 2) * math.log(lam)) * (1 - 1 / (hh + 1))) / -math.expm1(math.log(lam))
        e[1:] += P.d_W * P.k * math.sqrt(P.n) * (first + second)
    e[0] = P.d_W * P.k
    return e


def thm1_bound(h_max, p: float, scheme: str, params: PaperParams = PaperParams()) -> np.ndarray | float:
    """Theorem 1: E[f(τ_{h_max}) − f*] ≤ Σ_{h=0}^{h_max} C(h_max, h)(1−p)^h p^{h_max−h} e_h.

    Parameters
    ----------
    h_max : int or array of int
        Hops; one call evaluates many h_max from a single e_h table.
    p : float
        Skipping probability; SS-Ring needs 0 < p < 1, SS-Rand-Ring 0 ≤ p < 1.
    scheme : {"ss_ring", "ss_rand_ring"}
    """
    hm = np.atleast_1d(np.asarray(h_max, dtype=np.int64))
    if (hm < 1).any():
        raise ValueError(f"h_max={h_max!r} must be integers >= 1")
    e = thm1_e_h(int(hm.max()), p, scheme, params)
    out = np.empty(len(hm))
    for i, m in enumerate(hm):
        # The binomial weights underflow to 0 far from the mean: the full sum is exact and cheap.
        out[i] = float(stats.binom.pmf(np.arange(m + 1), m, 1 - p) @ e[: m + 1])
    return float(out[0]) if np.ndim(h_max) == 0 else out


def thm1_bound_bruteforce(h_max: int, p: float, scheme: str, params: PaperParams = PaperParams()) -> float:
    """Theorem 1 summed term by term (every geometric sum explicit); for tests, small h_max."""
    lam = lambda1(p, scheme, params.n)
    P = params
    total = 0.0
    for h in range(h_max + 1):
        if h == 0:
            e = P.d_W * P.k
        else:
            e = (P.d_W**2 + P.zeta**2 * (P.k**2 + P.d * P.sigma**2)) * (2 + math.log(h + 1)) \
                / (P.zeta * math.sqrt(h + 1))
            s1 = sum(lam**i for i in range(1, h + 2)) / (h + 1)
            s2 = sum(sum(lam**i for i in range(h + 1 - j, h + 2)) / (j * (j + 1)) for j in range(1, h + 1))
            e += P.d_W * P.k * math.sqrt(P.n) * (s1 + s2)
        total += math.comb(h_max, h) * (1 - p) ** h * p ** (h_max - h) * e
    return total


def h_tilde(h_max, p: float, params: PaperParams = PaperParams()) -> np.ndarray | int:
    """h̃ = ⌈h_max(1−p)/n + √(3 h_max(1−p)/n · log(1/δ'))⌉ (Thms 2, 3): a Chernoff bound on the
    updates of one node, exceeded with probability ≤ δ'. The bracket is read as a ceiling."""
    m = np.asarray(h_max, dtype=float) * (1 - p) / params.n
    out = np.ceil(m + np.sqrt(3 * m * math.log(1 / params.delta_prime))).astype(np.int64)
    return int(out) if out.ndim == 0 else out


def thm2_epsilon(h_max, p: float, params: PaperParams = PaperParams()) -> np.ndarray | float:
    """Theorem 2 (SS-Ring): ε_ss = ε√(h̃ log(1/δ))/√(log(1.25/δ)) + ε²h̃/(4 log(1.25/δ)).

    The guarantee is (ε_ss, δ + δ')-NDP for 0 ≤ p < 1.
    """
    if not 0 <= p < 1:
        raise ValueError(f"p={p!r} must be in [0, 1)")
    P = params
    ht = np.asarray(h_tilde(h_max, p, P), dtype=float)
    L125 = math.log(1.25 / P.delta)
    out = P.epsilon * np.sqrt(ht * math.log(1 / P.delta)) / math.sqrt(L125) + P.epsilon**2 * ht / (4 * L125)
    return float(out) if out.ndim == 0 else out


def _thm3(h_max, p: float, params: PaperParams, diagnostic: bool) -> np.ndarray | float:
    if not 0 <= p < 1:
        raise ValueError(f"p={p!r} must be in [0, 1)")
    P = params
    L1, L125 = math.log(1 / P.delta), math.log(1.25 / P.delta)
    hm = np.atleast_1d(np.asarray(h_max))
    # (d, h) pairs of the inner double sum; d here is the hop distance, not the dimension.
    dd, hh = np.array([(d, h) for d in range(1, P.n) for h in range(1, d + 1)], dtype=float).T
    weight = hh * np.array([math.comb(int(d), int(h)) for d, h in zip(dd, hh)]) * p ** (dd - hh) * (1 - p) ** hh
    out = np.empty(len(hm))
    for i, ht in enumerate(np.atleast_1d(h_tilde(hm, p, P))):
        r = np.arange(int(ht), dtype=float)[:, None]
        if diagnostic:
            x = r * P.n * (1 - p)
            gamma = 4 * (1 + x) * (np.sqrt(1 + x + hh) - np.sqrt(1 + x)) ** 2
        else:
            gamma = 4 * (1 + r * hh) * (np.sqrt(1 + r * hh + ht) - np.sqrt(1 + r * hh)) ** 2
        a = float((weight / gamma).sum()) / (P.n - 1)
        alpha = min(
            math.sqrt(2 * L1 * L125) / (P.epsilon * math.sqrt(a)) + 1,
            (1 + math.sqrt(16 * L125 / P.epsilon**2 + 1)) / 2,
        )
        out[i] = P.epsilon**2 * a * alpha / (2 * L125) + L1 / (alpha - 1)
    return float(out[0]) if np.ndim(h_max) == 0 else out


def thm3_as_printed(h_max, p: float, params: PaperParams = PaperParams()) -> np.ndarray | float:
    """Theorem 3 (SS-Rand-Ring) exactly as printed in the paper.

    ε_ss = ε²aα/(2 log(1.25/δ)) + log(1/δ)/(α − 1), with
    a = (1/(n−1)) Σ_{r=0}^{h̃−1} Σ_{d=1}^{n−1} Σ_{h=1}^{d} h C(d,h) p^{d−h}(1−p)^h / γ_{r,h},
    γ_{r,h} = 4(1 + r·h)(√(1 + r·h + h̃) − √(1 + r·h))²,
    α = min(√(2 log(1/δ) log(1.25/δ))/(ε√a) + 1, (1 + √(16 log(1.25/δ)/ε² + 1))/2).

    With the Sec. VI-A constants α sits at its cap 8.0103 and ε_ss *decreases* with h_max
    (2.52 at h_max = 10, 1.97 at 1e5), which contradicts the paper's own reading of
    Fig. 2 (spec §5.2); kept verbatim for the record.
    """
    return _thm3(h_max, p, params, diagnostic=False)


def thm3_diagnostic(h_max, p: float, params: PaperParams = PaperParams()) -> np.ndarray | float:
    """A labelled diagnostic variant of Theorem 3 — NOT the paper's formula (spec §5.2).

    Same as :func:`thm3_as_printed` except γ_{r,h} = 4(1 + x_r)(√(1 + x_r + h) − √(1 + x_r))²
    with x_r = r·n(1−p): the amplification-by-iteration factor for a message that has
    travelled h updates after x_r earlier updates of the token. It grows with h_max as a
    composition bound should (2.47, 3.84, 10.4, 38.1 at h_max = 10 … 1e4, p = 1e-4).
    A guess to make the figure's trend inspectable, not a proven bound.
    """
    return _thm3(h_max, p, params, diagnostic=True)
