"""Empirical privacy auditing: a lower bound on ε from canaries, in one training run.

The accountant's ε is an upper bound: no adversary learns more than it allows, if the
mechanism is the one the accountant was told about. An audit gives the other side: an ε that
the run provably exceeds, at a stated confidence, measured from what an adversary sees.

The method is Steinke, Nasr & Jagielski (2023), "Privacy auditing with one (1) training run"
(NeurIPS 2023). m canaries are each included in the training data independently with
probability 1/2 (:func:`draw_inclusion`). After training, the auditor scores every canary
from what it observed (for gradient canaries seen by a neighbour:
:func:`gradient_canary_scores`), guesses "in" for the k+ highest scores and "out" for the
k− lowest and abstains on the rest (:func:`guess`). Under (ε, δ)-DP the number of correct
guesses is stochastically dominated, up to a δ term, by a Binomial(r, e^ε/(1 + e^ε)) with
r = k+ + k− (their Theorem 3.1, :func:`one_run_p_value`); the audited ε is the largest ε
this count rejects at the given confidence (:func:`epsilon_from_counts`,
:func:`one_run_epsilon_lower_bound`, and :func:`best_k_epsilon_lower_bound` for a choice
of k paid for by a Bonferroni split).

Threat model for the gradient canaries: an honest-but-curious neighbour that sees every
message of one channel of one agent (its cross-gradients, models or momenta), knows the
canary directions, and follows the protocol. A canary is a fixed unit direction u_c that
enters the agent's sum of clipped gradients as one extra example's clipped gradient
(scaled by the clipping norm) in every round where that example is sampled.

The same guesses also test a Gaussian trade-off curve, the f-DP audit of Mahloujifar, Melis
& Chaudhuri (2024), "Auditing f-differential privacy in one run" (ICML 2025): under μ-GDP the
probability of v correct guesses among r is bounded by a recursion over the number of correct
guesses (:func:`fdp_p_value`, derived in :func:`fdp_mu_from_counts`), and the largest μ it
rejects is converted to ε at the run's δ (:func:`gdp_epsilon`): :func:`fdp_epsilon_from_counts`,
:func:`fdp_epsilon_lower_bound`, :func:`best_k_fdp_epsilon_lower_bound`. It is tighter where
the mechanism's privacy curve is Gaussian-shaped, and it assumes that shape.
docs/privacy.md, "Auditing: a lower bound on ε" and "The f-DP bound", says how to read both.
"""
from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np
import torch
from scipy import stats
from scipy.special import expit, log_ndtr, ndtr, ndtri

__all__ = [
    "AuditResult",
    "K_FRACTIONS",
    "best_k_epsilon_lower_bound",
    "best_k_fdp_epsilon_lower_bound",
    "default_k_grid",
    "draw_inclusion",
    "epsilon_from_counts",
    "fdp_epsilon_from_counts",
    "fdp_epsilon_lower_bound",
    "fdp_mu_from_counts",
    "fdp_p_value",
    "gdp_delta",
    "gdp_epsilon",
    "gradient_canary_scores",
    "guess",
    "input_canary_scores",
    "one_run_epsilon_lower_bound",
    "one_run_p_value",
]

# Absolute tolerance of the reported ε; the bisection reports the rejecting end.
_EPSILON_TOL = 1e-6
# Absolute tolerance of the f-DP audit's μ (the bisection reports the rejecting end) and of
# its p-value (reported at the upper end); largest μ searched (ε beyond 2,000 at any δ ≥ 1e-300).
_MU_TOL = 1e-7
_P_TOL = 1e-9
_MU_MAX = 64.0
# Slack on "the mass the recursion forces exceeds 1": rounding never makes the test reject.
_MASS_SLACK = 1e-9
# Largest relative deviation from norm 1 accepted for a canary direction (float32 rounding).
_UNIT_TOL = 1e-4
# Guesses per side, as fractions of m, in the declared grid of default_k_grid: from a few
# confident guesses (strong leakage) to a fifth of the canaries on each side (weak leakage).
K_FRACTIONS = (0.005, 0.01, 0.02, 0.05, 0.1, 0.2)


@dataclass(frozen=True)
class AuditResult:
    """An audited lower bound on ε and the counts behind it.

    Attributes
    ----------
    epsilon : float
        The lower bound: with probability at least ``confidence`` over the canaries'
        inclusion (and the run's noise), the mechanism is not (ε', δ)-DP for any ε' below
        it. 0 when the guesses reject nothing.
    m : int
        Canaries.
    k_pos, k_neg : int
        "In" guesses (highest scores) and "out" guesses (lowest scores).
    guesses : int
        r = k_pos + k_neg.
    correct : int
        v, the correct guesses among them.
    delta : float
        The δ of the (ε, δ)-DP hypothesis tested.
    confidence : float
        The overall confidence of the bound (after any Bonferroni split).
    choices : int
        Values of k the bound was maximised over (1 for a fixed k); each was tested at
        significance (1 − confidence)/choices.
    bound : {"one-run", "f-DP"}
        Which test: Steinke et al.'s (ε, δ)-DP bound, or the f-DP (μ-GDP) bound of
        Mahloujifar et al. (:func:`fdp_epsilon_from_counts`).
    mu : float, optional
        For the f-DP bound, the μ that the recursion alone rejects (the mechanism is not
        μ'-GDP for any μ' below it); None for the one-run bound.
    """

    epsilon: float
    m: int
    k_pos: int
    k_neg: int
    guesses: int
    correct: int
    delta: float
    confidence: float
    choices: int = 1
    bound: str = "one-run"
    mu: float | None = None

    def to_dict(self) -> dict:
        return asdict(self)


def _check_confidence(confidence: float) -> None:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence={confidence!r} must be in (0, 1), "
                         "e.g. 0.95 for a bound that holds 95% of the time")


def _check_delta(delta: float) -> None:
    if not 0 <= delta < 1:
        raise ValueError(f"delta={delta!r} must be in [0, 1): "
                         "pass the δ of the (ε, δ) guarantee being audited, e.g. 1e-5")


def _check_counts(m: int, r: int, v: int) -> None:
    for name, value in (("m", m), ("r", r), ("v", v)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise ValueError(f"{name}={value!r} must be an integer count")
    if not 0 <= v <= r <= m or m < 1:
        raise ValueError(f"counts m={m}, r={r}, v={v} must satisfy "
                         "0 <= v (correct) <= r (guesses) <= m (canaries), m >= 1")


def one_run_p_value(m: int, r: int, v: int, epsilon: float, delta: float) -> float:
    """Largest probability, under (ε, δ)-DP, of at least ``v`` correct guesses out of ``r``.

    Theorem 3.1 of Steinke, Nasr & Jagielski (2023): if the m canaries are included
    independently with probability 1/2, the mechanism is (ε, δ)-DP with respect to each
    canary, and the guesses (at most r of them, not abstaining) are a function of its output
    alone, then the number W of correct guesses satisfies

        P[W ≥ v] ≤ f(v) + 2mδ · max_{i ∈ {1..m}} (f(v − i) − f(v)) / i,
        f(u) = P[Binomial(r, e^ε/(1 + e^ε)) ≥ u].

    For i ≥ v, f(v − i) = 1, so the maximum is reached at some i ≤ v and only those terms
    are computed.

    Parameters
    ----------
    m : int
        Canaries (the δ term grows with m: every canary may be one of the δ-bad events).
    r : int
        Guesses made (k+ + k−).
    v : int
        Correct guesses observed.
    epsilon : float
        ε ≥ 0 of the hypothesis.
    delta : float
        δ of the hypothesis, in [0, 1).

    Returns
    -------
    float
        The bound, capped at 1: a p-value for the hypothesis "(ε, δ)-DP".
    """
    _check_counts(m, r, v)
    _check_delta(delta)
    if not epsilon >= 0:
        raise ValueError(f"epsilon={epsilon!r} must be >= 0")
    if v == 0:
        return 1.0
    q = float(expit(epsilon))  # e^ε/(1+e^ε), stable for large ε
    # f(u) = P[B ≥ u] = sf(u − 1).
    tail = float(stats.binom.sf(v - 1, r, q))
    if delta == 0:
        return tail
    i = np.arange(1, v + 1)
    wider = stats.binom.sf(v - i - 1, r, q)  # f(v − i)
    alpha = float(np.max((wider - tail) / i))
    return min(1.0, tail + 2 * m * delta * alpha)


@functools.lru_cache(maxsize=4096)
def epsilon_from_counts(m: int, r: int, v: int, delta: float, confidence: float = 0.95) -> float:
    """The ε that ``v`` correct guesses out of ``r`` (m canaries) prove, at ``confidence``.

    The one-run audit's lower bound (Steinke et al. 2023, Theorem 3.1 inverted for ε): an ε
    at which :func:`one_run_p_value` is at most 1 − confidence, found by bisection to 1e-6,
    reporting the end where the p-value is at most 1 − confidence. Any ε with that property
    is a valid bound: the reported ε is a function of v, and if it exceeds the true ε the
    mechanism is also (reported ε, δ)-DP, under which so many correct guesses have
    probability at most 1 − confidence. The bisection needs no monotonicity for that; the
    binomial tail is increasing in ε, so in practice it finds the largest such ε.

    Returns
    -------
    float
        The lower bound on ε; 0.0 when even ε = 0 is not rejected.
    """
    _check_counts(m, r, v)
    _check_delta(delta)
    _check_confidence(confidence)
    significance = 1.0 - confidence
    if one_run_p_value(m, r, v, 0.0, delta) > significance:
        return 0.0
    # Doubling ends by ε = 64 at the latest: e^ε/(1+e^ε) rounds to 1 beyond about 37, where
    # the tail f(v) is 1 for every v ≤ r and nothing is rejected.
    lo, hi = 0.0, 1.0
    while one_run_p_value(m, r, v, hi, delta) <= significance:
        lo, hi = hi, 2 * hi
    while hi - lo > _EPSILON_TOL:
        mid = 0.5 * (lo + hi)
        if one_run_p_value(m, r, v, mid, delta) <= significance:
            lo = mid
        else:
            hi = mid
    return lo


def gdp_delta(epsilon: float, mu: float) -> float:
    """The δ at which μ-GDP gives ε: Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2).

    Dong, Roth & Su (2022), "Gaussian differential privacy" (JRSS B), Corollary 2.13: a
    mechanism is μ-GDP if and only if it is (ε, δ(ε))-DP for every ε ≥ 0 with this δ(ε).
    Computed with the second term in log space, so that e^ε does not overflow.
    """
    if not epsilon >= 0:
        raise ValueError(f"epsilon={epsilon!r} must be >= 0")
    if not 0 <= mu < np.inf:
        raise ValueError(f"mu={mu!r} must be a finite number >= 0 (the Gaussian-DP parameter)")
    if mu == 0:
        return 0.0
    a = float(ndtr(-epsilon / mu + mu / 2))
    b = float(np.exp(epsilon + log_ndtr(-epsilon / mu - mu / 2)))
    return max(0.0, a - b)


def gdp_epsilon(mu: float, delta: float) -> float:
    """The ε of a μ-GDP mechanism at ``delta``: the root of :func:`gdp_delta` (ε, μ) = δ.

    δ(ε) decreases from 2Φ(μ/2) − 1 at ε = 0 to 0, so the root is unique; it is found by
    bisection to 1e-9 and the lower end is reported (an audit's lower bound is never
    rounded up). 0.0 when μ-GDP already gives (0, δ)-DP.

    Parameters
    ----------
    mu : float
        μ ≥ 0.
    delta : float
        δ in (0, 1): at δ = 0 every μ > 0 has ε = ∞.
    """
    if not 0 < delta < 1:
        raise ValueError(f"delta={delta!r} must be in (0, 1): a μ-GDP mechanism with μ > 0 has ε = ∞ at δ = 0; "
                         "pass the δ of the (ε, δ) guarantee being audited, e.g. 1e-5")
    if gdp_delta(0.0, mu) <= delta:
        return 0.0
    lo, hi = 0.0, 1.0
    while gdp_delta(hi, mu) > delta:
        lo, hi = hi, 2 * hi
    while hi - lo > 1e-9 * max(1.0, hi):
        mid = 0.5 * (lo + hi)
        if gdp_delta(mid, mu) > delta:
            lo = mid
        else:
            hi = mid
    return lo


def _forced_mass(m: int, r: int, v: int, mu: float, tau: float) -> float:
    """The least total probability that μ-GDP forces on W ∈ {0..v} once P[W ≥ v] ≥ τ: the
    recursion of :func:`fdp_p_value`, stopped as soon as it exceeds 1 or adds nothing."""
    a, b, total = v * tau, (r - v) * tau, tau  # A_v, B_v, mass at v
    for i in range(v - 1, -1, -1):
        y = a / m
        need = m * float(ndtr(ndtri(y) - mu)) if y < 1 else float(m)  # m·f̄⁻¹(A_{i+1}/m)
        if need <= b:
            break  # (1) holds at u = i + 1 with no mass at i, and then at every lower u
        q = (need - b) / (r - i)
        a, b, total = a + i * q, b + (r - i) * q, total + q
        if total > 1 + _MASS_SLACK:
            break
    return total


def fdp_p_value(m: int, r: int, v: int, mu: float) -> float:
    """Largest probability, under μ-GDP, of at least ``v`` correct guesses out of ``r``.

    The f-DP counterpart of :func:`one_run_p_value`: the guessing game of Mahloujifar, Melis &
    Chaudhuri (2024) under a Gaussian trade-off function, bounded by a recursion over the
    number of correct guesses. The recursion is derived here as follows.

    Setting. Canary j is in (S_j = +1) or out (S_j = −1) by a fair coin, independently; the
    guesses T_j ∈ {−1, 0, +1}, at most r of them non-zero, are a function of the output;
    W = #{j : T_j = S_j}. The hypothesis: with the other canaries fixed, the output under
    S_j = +1 and under S_j = −1 are f-DP in both directions, f = G_μ,
    G_μ(α) = Φ(Φ⁻¹(1 − α) − μ). Write f̄(x) = 1 − f(x) = Φ(Φ⁻¹(x) + μ), concave and
    increasing: for every event E of the output, P_in(E) ≤ f̄(P_out(E)) and
    P_out(E) ≤ f̄(P_in(E)).

    Per canary. Take E± = {T_j = ±1, W_{−j} ≥ u − 1}, W_{−j} the correct guesses among the
    other canaries. Under the inclusion that makes T_j right, E± is "j right and W ≥ u";
    under the other it is "j wrong and W ≥ u − 1". Averaging the two signs, then the other
    canaries' coins, then the m canaries, each time by the concavity of f̄:

        (1)  E[W; W ≥ u] ≤ m · f̄(E[r − W; W ≥ u − 1] / m),   u = 1, …, r

    (with R ≤ r guesses made, E[R − W; ·] ≤ E[r − W; ·] and f̄ increases). With e^ε x in
    place of f̄ (ε-DP) Binomial(r, e^ε/(1 + e^ε)) meets every (1) with equality: Steinke et
    al.'s worst case. G_μ lies above the (ε, δ)-DP curve that μ-GDP implies (they touch at
    one point), so under G_μ (1) is stricter, most where the auditor's few most confident
    guesses are all right; that is where the f-DP audit is tighter.

    Worst case. The bound is the largest τ for which some distribution of W with
    P[W ≥ v] = τ satisfies (1). Moving all mass at or above v to v keeps (1) (for u ≤ v its
    left side shrinks and its right side grows; for u > v its left side becomes 0), so take
    mass τ at v. Then for i = v − 1, …, 0, (1) at u = i + 1 needs B_i ≥ m f̄⁻¹(A_{i+1}/m)
    with A_i = E[W; W ≥ i] and B_i = E[r − W; W ≥ i], and the least mass at i that gives it is

        q_i = max(0, (m f̄⁻¹(A_{i+1}/m) − B_{i+1}) / (r − i)),   f̄⁻¹(y) = Φ(Φ⁻¹(y) − μ).

    For a distribution meeting (1) with mass τ at v and none above, every tail P[W ≥ i] is
    at least the recursion's Σ_{j≥i} q_j: (1) at u = i + 1 reads
    (r − i) P[W ≥ i] ≥ Σ_{j>i} P[W ≥ j] + m f̄⁻¹(A_{i+1}/m), A_{i+1} = Σ_{j>i} P[W ≥ j] + i P[W ≥ i + 1],
    increasing in the tails above i (induction down from v). If the recursion's total mass
    exceeds 1, no distribution has P[W ≥ v] ≥ τ. The returned bound is the largest
    τ whose forced mass is at most 1 (bisection to 1e-9, upper end; the mass grows with τ).

    Parameters
    ----------
    m, r, v : int
        Canaries, guesses, correct guesses (0 ≤ v ≤ r ≤ m).
    mu : float
        μ ≥ 0 of the hypothesis.

    Returns
    -------
    float
        A p-value for the hypothesis "μ-GDP with respect to each canary".
    """
    _check_counts(m, r, v)
    if not 0 <= mu < np.inf:
        raise ValueError(f"mu={mu!r} must be a finite number >= 0 (the Gaussian-DP parameter)")
    if v == 0 or _forced_mass(m, r, v, mu, 1.0) <= 1 + _MASS_SLACK:
        return 1.0
    lo, hi = 0.0, 1.0
    while hi - lo > _P_TOL:
        mid = 0.5 * (lo + hi)
        if _forced_mass(m, r, v, mu, mid) <= 1 + _MASS_SLACK:
            lo = mid
        else:
            hi = mid
    return hi


@functools.lru_cache(maxsize=4096)
def fdp_mu_from_counts(m: int, r: int, v: int, confidence: float = 0.95) -> float:
    """The μ that ``v`` correct guesses out of ``r`` (m canaries) prove, at ``confidence``.

    μ is rejected when the recursion of :func:`fdp_p_value` forces more than probability 1
    once P[W ≥ v] ≥ 1 − confidence, i.e. its p-value is below 1 − confidence. f̄⁻¹ falls as μ
    grows, so the rejected μ are an interval [0, μ̂); μ̂ is found by bisection to 1e-7 and the
    rejecting end is reported. As for :func:`epsilon_from_counts`, μ̂ is a function of v,
    so P[μ̂ > true μ] ≤ 1 − confidence.

    Returns
    -------
    float
        The lower bound on μ; 0.0 when even μ = 0 (no leakage) is not rejected.
    """
    _check_counts(m, r, v)
    _check_confidence(confidence)
    alpha = 1.0 - confidence

    def rejects(mu: float) -> bool:
        return v > 0 and _forced_mass(m, r, v, mu, alpha) > 1 + _MASS_SLACK

    if not rejects(0.0):
        return 0.0
    lo, hi = 0.0, 1.0
    while rejects(hi) and hi < _MU_MAX:
        lo, hi = hi, 2 * hi
    if rejects(hi):
        return hi
    while hi - lo > _MU_TOL:
        mid = 0.5 * (lo + hi)
        if rejects(mid):
            lo = mid
        else:
            hi = mid
    return lo


@functools.lru_cache(maxsize=4096)
def fdp_epsilon_from_counts(m: int, r: int, v: int, delta: float, confidence: float = 0.95) -> float:
    """The f-DP audit's ε: the largest ε whose Gaussian curve the counts reject, at ``delta``.

    Mahloujifar, Melis & Chaudhuri (2024): the hypothesis is "μ-GDP with respect to each
    canary"; ε and μ are tied at the run's δ by Dong, Roth & Su (2022), Corollary 2.13
    (:func:`gdp_epsilon`). Two valid p-values bound the same P[W ≥ v] under μ-GDP: the
    recursion's (:func:`fdp_p_value`), and the one-run bound's at ε = gdp_epsilon(μ, δ)
    (:func:`one_run_p_value`), because μ-GDP implies that (ε, δ)-DP. Their minimum is a
    p-value too, with no split of the confidence, so

        ε̂ = max(gdp_epsilon(:func:`fdp_mu_from_counts`, δ), :func:`epsilon_from_counts`).

    Hence ε̂ is never below the one-run bound on the same counts; the recursion is the larger
    of the two except close to ε = 0 (docs/privacy.md, "The f-DP bound").

    Assumption: ε̂ says the run is not μ-GDP for the μ whose ε at δ is below ε̂. Read as a
    bound on the run's own ε at δ it assumes the run's trade-off curve is Gaussian (the
    Gaussian mechanism; approximately, many compositions of subsampled Gaussians). A
    mechanism with another curve, randomized response for one, can be (ε, δ)-DP and still
    fail the μ-GDP test of that ε.

    Parameters
    ----------
    m, r, v : int
        Canaries, guesses, correct guesses.
    delta : float
        δ in (0, 1) at which μ is converted to ε (the run's δ).
    confidence : float
        Probability that the bound holds, in (0, 1).

    Returns
    -------
    float
        The lower bound on ε; 0.0 when the counts reject nothing.
    """
    _check_counts(m, r, v)
    _check_confidence(confidence)
    if not 0 < delta < 1:
        raise ValueError(f"delta={delta!r} must be in (0, 1): the f-DP bound converts μ to ε at the run's δ, and "
                         "every μ > 0 has ε = ∞ at δ = 0; pass the δ of the guarantee being audited, e.g. 1e-5")
    mu = fdp_mu_from_counts(m, r, v, confidence)
    return max(gdp_epsilon(mu, delta) if mu > 0 else 0.0, epsilon_from_counts(m, r, v, delta, confidence))


def guess(scores, k_pos: int, k_neg: int) -> np.ndarray:
    """Guesses +1 ("in") for the ``k_pos`` highest scores, −1 ("out") for the ``k_neg``
    lowest, 0 (abstain) for the rest.

    Ties are broken by canary index (a stable sort). That keeps the guesses a function of
    the observed output alone, as Theorem 3.1 requires, provided the canaries' order was
    fixed before their inclusion was drawn.

    Returns
    -------
    (m,) int8 array of {−1, 0, +1}
    """
    s = _as_scores(scores)
    m = len(s)
    _check_k(m, k_pos, k_neg)
    order = np.argsort(s, kind="stable")
    out = np.zeros(m, dtype=np.int8)
    out[order[m - k_pos:]] = 1
    out[order[:k_neg]] = -1
    return out


def one_run_epsilon_lower_bound(scores, included, k_pos: int, k_neg: int, delta: float,
                                confidence: float = 0.95) -> AuditResult:
    """Audit with one fixed (k+, k−): the lower bound on ε that the scores prove.

    Steinke, Nasr & Jagielski (2023), Algorithm 1 (guess on the k+ highest and k− lowest
    scores) with the bound of Theorem 3.1 (:func:`epsilon_from_counts`). k+ and k− must be
    fixed before the scores are seen; to choose among several, use
    :func:`best_k_epsilon_lower_bound`, which pays for the choice.

    Parameters
    ----------
    scores : (m,) array-like
        The auditor's score of each canary, higher meaning "more likely in". Must be
        computed from the observed output only, never from ``included``.
    included : (m,) bool array-like
        Which canaries were in the training data (:func:`draw_inclusion`).
    k_pos, k_neg : int
        Numbers of "in" and "out" guesses; k_pos + k_neg ≤ m.
    delta : float
        δ of the (ε, δ) guarantee being audited.
    confidence : float
        Probability that the bound holds, in (0, 1).
    """
    return _audit(scores, included, k_pos, k_neg, delta, confidence, choices=1)


def default_k_grid(m: int) -> list[int]:
    """The declared grid of guesses per side for m canaries: k = round(f·m) for f in
    :data:`K_FRACTIONS` (at least 1, duplicates dropped).

    It depends on m alone, so it is fixed before any score is seen, as the Bonferroni split
    of :func:`best_k_epsilon_lower_bound` requires. Small fractions win where the scores
    separate well (large ε: a few confident guesses), large ones where they separate
    poorly (docs/privacy.md, "Auditing", measures both).
    """
    if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or m < 2:
        raise ValueError(f"m={m!r} must be an integer >= 2 (the number of canaries)")
    return sorted({max(1, round(f * m)) for f in K_FRACTIONS})


def best_k_epsilon_lower_bound(scores, included, delta: float, confidence: float = 0.95,
                               ks: Sequence[int] | None = None) -> AuditResult:
    """The best bound over k+ = k− = k for k in a grid declared before the scores are seen,
    paid for by a Bonferroni split.

    Each k is audited (:func:`one_run_epsilon_lower_bound`) at significance
    (1 − confidence)/len(ks), a union bound over the grid, so the largest of the bounds
    holds with probability at least ``confidence``. Choosing the best k on the same scores
    without the split would overstate the confidence.

    Parameters
    ----------
    scores, included, delta, confidence
        As for :func:`one_run_epsilon_lower_bound`.
    ks : sequence of int, optional
        Distinct guess counts per side, each with 2k ≤ m, fixed from m alone; default
        :func:`default_k_grid` (up to six values).

    Returns
    -------
    AuditResult
        The best k's result, with ``confidence`` the overall one and ``choices = len(ks)``.
    """
    return _best_k(scores, included, delta, confidence, ks, fdp=False)


def fdp_epsilon_lower_bound(scores, included, k_pos: int, k_neg: int, delta: float,
                            confidence: float = 0.95) -> AuditResult:
    """Audit with one fixed (k+, k−) by the f-DP bound: :func:`one_run_epsilon_lower_bound`'s
    guesses, tested against μ-GDP (:func:`fdp_epsilon_from_counts`; Mahloujifar, Melis &
    Chaudhuri 2024). ``delta`` must be in (0, 1); the result's ``mu`` is the μ the recursion
    rejects. To choose k, use :func:`best_k_fdp_epsilon_lower_bound`."""
    return _audit(scores, included, k_pos, k_neg, delta, confidence, choices=1, fdp=True)


def best_k_fdp_epsilon_lower_bound(scores, included, delta: float, confidence: float = 0.95,
                                   ks: Sequence[int] | None = None) -> AuditResult:
    """:func:`best_k_epsilon_lower_bound` with the f-DP bound: the same declared grid of k
    (:func:`default_k_grid`), each k tested at significance (1 − confidence)/len(ks) (the
    same Bonferroni split, so the best holds at ``confidence``), the largest ε kept."""
    return _best_k(scores, included, delta, confidence, ks, fdp=True)


def _best_k(scores, included, delta, confidence, ks, fdp: bool) -> AuditResult:
    _check_confidence(confidence)
    m = len(_as_scores(scores))
    ks = default_k_grid(m) if ks is None else [int(k) for k in ks]
    if not ks or len(set(ks)) != len(ks):
        raise ValueError(f"ks={ks!r} must be a non-empty list of distinct guess counts per side, e.g. [10, 50, 100]")
    per_choice = 1.0 - (1.0 - confidence) / len(ks)
    results = [_audit(scores, included, k, k, delta, per_choice, choices=len(ks), fdp=fdp) for k in ks]
    best = max(results, key=lambda res: res.epsilon)
    return AuditResult(**{**best.to_dict(), "confidence": confidence})


def _audit(scores, included, k_pos, k_neg, delta, confidence, choices, fdp: bool = False) -> AuditResult:
    s = _as_scores(scores)
    inc = np.asarray(included)
    if inc.shape != s.shape or inc.dtype != bool:
        raise ValueError(f"included must be a bool array of the scores' shape {s.shape} (draw_inclusion gives one); "
                         f"got dtype {inc.dtype}, shape {inc.shape}")
    g = guess(s, k_pos, k_neg)
    truth = np.where(inc, 1, -1)
    correct = int(np.sum(g == truth))  # abstentions (0) never match ±1
    m, r = len(s), k_pos + k_neg
    extra = {}
    if fdp:
        eps = fdp_epsilon_from_counts(m, r, correct, float(delta), float(confidence))
        extra = {"bound": "f-DP", "mu": fdp_mu_from_counts(m, r, correct, float(confidence))}
    else:
        eps = epsilon_from_counts(m, r, correct, float(delta), float(confidence))
    return AuditResult(epsilon=eps, m=m, k_pos=k_pos, k_neg=k_neg, guesses=r, correct=correct,
                       delta=float(delta), confidence=float(confidence), choices=choices, **extra)


def _float64(x) -> np.ndarray:
    """``x`` (a tensor on any device, or array-like) as a float64 numpy array."""
    return x.detach().cpu().double().numpy() if isinstance(x, torch.Tensor) else np.asarray(x, dtype=np.float64)


def _as_scores(scores) -> np.ndarray:
    s = _float64(scores)
    if s.ndim != 1 or len(s) == 0:
        raise ValueError(f"scores must be a non-empty 1-d array, one score per canary; got shape {s.shape}")
    if not np.all(np.isfinite(s)):
        raise ValueError("scores contain NaN or infinity; a diverged run cannot be audited, pass finite scores")
    return s


def _check_k(m: int, k_pos: int, k_neg: int) -> None:
    for name, k in (("k_pos", k_pos), ("k_neg", k_neg)):
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 0:
            raise ValueError(f"{name}={k!r} must be an integer >= 0")
    if k_pos + k_neg > m or k_pos + k_neg == 0:
        raise ValueError(f"k_pos + k_neg = {k_pos + k_neg} must be between 1 and the number of canaries m = {m}; "
                         f"pass fewer guesses")


def draw_inclusion(m: int, generator: np.random.Generator | torch.Generator) -> np.ndarray:
    """Which of ``m`` canaries are in: each independently with probability 1/2.

    The independent fair coins are the randomness Theorem 3.1 of Steinke et al. (2023)
    rests on. Pass a generator seeded from the run's seed (e.g.
    ``np.random.default_rng(derive_seed(seed, "audit", "inclusion"))``), kept apart from the
    streams the run's noise and batches come from.

    Parameters
    ----------
    m : int
        Number of canaries, ≥ 1.
    generator : numpy.random.Generator or torch.Generator

    Returns
    -------
    (m,) bool array
    """
    if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or m < 1:
        raise ValueError(f"m={m!r} must be an integer >= 1 (the number of canaries)")
    if isinstance(generator, np.random.Generator):
        return generator.integers(0, 2, size=int(m)).astype(bool)
    if isinstance(generator, torch.Generator):
        return torch.randint(0, 2, (int(m),), generator=generator).numpy().astype(bool)
    raise ValueError(f"generator must be a numpy.random.Generator or a torch.Generator, got {type(generator).__name__}")


def gradient_canary_scores(directions, messages) -> np.ndarray:
    """White-box gradient-canary scores: canary c scores Σ_t ⟨u_c, message_t⟩.

    A canary whose clipped gradient is C·u_c adds C·u_c/B to the messages of every round it
    is sampled in; the projection on u_c, summed over the rounds, collects that signal while
    the Gaussian noise in that direction grows only as √T. This is the white-box
    gradient-space score of Steinke et al. (2023), whose "Dirac canaries" are coordinate
    vectors, here for an observer of one channel of one agent. The scores are linear in the messages, so passing
    their running sum as a single row gives the same scores (an observer need keep only that).

    Parameters
    ----------
    directions : (m, P) array or tensor
        The canary directions u_c, each of norm 1 (e.g. distinct coordinate vectors, which
        are orthogonal, or normalised Gaussian vectors, nearly so for P ≫ m).
    messages : (T, P) or (P,) array or tensor
        The observed messages of one channel (one row per round).

    Returns
    -------
    (m,) float64 array
    """
    U = _float64(directions)
    M = _float64(messages)
    if M.ndim == 1:
        M = M[None, :]
    if U.ndim != 2 or M.ndim != 2 or U.shape[1] != M.shape[1] or len(U) == 0:
        raise ValueError(f"directions must be (m, P) and messages (T, P) or (P,) with the same P; "
                         f"got {U.shape} and {M.shape}")
    norms = np.linalg.norm(U, axis=1)
    if not np.all(np.abs(norms - 1.0) <= _UNIT_TOL):
        worst = float(norms[np.argmax(np.abs(norms - 1.0))])
        raise ValueError(f"canary directions must have norm 1 (one has {worst:.6g}); divide each row by its norm")
    return U @ M.sum(axis=0)


INPUT_SCORES = ("loss", "margin")


def input_canary_scores(logits, labels, score: str = "loss") -> np.ndarray:
    """Black-box input-canary scores from a model's outputs on the canaries.

    A canary is an example (an image with its label); a model trained on it fits it better
    than one that never saw it. ``"loss"`` scores canary c by the negative cross-entropy of
    its label, ``"margin"`` by its label's logit less the largest other logit; either is
    higher for a canary that is in. For several observed models, pass their logits stacked:
    the scores are summed over the models.

    Parameters
    ----------
    logits : (m, K) or (T, m, K) array or tensor
        The observed model's (or T models') outputs on the m canaries.
    labels : (m,) integer array or tensor
        Each canary's label.
    score : {"loss", "margin"}

    Returns
    -------
    (m,) float64 array
    """
    if score not in INPUT_SCORES:
        raise ValueError(f"score={score!r} is not known; allowed values: {list(INPUT_SCORES)}")
    L = _float64(logits)
    if L.ndim == 2:
        L = L[None]
    y = np.asarray(labels.cpu() if isinstance(labels, torch.Tensor) else labels)
    if L.ndim != 3 or y.ndim != 1 or L.shape[1] != len(y) or len(y) == 0 or L.shape[2] < 2:
        raise ValueError(f"logits must be (m, K) or (T, m, K) with K >= 2 and labels (m,); "
                         f"got {L.shape} and {y.shape}")
    if not np.issubdtype(y.dtype, np.integer) or y.min() < 0 or y.max() >= L.shape[2]:
        raise ValueError(f"labels must be class indices in [0, {L.shape[2]})")
    own = np.take_along_axis(L, np.broadcast_to(y[None, :, None], (len(L), len(y), 1)), axis=2)[..., 0]
    if score == "loss":
        top = L.max(axis=2)
        per_model = own - top - np.log(np.exp(L - top[..., None]).sum(axis=2))
    else:
        others = L.copy()
        np.put_along_axis(others, np.broadcast_to(y[None, :, None], (len(L), len(y), 1)), -np.inf, axis=2)
        per_model = own - others.max(axis=2)
    return per_model.sum(axis=0)
