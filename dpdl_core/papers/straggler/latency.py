"""Computation-latency models and the latency lemmas (Lemmas 1 and 2).

The per-visit computation time T of a node is i.i.d. (footnote 1 of the paper) and the
communication time χ is constant (Sec. II-C). Sec. VI-A uses three models for T:
exponential with mean 1, gamma with shape 1/4 and scale 1, and Pareto type II (Lomax)
with shape 3 and scale 2, all with χ = 1/100. Distributions come from ``scipy.stats``.

With skipping threshold t_ss, one hop of Algorithm 1 costs χ + T if T ≤ t_ss (the node
updates the token) and χ + t_ss otherwise (line 12), i.e. χ + min(T, t_ss).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from scipy import integrate, optimize, special, stats

from ...sim import check_choice

__all__ = ["LATENCY_MODELS", "LatencyModel", "paper_models"]

LATENCY_MODELS = ("exponential", "gamma", "lomax")
PRETTY = {
    "exponential": "exponential (mean 1)",
    "gamma": "gamma (shape 1/4, scale 1)",
    "lomax": "Pareto II (shape 3, scale 2)",
}


@dataclass(frozen=True)
class LatencyModel:
    """A computation-latency distribution with the communication time χ (Sec. II-C, VI-A).

    Attributes
    ----------
    name : {"exponential", "gamma", "lomax"}
    shape : float
        Gamma shape a or Lomax shape c; ignored for the exponential.
    scale : float
        Scale θ (exponential: the mean).
    chi : float
        Constant communication time per hop.
    """

    name: str
    shape: float = 1.0
    scale: float = 1.0
    chi: float = 0.01

    def __post_init__(self):
        check_choice(self, "name", LATENCY_MODELS)
        for field in ("shape", "scale"):
            if not getattr(self, field) > 0:
                raise ValueError(f"{field}={getattr(self, field)!r} must be > 0")
        if not self.chi >= 0:
            raise ValueError(f"chi={self.chi!r} must be >= 0")
        if self.name == "lomax" and not self.shape > 1:
            raise ValueError(f"shape={self.shape!r} must be > 1 for lomax (finite mean)")

    @property
    def label(self) -> str:
        """Figure label, e.g. ``gamma (shape 1/4, scale 1)`` for the paper's models."""
        if self in paper_models().values():
            return PRETTY[self.name]
        return f"{self.name} (shape {self.shape:g}, scale {self.scale:g})"

    @cached_property
    def dist(self):
        """The frozen ``scipy.stats`` distribution of T."""
        if self.name == "exponential":
            return stats.expon(scale=self.scale)
        if self.name == "gamma":
            return stats.gamma(a=self.shape, scale=self.scale)
        return stats.lomax(c=self.shape, scale=self.scale)

    def t_ss_for_p(self, p) -> np.ndarray | float:
        """Threshold with skipping probability p = Pr[T > t_ss] (Sec. III-A); p = 0 gives ∞."""
        p = np.asarray(p, dtype=float)
        t = np.where(p > 0, self.dist.isf(np.where(p > 0, p, 0.5)), np.inf)
        return float(t) if t.ndim == 0 else t

    def p_for_t_ss(self, t_ss) -> np.ndarray | float:
        """Skipping probability p = 1 − Φ_T(t_ss)."""
        return self.dist.sf(t_ss)

    def expected_min(self, t_ss) -> np.ndarray | float:
        """E[min(T, t_ss)] = ∫₀^{t_ss} t dΦ_T(t) + t_ss(1 − Φ_T(t_ss)), in closed form.

        Exponential: θ(1 − e^{−t/θ}); gamma: aθ·P(a+1, t/θ) + t(1 − P(a, t/θ)) with P the
        regularized lower incomplete gamma function; Lomax: θ/(c−1)·(1 − (1 + t/θ)^{−(c−1)}).
        ``t_ss = inf`` gives E[T].
        """
        t = np.asarray(t_ss, dtype=float)
        s = self.scale
        if self.name == "exponential":
            out = -s * np.expm1(-t / s)
        elif self.name == "gamma":
            a = self.shape
            tail = np.where(np.isinf(t), 0.0, np.nan_to_num(t, posinf=0.0) * special.gammaincc(a, t / s))
            out = a * s * special.gammainc(a + 1, t / s) + tail
        else:
            c = self.shape
            out = s / (c - 1) * -np.expm1(-(c - 1) * np.log1p(t / s))
        return float(out) if out.ndim == 0 else out

    def expected_min_numeric(self, t_ss: float) -> float:
        """E[min(T, t_ss)] = ∫₀^{t_ss} Pr[T > t] dt by quadrature (a check of :meth:`expected_min`)."""
        if np.isinf(t_ss):
            return float(self.dist.mean())
        # The gamma density with shape < 1 is singular at 0; the survival function is not.
        return float(integrate.quad(self.dist.sf, 0.0, t_ss, limit=200, epsabs=1e-13, epsrel=1e-11)[0])

    def latency_per_hop(self, t_ss) -> np.ndarray | float:
        """Expected latency of one hop, χ + E[min(T, t_ss)] (Lemma 1 divided by h_max)."""
        return self.chi + self.expected_min(t_ss)

    def expected_latency(self, h_max, t_ss) -> np.ndarray | float:
        """Lemma 1: E[ℓ] = h_max(χ + ∫₀^{t_ss} t dΦ_T + t_ss(1 − Φ_T(t_ss)))."""
        return np.asarray(h_max, dtype=float) * self.latency_per_hop(t_ss)

    def time_per_update(self, t_ss) -> np.ndarray | float:
        """Lemma 2's objective: expected time between two token updates, (χ + E[min(T, t_ss)])/Φ_T(t_ss).

        The number of hops between updates is geometric with success probability 1 − p
        (footnote 4), hence the division by Φ_T(t_ss) = 1 − p.
        """
        return self.latency_per_hop(t_ss) / self.dist.cdf(t_ss)

    def optimal_t_ss(self, grid: int = 4001) -> tuple[float, float, float]:
        """Lemma 2: t_ss* = argmin (χ + E[min(T, t_ss)])/Φ_T(t_ss).

        A log-spaced grid over the quantiles 1e-9 … 1 − 1e-12 locates the basin, then Brent's
        method refines it in log t. When the minimum is at the top of the range (the objective
        still decreasing, as for the exponential), the infimum is the limit t_ss → ∞, i.e. no
        skipping, and ``inf`` is returned.

        Returns
        -------
        (t_ss, p, time_per_update)
        """
        lo, hi = math.log(self.dist.ppf(1e-9)), math.log(self.dist.isf(1e-12))
        u = np.linspace(lo, hi, grid)
        g = self.time_per_update(np.exp(u))
        at_inf = self.chi + float(self.dist.mean())
        k = int(np.argmin(g))
        if k >= grid - 2 or at_inf <= g[k]:
            return math.inf, 0.0, at_inf
        res = optimize.minimize_scalar(
            lambda x: float(self.time_per_update(math.exp(x))),
            bracket=(u[max(k - 1, 0)], u[k], u[k + 1]),
            tol=1e-12,
        )
        t = math.exp(res.x)
        return t, float(self.p_for_t_ss(t)), float(self.time_per_update(t))

    def sample(self, size, rng: np.random.Generator) -> np.ndarray:
        """Draws of T from a seeded numpy Generator."""
        return self.dist.rvs(size=size, random_state=rng)

    def simulate_latency(self, h_max: int, t_ss: float, n_runs: int, rng: np.random.Generator) -> np.ndarray:
        """Monte Carlo of Algorithm 1's output ℓ (lines 4, 10, 12): Σ_h χ + min(T_h, t_ss), one per run."""
        total = np.zeros(n_runs)
        chunk = max(1, 2_000_000 // max(n_runs, 1))  # bounded memory for long runs
        for start in range(0, h_max, chunk):
            t = self.sample((n_runs, min(chunk, h_max - start)), rng)
            total += (self.chi + np.minimum(t, t_ss)).sum(axis=1)
        return total


def paper_models(chi: float = 0.01) -> dict[str, LatencyModel]:
    """The three models of Sec. VI-A with χ = 1/100."""
    return {
        "exponential": LatencyModel("exponential", 1.0, 1.0, chi),
        "gamma": LatencyModel("gamma", 0.25, 1.0, chi),
        "lomax": LatencyModel("lomax", 3.0, 2.0, chi),
    }
