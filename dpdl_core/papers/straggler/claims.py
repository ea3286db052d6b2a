"""The straggler paper's statements about Fig. 2 (Sec. VI, L223–233 of the text) and our own
consistency checks, as :class:`~dpdl_core.verdicts.claims.ClaimSpec` s; the rules run in
:func:`~dpdl_core.papers.straggler.figures.check_claims`.

"Clear speed-up" and "no clear speed-up" are judged on the paper's own measure, the horizontal
gap between the lower panels' curves (test accuracy against Lemma 1 latency): the **speed-up
factor** of skipping probability p over no skipping (p = 1e-4), the latency the no-skipping
mean curve needs to reach a target accuracy divided by the latency the skipping mean curve
needs (:func:`~dpdl_core.papers.straggler.figures.measured_speedup`). The target is
:data:`TARGET_FRACTION` of the way from the accuracy at latency 0 to the lower of the two
curves' final accuracies. Its spread is a bootstrap over the paired runs (run indices
resampled jointly for both curves, :data:`BOOTSTRAP_RESAMPLES` resamples, seeded), as the
standard error of the log factor. Both claims share one line, :data:`SPEEDUP_LINE`, and are
mirror images (:func:`speedup_comparison`): a speed-up is clear when the factor divided by
exp(2 SE) is above the line, not clear when the factor times exp(2 SE) is below it, and
undecided in between, so fewer runs give *inconclusive*, never an easier *holds* for
either. The accuracy gain at a common latency is shown beside it as secondary evidence, not
judged. "Trade-offs look similar across latency models" is *inconclusive* by construction
(Theorems 1–3 do not depend on the latency model, so our upper panels are identical
curves; the paper gives no criterion for "similar").

The lower panels' scope names the data of the run (:func:`lower_scope`): the paper's [39] is
California housing (d = 8, the study's data); the notebooks fall back to the Boston file.
"""
from __future__ import annotations

import math
from dataclasses import replace

from ...verdicts import SPREAD_Z, ClaimSpec, Comparison

__all__ = ["BOOTSTRAP_RESAMPLES", "DATA_PLACEHOLDER", "LONG_RUN_FRACTION", "ON_TOP", "FIGURE_SPECS", "SPECS",
           "SPEEDUP_LINE", "STUDY_ONLY", "TARGET_FRACTION", "lower_scope", "speedup_comparison"]

PAPER = "straggler"
# The line between "no clear" and "clear" speed-up, as a factor of latency to the same accuracy.
# The paper's own cases: Lemma 2 predicts 0.99x and 0.98x (p = 1/2, 7/10) for the exponential
# model, where the text sees no clear speed-up, and 3.60x / 5.50x (gamma), 1.33x / 1.36x
# (Pareto II), where it sees a clear one. The line is the geometric mean of the largest "not
# clear" and the smallest "clear" of them, sqrt(0.99 x 1.33) = 1.148, rounded to 1.15: equally
# far (as a ratio) from both, and judged on the log scale where it sits in the middle.
SPEEDUP_LINE = 1.15
# Target accuracy of the speed-up: this fraction of the way from the accuracy at latency 0 to
# the lower of the two curves' final accuracies. Both mean curves reach it inside their range
# (crossings interpolated between evaluations, never read off the end point that also sets
# the target), and it is as high as that allows: the curves rise slowly, so the latency to
# a target near the start is dominated by the noise of the mean curve.
TARGET_FRACTION = 0.9
# Bootstrap of the speed-up: resamples of the paired runs (run indices drawn jointly for both curves).
BOOTSTRAP_RESAMPLES = 1000
# Our reading of "almost on top of each other and hence difficult to distinguish" (L227): two
# curves of the upper panels within this relative ε of each other read as one curve. It is
# also the resolution at which the ordering claims read the figure: a reversal smaller than
# this is one the paper's own figure cannot show (its p = 1/2 and 7/10 curves, 9% apart,
# are the ones it calls on top of each other).
ON_TOP = 0.10
# "In the long run" (§I, L26): the last tenth of the lower panels' hops.
LONG_RUN_FRACTION = 0.1
_UPPER = "upper panels (Theorems 1-3), every p in {1e-4, 1/2, 7/10}"
# Replaced by the data of the run when a claim is judged (:func:`lower_scope`).
DATA_PLACEHOLDER = "the housing data of the run"
_LOWER = f"lower panels: SS-Rand-Ring, {DATA_PLACEHOLDER}, paired runs, speed-up to a common accuracy"
# The privacy audits' setting (papers/straggler/audit.py).
AUDIT_SCOPE = (f"p = 1e-4, {DATA_PLACEHOLDER}, one node's whole dataset as the canary (a linear loss of gradient "
               "±k·e), another node observing the token")


def _kind(reading: str) -> str:
    """A claim read on Theorem 3 as printed is the paper's; on the package's diagnostic
    Theorem 3 it is a diagnostic, counted apart."""
    return "diagnostic" if reading == "diagnostic" else "paper"


def _spec(id_, statement, quote, where, scope, rule, kind="paper", by_construction=False) -> ClaimSpec:
    return ClaimSpec(PAPER, id_, statement, quote, where, scope, rule, kind=kind, by_construction=by_construction)


SPECS = {s.id: s for s in (
    _spec("lemma2_p_star", "Lemma 2 gives p* ≈ 0, 0.710, 0.737 (exponential, gamma, Pareto II)",
          "close to the values of $p$ given by Lemma 2, respectively 0 and $0.710/0.737$ for the exponential and "
          "gamma/Pareto delay models", "Sec. VI-A, L223", "the three latency models",
          "optimal p of Lemma 2 rounded to 3 decimals equals the paper's"),
    *(_spec(f"latency_upper_left.{k}", f"latency (h_max) increases toward the upper left: {label}",
            "parameterized by the average latency (Lemma 1), which increases toward the upper left corner",
            "Sec. VI-A, L223", _UPPER,
            "as h_max grows, the Thm 1 bound decreases and ε_ss does not decrease, for every p", kind=_kind(k))
      for k, label in (("ss_ring", "SS-Ring, Thm 2"), ("printed", "SS-Rand-Ring, Thm 3 as printed"),
                       ("diagnostic", "SS-Rand-Ring, Thm 3 diagnostic (ours)"))),
    _spec("similar_across_models", "trade-offs look similar for all latency models",
          "the trade-offs look similar for all latency models considered", "Sec. VI-A, L225",
          "upper panels, the three latency models",
          "none can be measured: Theorems 1-3 depend on p, not on the latency model, so the upper-panel curves are "
          "identical by construction and only the latency labels differ; the paper gives no criterion for 'similar'",
          by_construction=True),
    *(_spec(f"rand_ring_small_error.{k}", f"SS-Rand-Ring better at small error, especially p = 1e-4 ({v})",
            "SS-Rand-Ring gives better trade-off curves (especially for $p = 10^{-4}$ , i.e., virtually no skipping) "
            "for smaller values of error in function minimization", "Sec. VI-A, L225", _UPPER,
            "ε(SS-Ring)/ε(SS-Rand-Ring) > 1 at the smallest common Thm 1 error for every p, largest at p = 1e-4, "
            "read at the figure's resolution (ON_TOP, 10% relative): holds when every ratio exceeds 1, and p = 1e-4's "
            "every other p's, by more than 10%; fails when one is on the wrong side by more than 10%; otherwise "
            "inconclusive", kind=_kind(k))
      for k, v in (("printed", "Thm 3 as printed"), ("diagnostic", "Thm 3 diagnostic (ours)"))),
    *(_spec(f"rand_ring_large_error.{k}", f"SS-Rand-Ring worse at high error, i.e. early ({v})",
            "while the situation changes for higher values of error (i.e., at the initial stages of Algorithm 1's "
            "execution)", "Sec. VI-A, L225", _UPPER,
            "ε(SS-Ring)/ε(SS-Rand-Ring) < 1 at the largest common Thm 1 error for every p, read at the figure's "
            "resolution (ON_TOP, 10% relative): holds when ε(SS-Rand-Ring) exceeds ε(SS-Ring) by more than 10% for "
            "every p; fails when it is below by more than 10% for some p; otherwise inconclusive", kind=_kind(k))
      for k, v in (("printed", "Thm 3 as printed"), ("diagnostic", "Thm 3 diagnostic (ours)"))),
    _spec("ss_ring_no_skip_worst", "SS-Ring curve for p = 1e-4 is the worst (skipping helps)",
          "the SS-Ring curve for $p = 10^{-4}$ is the worst, which means that skipping helps", "Sec. VI-A, L227",
          _UPPER, "ε(SS-Ring, p=1e-4) above ε(SS-Ring, p) for each other p, read at the figure's resolution (ON_TOP, "
          "10% relative): fails where it is below by more than 10% at some common Thm 1 error; holds where it is "
          "nowhere below by more and above by more somewhere, for each other p; otherwise inconclusive"),
    _spec("ss_ring_on_top", "SS-Ring curves for p = 1/2 and 7/10 almost on top of each other",
          "there is not much difference between the SS-Ring curves for $p = 1/2$ and $p = 7/10$ (they are almost on "
          "top of each other and hence difficult to distinguish)", "Sec. VI-A, L227", _UPPER,
          "largest relative ε difference at common Thm 1 error ≤ 10% (ON_TOP)"),
    *(_spec(f"rand_ring_small_p.{k}", f"SS-Rand-Ring favours small p; no skipping slightly more private ({v})",
            "SS-Rand-Ring favors smaller values of $p$ (i.e., larger timeout)", "Sec. VI-A, L227; L233", _UPPER,
            "ε(SS-Rand-Ring) non-decreasing in p, read at the figure's resolution (ON_TOP, 10% relative): fails "
            "where a larger p is more private by more than 10% at some common Thm 1 error; holds where no adjacent "
            "pair of p is so reversed and some pair is ordered by more than 10% somewhere; otherwise inconclusive",
            kind=_kind(k))
      for k, v in (("printed", "Thm 3 as printed"), ("diagnostic", "Thm 3 diagnostic (ours)"))),
    _spec("no_speedup_exponential", "no clear speed-up from skipping for the exponential model",
          "We observe that skipping achieves a clear speed-up compared to no skipping, except for the exponential "
          "delay model", "Sec. VI-B, L233", _LOWER + ", exponential model",
          f"every skipping p: speed-up factor over p=1e-4 (latency to {TARGET_FRACTION:.0%} of the way from the "
          f"start to the lower final accuracy) times exp(2 SE) below {SPEEDUP_LINE}x holds; divided by exp(2 SE) "
          "above it (a clear speed-up) fails; otherwise (e.g. too few runs) inconclusive; SE: bootstrap of the log "
          "factor over the paired runs"),
    *(_spec(f"speedup.{k}", f"skipping gives a clear speed-up ({label})",
            "We observe that skipping achieves a clear speed-up compared to no skipping, except for the exponential "
            "delay model", "Sec. VI-B, L233", f"{_LOWER}, {label}",
            f"every skipping p: speed-up factor over p=1e-4 (latency to {TARGET_FRACTION:.0%} of the way from the "
            f"start to the lower final accuracy) divided by exp(2 SE) above {SPEEDUP_LINE}x holds; times exp(2 SE) "
            "below it (no clear speed-up) fails; otherwise (e.g. too few runs) inconclusive; SE: bootstrap of the "
            "log factor over the paired runs")
      for k, label in (("gamma", "gamma (shape 1/4, scale 1)"), ("lomax", "Pareto II (shape 3, scale 2)"))),
    _spec("lemma2_predicts_speedup", "the measured speed-ups are as Lemma 2 predicts",
          "We observe that skipping achieves a clear speed-up compared to no skipping, except for the exponential "
          "delay model, as predicted well by Lemma 2", "Sec. VI-B, L233", _LOWER + ", every latency model",
          "per skipping p, the measured speed-up over Lemma 2's predicted one (one ratio for the three latency "
          "models: a model only rescales the hop axis; study.lemma2_gap): holds when its 2 SE bootstrap range "
          "(log scale, as the speed-up claims) holds 1 for every p, fails when it excludes 1 for some p"),
    _spec("rand_ring_long_run_convergence", "randomizing the ring's order improves convergence in the long run",
          "randomizing the processing order of nodes on the ring provides an improvement in both convergence "
          "behavior and privacy in the long run", "§I contributions, L26",
          f"lower panels' runs: SS-Rand-Ring against SS-Ring, every p in {{1e-4, 1/2, 7/10}}, {DATA_PLACEHOLDER}, "
          "paired runs",
          f"per p, SS-Rand-Ring's minus SS-Ring's test accuracy at equal hops (both schemes have the same latency "
          f"per hop), averaged over the last {LONG_RUN_FRACTION:.0%} of the hops (the long run), paired by run index: "
          "holds when it is above 0 by more than 2 SE (Student's t) of the per-run differences for every p, fails "
          "when below by more for some p, otherwise inconclusive (the convergence half; the privacy half is "
          "rand_ring_small_error)"),
    _spec("lemma2_optimum_monte_carlo", "Lemma 2's t_ss minimises the simulated time between token updates",
          "The value of $t_{\\text{ss}}$ that minimizes the average time between two consecutive updates of the "
          "token is given by the solution of the optimization problem", "§III-B, Lemma 2, L150",
          "the three latency models, chi = 1/100",
          "per latency model, a Monte Carlo of Algorithm 1's hops (the Lemma 1 check's runs x hops draws of T, common "
          "to every grid point): total latency over token updates at each p of the grid 1e-4, 0.05, 0.10, ..., 0.95 "
          "(t_ss = the p-quantile threshold); holds when the simulated minimiser is the grid point nearest Lemma 2's "
          "p* for every model, fails otherwise"),
    *(_spec(f"{key}_ndp_audit", f"{scheme} achieves (ε_ss, δ + δ')-NDP ({theorem}), audited",
            f"Then, the {scheme} scheme on a ring with $n$ nodes and with learning rate parameter $0 < \\zeta \\leq "
            "2/\\beta$ achieves $(\\varepsilon_{\\text{ss}}, \\delta + \\delta')$ -NDP",
            f"§V, {theorem.split(' as ')[0]}, {line}",
            f"Algorithm 1 at Sec. VI-A's constants, {AUDIT_SCOPE}",
            "fails when the privacy audit proves ε above the theorem's ε_ss at 95% confidence (the one-run bound, "
            "smallest over the audit's seeds, at δ: docs/privacy.md, 'The token ring'); otherwise inconclusive: an "
            "audit can refute an upper bound on ε, never confirm one")
      for key, scheme, theorem, line in (("theorem2", "SS-Ring", "Theorem 2", "L184"),
                                         ("theorem3", "SS-Rand-Ring", "Theorem 3 as printed", "L196"))),
    _spec("lemma1_monte_carlo", "Lemma 1: Monte Carlo latency of Algorithm 1 matches the closed form", "", "spec §2",
          "every (model, p)", "every |z| < 3 (3 standard errors)", kind="check"),
    _spec("sanity_band", "SS-Rand-Ring accuracy after 20,000 hops within the spec's sanity band", "", "spec §5",
          "SS-Rand-Ring, p in {1e-4, 1/2, 7/10}", "within ±0.03 of 0.72, 0.67, 0.64", kind="check"),
)}


# The claims only the paper-scale study judges (from its 400-run curves, its Monte Carlo and the
# committed privacy audits);
# the Figure 2 notebook judges every other one.
STUDY_ONLY = ("lemma2_predicts_speedup", "rand_ring_long_run_convergence", "lemma2_optimum_monte_carlo",
              "theorem2_ndp_audit", "theorem3_ndp_audit")
FIGURE_SPECS = {i: s for i, s in SPECS.items() if i not in STUDY_ONLY}


def speedup_comparison(label: str, speedup: float, log_se: float, clear: bool,
                       paper: float = math.nan) -> Comparison:
    """One skipping p of a lower-panel claim: the measured ``speedup`` factor (latency of
    p = 1e-4 / latency of p to the same accuracy) against :data:`SPEEDUP_LINE` on the log
    scale, margin :data:`~dpdl_core.verdicts.claims.SPREAD_Z` (2) × ``log_se``, the standard error of
    log ``speedup``. ``clear``: the claim is "a clear speed-up" (positive when the factor is
    above the line), else "no clear speed-up" (positive below it); the two verdicts of one
    factor are each other's mirror image (a factor exactly on the line with no spread is not
    a clear speed-up). An undefined factor (NaN, not positive) or spread (infinite: one run)
    is inconclusive. The comparison's effect is the factor with its interval ``speedup``
    x/÷ exp(2 ``log_se``) (none where the spread is undefined) beside ``paper``, the factor
    the paper predicts (Lemma 2's)."""
    ok = math.isfinite(speedup) and speedup > 0
    diff = math.log(speedup / SPEEDUP_LINE) if ok else math.nan
    margin = SPREAD_Z * log_se if log_se >= 0 else math.inf
    return Comparison(label, diff if clear else -diff, margin, strict=clear,
                      interval=margin if math.isfinite(margin) else 0.0,
                      paper=math.log(paper) if paper > 0 else math.nan,
                      effect=math.log(speedup) if ok else math.nan, log=True)


def lower_scope(spec: ClaimSpec, data_label: str) -> ClaimSpec:
    """``spec`` with the lower panels' scope naming ``data_label``, the data the runs used."""
    return replace(spec, scope=spec.scope.replace(DATA_PLACEHOLDER, data_label))
