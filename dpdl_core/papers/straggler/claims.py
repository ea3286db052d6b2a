"""The straggler paper's statements about Fig. 2 (Sec. VI, L223–233 of the text) and our own
consistency checks, as :class:`~dpdl_core.claims.ClaimSpec` s; the rules run in
:func:`~dpdl_core.papers.straggler.figures.check_claims`.

"Clear speed-up" and "no clear speed-up" share one threshold, :data:`NO_SPEEDUP`, on the
accuracy gain at a common latency, and are mirror images (:func:`speedup_comparison`): a
speed-up is clear when the gain minus 2 SE is above it, not clear when the gain plus 2 SE is
below it, and undecided in between, so fewer runs give *inconclusive*, never an easier
*holds* for either. "Trade-offs look similar across latency models" is *inconclusive* by
construction (Theorems 1–3 do not depend on the latency model, so our upper panels are
identical curves; the paper gives no criterion for "similar").

The lower panels' scope names the data of the run (:func:`lower_scope`): the paper's [39] is
California housing (d = 8, the study's data); the notebooks fall back to the Boston file.
"""
from __future__ import annotations

from dataclasses import replace

from ...claims import ClaimSpec, Comparison

__all__ = ["DATA_PLACEHOLDER", "NO_SPEEDUP", "SPECS", "lower_scope", "speedup_comparison"]

PAPER = "straggler"
# An accuracy gain at equal latency of 3 pp is the line between "no clear" and "clear"
# speed-up: the spec's own band of agreement for this accuracy (its §5 sanity band, ±0.03).
NO_SPEEDUP = 0.03
_UPPER = "upper panels (Theorems 1-3), every p in {1e-4, 1/2, 7/10}"
# Replaced by the data of the run when a claim is judged (:func:`lower_scope`).
DATA_PLACEHOLDER = "the housing data of the run"
_LOWER = f"lower panels: SS-Rand-Ring, {DATA_PLACEHOLDER}, paired runs at a common Lemma 1 latency"


def _spec(id_, statement, quote, where, scope, rule, kind="paper", by_construction=False) -> ClaimSpec:
    return ClaimSpec(PAPER, id_, statement, quote, where, scope, rule, kind=kind, by_construction=by_construction)


SPECS = {s.id: s for s in (
    _spec("lemma2_p_star", "Lemma 2 gives p* ≈ 0, 0.710, 0.737 (exponential, gamma, Pareto II)",
          "close to the values of $p$ given by Lemma 2, respectively 0 and $0.710/0.737$ for the exponential and "
          "gamma/Pareto delay models", "Sec. VI-A, L223", "the three latency models",
          "optimal p of Lemma 2 rounded to 3 decimals equals the paper's"),
    *(_spec(f"latency_upper_left.{k}", f"latency (h_max) increases toward the upper left: {label}",
            "parameterized by the average latency (Lemma 1), which increases toward the upper left corner",
            "Sec. VI-A, L223", _UPPER, "as h_max grows, the Thm 1 bound decreases and ε_ss does not decrease, for every p")
      for k, label in (("ss_ring", "SS-Ring, Thm 2"), ("printed", "SS-Rand-Ring, Thm 3 as printed"),
                       ("diagnostic", "SS-Rand-Ring, Thm 3 diagnostic (ours)"))),
    _spec("similar_across_models", "trade-offs look similar for all latency models",
          "the trade-offs look similar for all latency models considered", "Sec. VI-A, L225",
          "upper panels, the three latency models",
          "none can be measured: Theorems 1-3 depend on p, not on the latency model, so the upper-panel curves are "
          "identical by construction and only the latency labels differ; the paper gives no criterion for 'similar'",
          by_construction=True),
    *(_spec(f"rand_ring_small_error.{k}", f"SS-Rand-Ring better at small error, especially p = 1e-4 ({v})",
            "SS-Rand-Ring gives better trade-off curves (especially for $p = 10^{-4}$ , i.e., virtually no skipping) for "
            "smaller values of error in function minimization", "Sec. VI-A, L225", _UPPER,
            "ε(SS-Ring)/ε(SS-Rand-Ring) > 1 at the smallest common Thm 1 error for every p, largest at p = 1e-4")
      for k, v in (("printed", "Thm 3 as printed"), ("diagnostic", "Thm 3 diagnostic (ours)"))),
    *(_spec(f"rand_ring_large_error.{k}", f"SS-Rand-Ring worse at high error, i.e. early ({v})",
            "while the situation changes for higher values of error (i.e., at the initial stages of Algorithm 1's "
            "execution)", "Sec. VI-A, L225", _UPPER,
            "ε(SS-Ring)/ε(SS-Rand-Ring) < 1 at the largest common Thm 1 error for every p")
      for k, v in (("printed", "Thm 3 as printed"), ("diagnostic", "Thm 3 diagnostic (ours)"))),
    _spec("ss_ring_no_skip_worst", "SS-Ring curve for p = 1e-4 is the worst (skipping helps)",
          "the SS-Ring curve for $p = 10^{-4}$ is the worst, which means that skipping helps", "Sec. VI-A, L227",
          _UPPER, "ε(SS-Ring, p=1e-4) above ε(SS-Ring, p) at every common Thm 1 error, for the other p"),
    _spec("ss_ring_on_top", "SS-Ring curves for p = 1/2 and 7/10 almost on top of each other",
          "there is not much difference between the SS-Ring curves for $p = 1/2$ and $p = 7/10$ (they are almost on "
          "top of each other and hence difficult to distinguish)", "Sec. VI-A, L227", _UPPER,
          "largest relative ε difference at common Thm 1 error ≤ 10%"),
    *(_spec(f"rand_ring_small_p.{k}", f"SS-Rand-Ring favours small p; no skipping slightly more private ({v})",
            "SS-Rand-Ring favors smaller values of $p$ (i.e., larger timeout)", "Sec. VI-A, L227; L233", _UPPER,
            "ε(SS-Rand-Ring) non-decreasing in p at every common Thm 1 error")
      for k, v in (("printed", "Thm 3 as printed"), ("diagnostic", "Thm 3 diagnostic (ours)"))),
    _spec("no_speedup_exponential", "no clear speed-up from skipping for the exponential model",
          "We observe that skipping achieves a clear speed-up compared to no skipping, except for the exponential "
          "delay model", "Sec. VI-B, L233", _LOWER + ", exponential model",
          f"every skipping p: accuracy gain over p=1e-4 plus 2 SE below {NO_SPEEDUP} holds; gain minus 2 SE above it "
          "(a clear speed-up) fails; otherwise (e.g. too few runs) inconclusive"),
    *(_spec(f"speedup.{k}", f"skipping gives a clear speed-up ({label})",
            "We observe that skipping achieves a clear speed-up compared to no skipping, except for the exponential "
            "delay model", "Sec. VI-B, L233", f"{_LOWER}, {label}",
            f"every skipping p: accuracy gain over p=1e-4 minus 2 SE above {NO_SPEEDUP} holds; gain plus 2 SE below "
            "it (no clear speed-up) fails; otherwise (e.g. too few runs) inconclusive")
      for k, label in (("gamma", "gamma (shape 1/4, scale 1)"), ("lomax", "Pareto II (shape 3, scale 2)"))),
    _spec("lemma1_monte_carlo", "Lemma 1: Monte Carlo latency of Algorithm 1 matches the closed form", "", "spec §2",
          "every (model, p)", "every |z| < 3 (3 standard errors)", kind="check"),
    _spec("sanity_band", "SS-Rand-Ring accuracy after 20,000 hops within the spec's sanity band", "", "spec §5",
          "SS-Rand-Ring, p in {1e-4, 1/2, 7/10}", "within ±0.03 of 0.72, 0.67, 0.64", kind="check"),
)}


def speedup_comparison(label: str, gain: float, se: float, clear: bool) -> Comparison:
    """One skipping p of a lower-panel claim: ``gain`` (accuracy at p minus at p = 1e-4, at a
    common latency) against :data:`NO_SPEEDUP`, margin 2 ``se``. ``clear``: the claim is "a
    clear speed-up" (positive when the gain is above the line), else "no clear speed-up"
    (positive below it); the two verdicts of one gain are each other's mirror image (a gain
    exactly on the line with no spread is not a clear speed-up)."""
    diff = gain - NO_SPEEDUP
    return Comparison(label, diff if clear else -diff, 2 * se, strict=clear)


def lower_scope(spec: ClaimSpec, data_label: str) -> ClaimSpec:
    """``spec`` with the lower panels' scope naming ``data_label``, the data the runs used."""
    return replace(spec, scope=spec.scope.replace(DATA_PLACEHOLDER, data_label))
