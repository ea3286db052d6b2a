"""One claim type for every paper: what the paper says, where, the rule that checks it, what
we measured and a verdict of *holds*, *fails* or *inconclusive*.

A paper declares each of its claims once as a :class:`ClaimSpec` (the paper's words, where
they are, the scope the paper states, the rule in words and, for rules over table cells,
``applies``: the cells the rule looks at). A builder measures and turns the spec into a
:class:`Claim` with :meth:`ClaimSpec.judge` (from :class:`Comparison` s) or
:meth:`ClaimSpec.claim` (a verdict it decided itself). :func:`claims_frame` makes the
DataFrame that notebooks print and tables append.

Verdicts carry their margin: a comparison "a ≥ b" holds when a − b exceeds the margin
(the stated tolerance plus the seed spread), fails when it is below −margin, and is
*inconclusive* in between, so a tie inside the noise is never reported as a failure. The
seed spread is a two-sided 95% band (:data:`COVERAGE`): Student's t at the seeds' degrees of
freedom times the standard error, never under :data:`SPREAD_Z` standard errors
(:func:`spread_z`).
Claims that hold by construction (the algorithm cannot do otherwise) are labelled and
never counted as evidence.

How a study builds claims from stored runs: per cell, the seed values of the two sides
(``a``, ``b``) give ``Comparison.between(label, a, b, tolerance)`` (difference of means,
margin = tolerance + :func:`spread_z` standard errors of that difference), or, where both
sides ran the same seeds, ``Comparison.paired`` on seed → value maps (the standard error of
the per-seed differences); then ``spec.judge(comparisons, tolerance="...")``.

Every comparison carries our effect's 95% interval (``Comparison.interval``, the half-width
of the seed spread inside its margin) and, where the paper's numbers give it, the paper's
effect (``Comparison.paper``): a judged claim's evidence ends with the deciding comparison's
effect, its interval and whether the paper's effect lies inside it or is excluded
(:func:`interval_note`), or why there is no interval (one seed, exact values).
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields

import numpy as np
import pandas as pd

__all__ = ["CALIBRATIONS", "COLUMNS", "COVERAGE", "KINDS", "LOSS_REL_TOL", "NOT_TESTABLE_EPSILON", "UNCALIBRATED",
           "calibration", "deciding", "effect_interval", "effect_note", "interval_note", "mean_interval",
           "worst_calibration", "ROUNDING", "SPREAD_Z", "VERDICTS",
           "Claim", "ClaimSpec", "Comparison", "claims_frame", "combine", "compare", "difference_margin",
           "expect_judged", "margin_from_stats", "margin_note", "paired_margin", "parts_margin", "spread_z",
           "table_view", "welch_df"]

VERDICTS = ("holds", "fails", "inconclusive")
# "paper": a statement of the paper; "check": our own consistency check; "beyond the paper":
# a question the paper does not ask (a variant, a control); "diagnostic": a paper's claim read
# on the package's own version of something the paper states (a corrected theorem), counted
# apart from the paper's claims.
KINDS = ("paper", "check", "beyond the paper", "diagnostic")
# Whether a claim's verdict measures the paper (see :class:`Claim`): "calibrated" where our run
# of the paper's own method reproduces the paper's number in the claim's cell; "not calibrated"
# where it does not (the verdict then judges our operating point, not the paper's, and is
# counted apart); "not reproducible as written" where the paper's stated method does not train
# at all; "no paper number" where the paper reports curves or words only; "analytic" where the
# claim is about the paper's formulas, which we evaluate as printed; "not testable here" where
# the setting cannot test the claim (a trend in ε where the accountant says the noise buys no
# privacy at any of its points); "" where none applies.
CALIBRATIONS = ("calibrated", "not calibrated", "not reproducible as written", "not testable here",
                "no paper number", "analytic", "")
# The calibrations under which a verdict is not a measurement of the paper.
UNCALIBRATED = ("not calibrated", "not reproducible as written", "not testable here")
# An accountant ε above this bounds nothing an adversary would care about: a trend in ε whose
# every point is above it is a trend in noise too small to matter, which cannot test the claim.
NOT_TESTABLE_EPSILON = 100.0
# Two-sided coverage of the seed-spread band of a margin.
COVERAGE = 0.95
# The fewest standard errors a margin counts as noise: the band at many degrees of freedom
# (the normal's 1.96, rounded up), and the factor where no degrees of freedom are known.
SPREAD_Z = 2.0
# One tolerance for every loss comparison of every paper: two training losses within 5% of the
# larger are a tie (plus the seed spread); the papers draw losses as curves, where a gap of a
# few percent is not visible. Losses are the data term only (cross-entropy), so an algorithm's
# regulariser (LEASGD's weight decay) does not enter the comparison.
LOSS_REL_TOL = 0.05
# Relative float rounding below which a difference equals the margin (see :func:`compare`).
ROUNDING = 1e-9


def calibration(label: str, ours: float, paper: float, margin: float, unit: str = "") -> tuple[str, str]:
    """Whether our run of the paper's own method (``label``) reproduces the paper's number:
    "calibrated" when ``|ours - paper| <= margin``, else "not calibrated"; "no paper number"
    when ``paper`` is NaN. Returns the state (:data:`CALIBRATIONS`) and the numbers as text."""
    if not np.isfinite(paper):
        return "no paper number", f"{label} {ours:.3g}{unit}; the paper gives no number here"
    gap = ours - paper
    state = "calibrated" if abs(gap) <= margin else "not calibrated"
    return state, f"{label} {ours:.3g}{unit} vs paper {paper:.3g}{unit} ({gap:+.3g}, margin {margin:.2g})"


def worst_calibration(parts: Sequence[tuple[str, str]]) -> tuple[str, str]:
    """One calibration from several (a claim read on several cells): the least calibrated
    state, with the notes of the cells in that state."""
    order = ["not testable here", "not reproducible as written", "not calibrated", "no paper number", "calibrated",
             "analytic", ""]
    state = min((p[0] for p in parts), key=order.index, default="")
    return state, "; ".join(dict.fromkeys(note for st, note in parts if st == state and note))


def compare(diff: float, margin: float = 0.0, *, strict: bool = False) -> str:
    """Verdict of one comparison, ``diff`` signed so that positive supports the claim.

    Parameters
    ----------
    diff : float
        Measured difference in the claim's direction (e.g. PDSL's accuracy − a baseline's).
    margin : float
        Tolerance plus seed spread (≥ 0): a ``|diff|`` up to it is inconclusive (a
        ``|diff|`` within float rounding, :data:`ROUNDING`, of it counts as on it: a tie at
        the tolerance of printed values is inconclusive, not decided by the last bit).
    strict : bool
        The claim is "greater than" rather than "at least": with no margin an exact tie
        fails instead of holding.

    Returns
    -------
    str
        ``holds``, ``fails`` or ``inconclusive`` (also for a non-finite ``diff``).
    """
    if not margin >= 0:
        raise ValueError(f"margin={margin!r} must be a number >= 0")
    if not np.isfinite(diff):
        return "inconclusive"
    # Printed values differ by exact multiples of their print unit, which floats do not keep
    # (0.03 - 0.02 = 0.010000000000000009): a difference this close to the margin is on it.
    slack = ROUNDING * max(1.0, abs(diff), margin) if np.isfinite(margin) else 0.0
    if margin <= slack and abs(diff) <= slack:
        return "fails" if strict else "holds"
    if diff > margin + slack:
        return "holds"
    if diff < -margin - slack:
        return "fails"
    return "inconclusive"


def combine(verdicts: Iterable[str]) -> str:
    """A claim over several comparisons: fails if any fails, inconclusive if any is (or if
    there are none), holds if all hold."""
    verdicts = set(verdicts)
    if "fails" in verdicts:
        return "fails"
    return "inconclusive" if not verdicts or "inconclusive" in verdicts else "holds"


def spread_z(df: float = math.inf) -> float:
    """Standard errors of a difference counted as noise at ``df`` degrees of freedom.

    Student's t quantile of a two-sided :data:`COVERAGE` band, never under :data:`SPREAD_Z`
    (an infinite or unknown ``df``: :data:`SPREAD_Z`). A mean over three seeds estimates its
    own spread from two degrees of freedom, where 2 SE would be an 82% band and the 95% one
    is 4.30 SE.

    Parameters
    ----------
    df : float
        Degrees of freedom of the standard error (``n − 1`` for ``n`` paired seeds,
        :func:`welch_df` for two independent sides).

    Returns
    -------
    float
    """
    if not df > 0 or math.isinf(df):
        return SPREAD_Z
    from scipy.stats import t  # scipy is slow to import; only margins need it

    return max(SPREAD_Z, float(t.ppf(0.5 + COVERAGE / 2, df)))


def welch_df(parts: Iterable[tuple[float, int]]) -> float:
    """Welch–Satterthwaite degrees of freedom of a sum of independent means' variances.

    Parameters
    ----------
    parts : iterable of (float, int)
        Each mean's squared standard error and its number of seeds. A part of one seed with a
        spread (a run's own fluctuation, not a seed spread) counts as known: it adds variance
        and takes no degree of freedom.

    Returns
    -------
    float
        ``inf`` when no part estimates its spread from seeds.
    """
    parts = [(float(v), int(n)) for v, n in parts if np.isfinite(v) and v > 0]
    den = sum(v ** 2 / (n - 1) for v, n in parts if n > 1)
    return sum(v for v, _ in parts) ** 2 / den if den > 0 else math.inf


def parts_margin(parts: Iterable[tuple[float, int]], tolerance: float = 0.0, z: float | None = None) -> float:
    """Tolerance plus ``z`` standard errors of a sum or difference of independent means.

    Parameters
    ----------
    parts : iterable of (float, int)
        Each mean's squared standard error and its number of seeds (as :func:`welch_df`).
    tolerance : float
    z : float, optional
        Default: :func:`spread_z` at the parts' :func:`welch_df`.
    """
    parts = [(float(v), int(n)) for v, n in parts]
    z = spread_z(welch_df(parts)) if z is None else z
    return float(tolerance + z * math.sqrt(sum(v for v, _ in parts)))


def margin_from_stats(std_a: float, n_a: int, std_b: float, n_b: int, tolerance: float = 0.0,
                      z: float | None = None) -> float:
    """Tolerance plus ``z`` standard errors of mean(a) − mean(b), from each side's standard
    deviation over seeds and number of seeds (a NaN std, one seed, counts as no spread);
    ``z`` defaults to :func:`spread_z` at the :func:`welch_df` of the two sides."""
    return parts_margin([(0.0 if not np.isfinite(s) else float(s) ** 2 / max(int(n), 1), int(n))
                         for s, n in ((std_a, n_a), (std_b, n_b))], tolerance, z)


def difference_margin(a: Sequence[float], b: Sequence[float], tolerance: float = 0.0, z: float | None = None) -> float:
    """:func:`margin_from_stats` of the seed values ``a`` and ``b``; with one seed on a side
    there is no spread to estimate from it (its part of the margin is zero)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    std = [x.std(ddof=1) if len(x) > 1 else 0.0 for x in (a, b)]
    return margin_from_stats(std[0], len(a), std[1], len(b), tolerance, z)


def paired_margin(a: Mapping[int, float], b: Mapping[int, float], tolerance: float = 0.0,
                  z: float | None = None) -> float | None:
    """Tolerance plus ``z`` standard errors of the mean per-seed difference a[s] − b[s], for
    two sides that ran the same seeds (≥ 2), else None; ``z`` defaults to :func:`spread_z`
    at n − 1 degrees of freedom.

    The runs of one seed share what the seed fixes (a run's data partition and initial
    model), so the two sides' seed values are not independent: their difference varies from
    seed to seed less than two independent samples would, and only the per-seed differences
    measure how much (:func:`difference_margin` would treat them as independent).
    """
    if set(a) != set(b) or len(a) < 2:
        return None
    d = np.array([a[s] - b[s] for s in sorted(a)], dtype=float)
    z = spread_z(len(d) - 1) if z is None else z
    return float(tolerance + z * d.std(ddof=1) / math.sqrt(len(d)))


def seed_mean(values: Mapping[int, float]) -> float:
    """The mean of seed → value; NaN (unmeasured) when no seed ran."""
    return float(np.mean(list(values.values()))) if values else math.nan


def mean_difference(a: Sequence[float], b: Sequence[float]) -> float:
    """mean(a) − mean(b); NaN (unmeasured) when a side has no values."""
    return float(np.mean(a) - np.mean(b)) if len(a) and len(b) else math.nan


def effect_interval(a: Mapping[int, float], b: Mapping[int, float]) -> tuple[float, float]:
    """Our effect mean(a) − mean(b) over seeds and the half-width of its two-sided
    :data:`COVERAGE` interval: of the per-seed differences where both sides ran the same
    seeds (≥ 2, :func:`paired_margin`), else of two independent means
    (:func:`difference_margin`; 0 with one seed on both sides)."""
    diff = mean_difference(list(a.values()), list(b.values()))
    half = paired_margin(a, b)
    return diff, half if half is not None else difference_margin(list(a.values()), list(b.values()))


def mean_interval(values: Sequence[float]) -> float:
    """Half-width of the two-sided :data:`COVERAGE` interval of the mean of ``values`` (seed
    values): :func:`spread_z` at n − 1 degrees of freedom times the standard error; 0 for one
    value (no spread to estimate)."""
    x = np.asarray(values, dtype=float)
    return float(spread_z(len(x) - 1) * x.std(ddof=1) / math.sqrt(len(x))) if len(x) > 1 else 0.0


def interval_note(diff: float, half: float, paper_effect: float = math.nan, unit: str = "", *,
                  exact: bool = False, log: bool = False, level: bool = False) -> str:
    """Our effect ``diff`` with its 95% interval ``diff ± half`` beside the paper's effect, and
    whether the paper's magnitude lies inside it: ``effect +2 pp, 95% interval -0.4 to +4.4;
    the paper's +4.1 pp: inside``.

    Parameters
    ----------
    diff : float
        Our effect, signed as the comparison's difference.
    half : float
        Half-width of its two-sided :data:`COVERAGE` interval: 0 where no seed spread
        exists to estimate one from (one seed a side: "one seed, no interval"; ``exact``
        values: "exact values, no interval"); NaN where it was not measured.
    paper_effect : float
        The paper's effect on the same scale; NaN: "the paper gives no effect".
    unit : str
        Printed after our effect, the interval's upper end and the paper's (``" pp"``).
    exact : bool
        The values are exact (analytic or counted), not means over seeds.
    log : bool
        ``diff``, ``half`` and ``paper_effect`` are natural logs of factors (a speed-up): each
        prints as its factor (``1.8x``), the interval as ``exp(diff ± half)``.
    level : bool
        ``diff`` is a level (our accuracy, a round), not a difference: it prints unsigned, as
        ``ours 57.5%`` rather than ``effect +57.5%``.

    Returns
    -------
    str
        The paper's effect is *inside* when ``|paper_effect − diff| ≤ half`` (up to float
        rounding, :data:`ROUNDING`), else *excluded*; without an interval neither is said.
    """
    what = "ours" if level else "effect"
    if not np.isfinite(diff):
        return f"no {what} measured, no interval"

    def num(v: float, unit: str = unit) -> str:
        return f"{math.exp(v):.3g}x" if log else f"{v:.3g}{unit}" if level else f"{v:+.3g}{unit}"

    has_interval = np.isfinite(half) and half > 0
    if has_interval:
        band = f"95% interval {num(diff - half, '')} to {num(diff + half)}"
    elif exact:
        band = "exact values, no interval"
    elif half == 0:
        band = "one seed, no interval"
    else:
        band = "interval not measured"
    if not np.isfinite(paper_effect):
        where = "the paper gives no number" if level else "the paper gives no effect"
    elif has_interval:
        slack = ROUNDING * max(1.0, abs(paper_effect), abs(diff), half)
        where = f"the paper's {num(paper_effect)}: " + ("inside" if abs(paper_effect - diff) <= half + slack
                                                         else "excluded")
    else:
        where = f"the paper's {num(paper_effect)}"
    return f"{what} {num(diff)}, {band}; {where}"


def effect_note(a: Mapping[int, float], b: Mapping[int, float], paper_effect: float, unit: str = " pp") -> str:
    """:func:`interval_note` of :func:`effect_interval` (``a``, ``b``: seed → value maps):
    our effect with its interval beside the paper's, and whether the paper's magnitude lies
    inside it (``effect +2 pp, 95% interval -0.4 to +4.4 pp; the paper's +4.1 pp: inside``)."""
    return interval_note(*effect_interval(a, b), paper_effect, unit)


def margin_note(tolerance: str, seeds: Iterable[int], paired: bool = False) -> str:
    """The margin in words for a claim's ``tolerance`` field: ``tolerance`` plus the seed
    spread over runs of ``seeds`` seeds each (one seed: no spread, said so), of the per-seed
    differences where ``paired`` (:func:`paired_margin`)."""
    counts = sorted(set(int(n) for n in seeds))
    if counts == [1]:
        return f"{tolerance} + no seed spread (1 seed)"
    if paired:
        return (f"{tolerance} + {spread_z(min(counts) - 1):.2g} SE (Student's t, 95%) of the per-seed differences "
                f"over {'/'.join(map(str, counts))} seeds")
    return (f"{tolerance} + t SE (Student's t, 95%, Welch df; at least {SPREAD_Z:g}) "
            f"over {'/'.join(map(str, counts))} seeds")


@dataclass(frozen=True)
class Comparison:
    """One comparison behind a claim: ``diff`` (positive supports the claim) against ``margin``,
    with the 95% interval of ``diff`` and the paper's value of it where the paper gives one.

    Attributes
    ----------
    label : str
        Which cell (e.g. ``fully_connected eps=0.1 M=10: PDSL vs DP-CGA``).
    diff, margin : float
    strict : bool
        See :func:`compare`.
    interval : float
        Half-width of the two-sided :data:`COVERAGE` interval of ``diff`` (the margin less
        its tolerance where the margin is a tolerance plus the seed spread); 0 where there is
        no spread to estimate one from; NaN where not measured (see :func:`interval_note`).
    paper : float
        The paper's value of ``diff`` (same sign and unit); NaN where the paper gives none.
    unit : str
        The unit of ``diff`` as printed after a number (``" pp"``).
    exact : bool
        ``diff`` is exact (analytic, counted), not a mean over seeds: no interval exists.
    effect : float
        Our effect where ``diff`` is not it (a band's half-width less the gap between our
        effect and a target): the effect the interval, ``paper`` and the note are about;
        NaN: ``diff`` is the effect.
    log : bool
        The effect, its interval and ``paper`` are natural logs of factors (see
        :func:`interval_note`).
    level : bool
        The effect is a level (our accuracy against the paper's), not a difference.
    """

    label: str
    diff: float
    margin: float = 0.0
    strict: bool = False
    interval: float = math.nan
    paper: float = math.nan
    unit: str = ""
    exact: bool = False
    effect: float = math.nan
    log: bool = False
    level: bool = False

    @property
    def verdict(self) -> str:
        return compare(self.diff, self.margin, strict=self.strict)

    @property
    def note(self) -> str:
        """Our effect, its interval and the paper's effect (:func:`interval_note`)."""
        ours = self.diff if math.isnan(self.effect) else self.effect
        return interval_note(ours, self.interval, self.paper, self.unit, exact=self.exact, log=self.log,
                             level=self.level)

    @classmethod
    def between(cls, label: str, a: Sequence[float], b: Sequence[float], tolerance: float = 0.0,
                strict: bool = False, *, paper: float = math.nan, unit: str = "") -> Comparison:
        """"mean(a) ≥ mean(b)" over the seed values ``a`` and ``b`` (see :func:`difference_margin`);
        ``paper``: the paper's mean(a) − mean(b); a side with no values leaves it unmeasured (NaN)."""
        return cls(label, mean_difference(a, b), difference_margin(a, b, tolerance), strict,
                   difference_margin(a, b), paper, unit)

    @classmethod
    def paired(cls, label: str, a: Mapping[int, float], b: Mapping[int, float], tolerance: float = 0.0,
               strict: bool = False, *, paper: float = math.nan, unit: str = "") -> Comparison:
        """"mean(a) ≥ mean(b)" over seed → value maps: the margin of the per-seed differences
        where both sides ran the same seeds (:func:`paired_margin`), else as :meth:`between`;
        ``paper``: the paper's mean(a) − mean(b)."""
        margin = paired_margin(a, b, tolerance)
        if margin is None:
            return cls.between(label, list(a.values()), list(b.values()), tolerance, strict, paper=paper, unit=unit)
        diff, half = effect_interval(a, b)
        return cls(label, diff, margin, strict, half, paper, unit)


def deciding(comparisons: Sequence[Comparison]) -> Comparison | None:
    """The comparison that decides a claim over ``comparisons`` (:func:`combine`): of those
    whose verdict is the claim's, the one furthest toward failing (lowest ``diff − margin``;
    an unmeasured one first); None when there are none."""
    if not comparisons:
        return None
    verdict = combine(c.verdict for c in comparisons)
    pool = [c for c in comparisons if c.verdict == verdict] or list(comparisons)
    return min(pool, key=lambda c: c.diff - c.margin if np.isfinite(c.diff - c.margin) else -math.inf)


def _summary(comparisons: Sequence[Comparison], effect: bool = True) -> str:
    """``k of n hold``, then the comparisons that did not, with their numbers, then (where
    ``effect``) the deciding comparison's effect, its 95% interval and the paper's effect
    (:func:`deciding`, :attr:`Comparison.note`)."""
    n = len(comparisons)
    if not n:
        return "no comparison ran"
    out = [f"{sum(c.verdict == 'holds' for c in comparisons)} of {n} hold"]
    for v in ("fails", "inconclusive"):
        bad = [c for c in comparisons if c.verdict == v]
        if bad:
            out.append(f"{v}: " + "; ".join(f"{c.label} ({c.diff:+.3g}, margin {c.margin:.3g})"
                                            if np.isfinite(c.diff) else c.label for c in bad))
    if effect:
        c = deciding(comparisons)
        out.append(f"deciding {c.label}: {c.note}" if n > 1 else c.note)
    return "; ".join(out)


@dataclass(frozen=True)
class _Stated:
    """What the paper says and how we check it: the fields a spec and its claim share.

    Attributes
    ----------
    paper : str
        The paper's package name (``pdsl``).
    id : str
        Unique within the paper (``tab01.best``).
    statement : str
        The claim in one line (the ``claim`` column of every claims table).
    quote : str
        The paper's words, verbatim from its text (empty for checks and beyond-the-paper claims).
    where : str
        Section, figure, table or line (``§VI-C, Table I``).
    scope : str
        Where the paper says it holds, in words (``fully connected graphs``).
    rule : str
        How we check it, in words.
    kind : str
        One of :data:`KINDS`.
    by_construction : bool
        The algorithm cannot do otherwise: reported, never counted as evidence.
    """

    paper: str
    id: str
    statement: str
    quote: str
    where: str
    scope: str
    rule: str

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"kind={self.kind!r} must be one of {KINDS}")
        if self.kind == "paper" and not self.quote:
            raise ValueError(f"claim {self.paper}/{self.id}: a paper's claim needs its quote")


@dataclass(frozen=True)
class ClaimSpec(_Stated):
    """A claim as the paper makes it, before anything is measured (fields of
    :class:`_Stated`, and ``applies``).

    Attributes
    ----------
    applies : mapping
        Column → allowed values: the cells the rule looks at (the scope, machine-readable);
        empty: every cell of the output.
    """

    applies: Mapping[str, tuple] = field(default_factory=dict)
    kind: str = "paper"
    by_construction: bool = False

    def select(self, df: pd.DataFrame) -> pd.DataFrame:
        """The rows of ``df`` inside the claim's scope (:attr:`applies`)."""
        keep = np.ones(len(df), dtype=bool)
        for col, allowed in self.applies.items():
            keep &= df[col].isin(allowed).to_numpy()
        return df[keep]

    def claim(self, verdict: str, evidence: str | Mapping = "", tolerance: str = "", condition: str = "") -> Claim:
        """The claim with a verdict decided by the caller."""
        stated = {f.name: getattr(self, f.name) for f in fields(_Stated)}
        return Claim(**stated, evidence=evidence, tolerance=tolerance, verdict=verdict,
                     by_construction=self.by_construction, kind=self.kind, condition=condition)

    def judge(self, comparisons: Sequence[Comparison], tolerance: str = "", condition: str = "",
              effect: bool = True) -> Claim:
        """The claim over ``comparisons`` (:func:`combine`), their summary as the evidence;
        ``effect``: the summary ends with the deciding comparison's effect, its 95% interval
        and the paper's (False where the caller shows it elsewhere)."""
        return self.claim(combine(c.verdict for c in comparisons), _summary(comparisons, effect), tolerance,
                          condition)


@dataclass(frozen=True)
class Claim(_Stated):
    """A claim of a paper (or a check of ours) with what we measured and the verdict (fields
    of :class:`_Stated`, and these).

    Attributes
    ----------
    evidence : str or mapping
        The measured numbers.
    tolerance : str
        The tolerance and seed spread the verdict used (``0.1 pp + 4.3 SE (Student's t,
        95%) of the per-seed differences over 3 seeds``).
    verdict : str
        ``holds``, ``fails`` or ``inconclusive``.
    condition : str
        The setting we measured under, where a claim is judged more than once (a noise
        mode, a dataset); empty otherwise.
    calibration : str
        One of :data:`CALIBRATIONS`: whether our run of the paper's own method reproduces
        the paper's number in this setting; set by the study that judges the claim.
    calibration_note : str
        The numbers behind it (``DPDL 45.5 vs the paper's 64.0 (-18.5 pp; margin 2.9)``).
    """

    evidence: str | Mapping
    tolerance: str
    verdict: str
    by_construction: bool = False
    kind: str = "paper"
    condition: str = ""
    calibration: str = ""
    calibration_note: str = ""

    def __post_init__(self):
        super().__post_init__()
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict={self.verdict!r} must be one of {VERDICTS}")
        if self.calibration not in CALIBRATIONS:
            raise ValueError(f"calibration={self.calibration!r} must be one of {CALIBRATIONS}")

    def calibrated(self, state: str, note: str = "") -> "Claim":
        """The claim with its calibration (one of :data:`CALIBRATIONS`) and the numbers behind it."""
        return dataclasses.replace(self, calibration=state, calibration_note=note)

    @property
    def counts_as_evidence(self) -> bool:
        """Whether the verdict says anything about the replication (not by construction)."""
        return not self.by_construction


# The columns of :func:`claims_frame`, in order.
COLUMNS = ("claim", "verdict", "calibration", "evidence", "tolerance", "condition", "where", "scope", "quote", "rule",
           "by_construction", "kind", "paper", "id")
# What a table shows under itself (the full frame stays in the builder's return value).
SHOWN = {"claim": "claim of the paper", "condition": "setting", "where": "where", "verdict": "at this scale",
         "calibration": "calibrated", "tolerance": "tolerance", "evidence": "evidence"}


def _text(evidence) -> str:
    if isinstance(evidence, Mapping):
        return "; ".join(f"{k}: {v}" for k, v in evidence.items())
    return str(evidence)


def claims_frame(claims: Sequence[Claim]) -> pd.DataFrame:
    """One row per claim, columns :data:`COLUMNS` (the evidence of a claim that holds by
    construction starts by saying so)."""
    rows = [{"claim": c.statement, "verdict": c.verdict,
             "calibration": f"{c.calibration}: {c.calibration_note}" if c.calibration_note else c.calibration,
             "evidence": ("by construction, not evidence: " if c.by_construction else "") + _text(c.evidence),
             "tolerance": c.tolerance, "condition": c.condition, "where": c.where, "scope": c.scope,
             "quote": c.quote, "rule": c.rule, "by_construction": c.by_construction, "kind": c.kind,
             "paper": c.paper, "id": c.id} for c in claims]
    return pd.DataFrame(rows, columns=list(COLUMNS))


def table_view(frame: pd.DataFrame) -> pd.DataFrame:
    """The columns of a :func:`claims_frame` that a table prints under itself, renamed
    (:data:`SHOWN`); the ``setting`` column only where some claim has one."""
    cols = [c for c in SHOWN if c not in ("condition", "calibration") or frame[c].astype(bool).any()]
    return frame[cols].rename(columns=SHOWN)


def expect_judged(frame: pd.DataFrame, ids: Iterable[str], conditions: Iterable[str] | None = None) -> None:
    """Check that ``frame`` (a :func:`claims_frame`) judges exactly the claims ``ids``, each
    once per setting of ``conditions`` (when given), each with its evidence: what a notebook's
    last cell asserts. A claim its builder dropped (a cell that did not run, a renamed spec)
    fails it; that every verdict is a valid one cannot fail, since a :class:`Claim` holds no
    other.

    Raises
    ------
    AssertionError
        Naming the claims missing, unexpected, repeated or without evidence.
    """
    want, got = set(ids), set(frame["id"])
    if got != want:
        raise AssertionError(f"claims judged: missing {sorted(want - got)}, unexpected {sorted(got - want)}")
    if conditions is not None:
        pairs = frame.groupby(["id", "condition"]).size()
        expected = {(i, c) for i in want for c in conditions}
        if set(pairs.index) != expected or (pairs != 1).any():
            raise AssertionError(f"claims per setting: expected each of {sorted(want)} once in each of "
                                 f"{sorted(set(conditions))}, got {pairs.to_dict()}")
    blank = sorted(frame.loc[frame["evidence"].astype(str).str.strip() == "", "id"])
    if blank:
        raise AssertionError(f"claims without evidence: {blank}")
