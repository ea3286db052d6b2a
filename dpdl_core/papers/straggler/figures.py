"""Fig. 2 of the paper: privacy, utility and latency trade-offs, and its claims check.

:func:`fig02_tradeoffs` computes every number of the figure at a profile's scale, draws
the 2×3 figure (a column per latency model), saves it, checks the paper's stated claims
(Sec. VI, L223–233 of the text) on the numbers it drew, and returns an
:class:`~dpdl_core.verdicts.outputs.Output`.

Upper panels are analytic (Theorems 1–3, Lemma 1) and depend on the latency model only
through the latency labels (spec §4, "shortcuts"). Lower panels: skips are i.i.d.
Bernoulli(p) whatever the model, so the accuracy-per-hop curves are simulated once per
(scheme, p) and drawn against each model's Lemma 1 latency, hops × (χ + E[min(T, t_ss)]).
"""
from __future__ import annotations

import math
import time
import types
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from ...runs import PROFILES, load_profile
from ...sim import check_choice, check_int
from ...verdicts import SPREAD_Z, Output, caption, claims_frame, deciding, legend_below, save_figure
from .claims import BOOTSTRAP_RESAMPLES, ON_TOP, SPECS, SPEEDUP_LINE, TARGET_FRACTION, lower_scope, speedup_comparison
from .housing import HousingData, load_housing, split_runs
from .latency import LatencyModel, paper_models
from .theorems import SCHEMES, PaperParams, thm1_bound, thm2_epsilon, thm3_as_printed, thm3_diagnostic
from .token_ring import TokenRingConfig, TokenRingResult, run_token_ring

__all__ = ["FIGURE_NAME", "PROBABILITIES", "Fig02Settings", "Speedup", "check_claims", "fig02_tradeoffs",
           "lower_panel_claims", "measured_speedup", "order_verdict", "speedup_factors"]

FIGURE_NAME = "straggler_fig02_tradeoffs"
PROBABILITIES = (1e-4, 0.5, 0.7)  # Sec. VI-A
# Paper's reading of Lemma 2 (L223): p* ≈ 0 (exponential), 0.710 (gamma), 0.737 (Pareto II).
PAPER_P_STAR = {"exponential": 0.0, "gamma": 0.710, "lomax": 0.737}
# Spec §5 sanity band: SS-Rand-Ring, Boston, accuracy after 20,000 hops (20 runs, measured there).
SANITY_HOPS, SANITY_ACC, SANITY_TOL = 20_000, {1e-4: 0.72, 0.5: 0.67, 0.7: 0.64}, 0.03
SPEEDUP = ("; speed-up = latency the p=1e-4 mean curve needs to reach the target accuracy / latency the skipping "
           f"mean curve needs, target {TARGET_FRACTION:.0%} of the way from the accuracy at latency 0 to the lower "
           "final accuracy of the two; 2 SE range = speed-up x/÷ exp(2 SE of its log), bootstrap over {resamples:,} "
           "joint resamples of the paired runs; the accuracy gain at the common latency is shown, not judged")
COLORS = {1e-4: "C0", 0.5: "C1", 0.7: "C2"}
SCHEME_NAMES = {"ss_ring": "SS-Ring", "ss_rand_ring": "SS-Rand-Ring"}


@dataclass(frozen=True)
class Fig02Settings:
    """Scale of Fig. 2 (one profile section).

    Attributes
    ----------
    n_runs : int
        Independent runs averaged in the lower panels (paper: 100).
    hops : int
        Hops per run (spec §5.6: 50,000).
    eval_every : int
        Test accuracy every this many hops.
    upper_points, upper_max_exponent : int
        h_max = n·⌈logspace(0, upper_max_exponent, upper_points)⌉ for the upper panels.
    mc_runs, mc_hops : int
        Monte Carlo check of Lemma 1: runs × hops of Algorithm 1's latency.
    seed : int
        Data splits use seeds seed … seed + n_runs − 1; the hop stream and Monte Carlo use seed.
    """

    n_runs: int = 100
    hops: int = 50_000
    eval_every: int = 100
    upper_points: int = 40
    upper_max_exponent: int = 4
    mc_runs: int = 2000
    mc_hops: int = 1000
    seed: int = 0
    probabilities: tuple[float, ...] = PROBABILITIES

    def __post_init__(self):
        for name in ("n_runs", "hops", "eval_every", "upper_points", "upper_max_exponent", "mc_runs", "mc_hops"):
            check_int(self, name, 1)
        check_int(self, "seed", 0)
        if not all(0 < p < 1 for p in self.probabilities):
            raise ValueError(f"probabilities={self.probabilities!r} must lie in (0, 1) (SS-Ring needs p > 0)")

    @classmethod
    def from_profile(cls, profile: str) -> "Fig02Settings":
        return cls(**load_profile(profile, paper="straggler")["fig02_tradeoffs"])

    def h_max_grid(self, n: int) -> np.ndarray:
        """Upper-panel hops, multiples of n (spec §5.6)."""
        return n * np.unique(np.ceil(np.logspace(0, self.upper_max_exponent, self.upper_points)).astype(np.int64))


def analytic_table(settings: Fig02Settings, params: PaperParams, models: dict[str, LatencyModel]) -> pd.DataFrame:
    """Theorems 1–3 and Lemma 1 latency on the h_max grid, for every p (upper panels)."""
    hm = settings.h_max_grid(params.n)
    frames = []
    for p in settings.probabilities:
        df = pd.DataFrame({"p": p, "h_max": hm})
        df["thm1_ss_ring"] = thm1_bound(hm, p, "ss_ring", params)
        df["thm1_ss_rand_ring"] = thm1_bound(hm, p, "ss_rand_ring", params)
        df["eps_thm2"] = thm2_epsilon(hm, p, params)
        df["eps_thm3_printed"] = thm3_as_printed(hm, p, params)
        df["eps_thm3_diagnostic"] = thm3_diagnostic(hm, p, params)
        for name, m in models.items():
            df[f"latency_{name}"] = m.expected_latency(hm, m.t_ss_for_p(p))
        frames.append(df)
    return pd.concat(frames, ignore_index=True)


def lemma_tables(settings: Fig02Settings, models: dict[str, LatencyModel]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Lemma 1 (closed form and Monte Carlo) per (model, p), and Lemma 2's optimum per model."""
    rng = np.random.default_rng([settings.seed, 2])
    rows = []
    for name, m in models.items():
        for p in settings.probabilities:
            t = m.t_ss_for_p(p)
            mc = m.simulate_latency(settings.mc_hops, t, settings.mc_runs, rng) / settings.mc_hops
            se = mc.std(ddof=1) / math.sqrt(len(mc))
            exact = m.latency_per_hop(t)
            rows.append({"model": name, "p": p, "t_ss": t, "latency_per_hop": exact,
                         "latency_per_update": m.time_per_update(t), "mc_per_hop": mc.mean(),
                         "mc_se": se, "mc_z": (mc.mean() - exact) / se})
    opt = []
    for name, m in models.items():
        t, p, g = m.optimal_t_ss()
        opt.append({"model": name, "t_ss_opt": t, "p_opt": p, "latency_per_update_opt": g,
                    "paper_p_opt": PAPER_P_STAR[name]})
    return pd.DataFrame(rows), pd.DataFrame(opt)


def accuracy_runs(data: HousingData, settings: Fig02Settings, params: PaperParams,
                  progress: bool | None) -> tuple[dict, pd.DataFrame]:
    """Algorithm 1 on the data, every (scheme, p), all runs at once (lower panels)."""
    splits = split_runs(data, settings.n_runs, n_nodes=params.n, seed=settings.seed)
    runs, frames = {}, []
    for scheme in SCHEMES:
        for p in settings.probabilities:
            cfg = TokenRingConfig(scheme=scheme, p=p, h_max=settings.hops, zeta=params.zeta, sigma=params.sigma,
                                  radius=params.radius, eval_every=settings.eval_every, seed=settings.seed)
            res = run_token_ring(splits, cfg, progress=progress, desc=f"{SCHEME_NAMES[scheme]} p={p:g}")
            runs[(scheme, p)] = res
            se = res.accuracy.std(axis=1, ddof=1) / math.sqrt(res.accuracy.shape[1]) if settings.n_runs > 1 else np.nan
            frames.append(pd.DataFrame({"scheme": scheme, "p": p, "hop": res.hops,
                                        "accuracy": res.mean_accuracy, "se": se}))
    return runs, pd.concat(frames, ignore_index=True)


def _common(xa, ya, xb, yb, k: int = 60):
    """Both curves ε(x) interpolated (log–log) on k points of their common x range."""
    lo, hi = max(np.min(xa), np.min(xb)), min(np.max(xa), np.max(xb))
    if not lo < hi:
        return None
    xs = np.logspace(np.log10(lo), np.log10(hi), k)

    def on_xs(x, y):
        order = np.argsort(x)
        return np.exp(np.interp(np.log(xs), np.log(x[order]), np.log(y[order])))

    return xs, on_xs(xa, ya), on_xs(xb, yb)


def _acc_at_latency(res: TokenRingResult, per_hop: float, budget: float) -> np.ndarray:
    """Every run's test accuracy at Lemma 1 latency ``budget`` (linear in hops between evaluations)."""
    lat = res.hops * per_hop
    return np.array([np.interp(budget, lat, res.accuracy[:, r]) for r in range(res.accuracy.shape[1])])


def _first_crossing(mean: np.ndarray, lat: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Per column of ``mean`` (E, B) (accuracy at latencies ``lat``, E), the latency at which it
    first reaches ``target`` (B), linear between evaluations; 0 if it starts there, ∞ if never."""
    above = mean >= target
    cols = np.arange(mean.shape[1])
    i = above.argmax(axis=0)
    prev = np.maximum(i - 1, 0)
    a0, a1 = mean[prev, cols], mean[i, cols]
    # Where i > 0, a0 < target <= a1, so a1 > a0.
    frac = np.where(i > 0, (target - a0) / np.where(a1 > a0, a1 - a0, 1.0), 0.0)
    return np.where(above.any(axis=0), lat[prev] + frac * (lat[i] - lat[prev]), np.inf)


def speedup_factors(base: np.ndarray, base_lat: np.ndarray, other: np.ndarray, other_lat: np.ndarray,
                    fraction: float = TARGET_FRACTION) -> tuple[np.ndarray, np.ndarray]:
    """Speed-up of the ``other`` accuracy curves over the ``base`` ones (columns of (E, B)
    arrays, at latencies ``base_lat`` / ``other_lat``, the first at latency 0): the latency
    ``base`` needs to first reach the target over the latency ``other`` needs. The target is
    ``fraction`` of the way from the higher of the two starting accuracies to the lower of the
    two final ones, so both curves reach it. NaN where that lower final accuracy is not above
    the start (no learning: no target to reach). Returns (factors, targets)."""
    start = np.maximum(base[0], other[0])
    final = np.minimum(base[-1], other[-1])
    target = start + fraction * (final - start)
    with np.errstate(divide="ignore", invalid="ignore"):
        factor = _first_crossing(base, base_lat, target) / _first_crossing(other, other_lat, target)
    return np.where(final > start, factor, np.nan), target


@dataclass(frozen=True)
class Speedup:
    """A measured speed-up factor (:func:`measured_speedup`) and its spread.

    Attributes
    ----------
    factor : float
        From the mean curves of all runs (the curves the figure draws); NaN if undefined.
    log_se : float
        Bootstrap standard error of log ``factor`` (∞ with one run or a resample without a
        defined factor).
    target : float
        The target accuracy of ``factor``.
    resamples : int
    """

    factor: float
    log_se: float
    target: float
    resamples: int

    @property
    def low(self) -> float:
        return self.factor * math.exp(-SPREAD_Z * self.log_se) if math.isfinite(self.log_se) else 0.0

    @property
    def high(self) -> float:
        return self.factor * math.exp(SPREAD_Z * self.log_se) if math.isfinite(self.log_se) else math.inf


def measured_speedup(base, base_per_hop: float, other, per_hop: float, *, resamples: int = BOOTSTRAP_RESAMPLES,
                     seed: int = 0, fraction: float = TARGET_FRACTION) -> Speedup:
    """Speed-up of skipping curve ``other`` over no skipping ``base`` (each with ``hops``,
    ``accuracy`` (E, R) and ``mean_accuracy``; run r of both paired), on the Lemma 1 latency
    axis hops × per hop (:func:`speedup_factors` of the mean curves), with the standard error
    of its log from a bootstrap over the runs: ``resamples`` draws of R run indices with
    replacement (seeded by ``seed``), the same indices for both curves."""
    base_lat, other_lat = base.hops * base_per_hop, other.hops * per_hop
    point, target = speedup_factors(base.mean_accuracy[:, None], base_lat, other.mean_accuracy[:, None], other_lat,
                                    fraction)
    factor, runs = float(point[0]), base.accuracy.shape[1]
    if other.accuracy.shape[1] != runs:
        raise ValueError(f"paired runs needed: {runs} and {other.accuracy.shape[1]} runs")
    log_se = math.inf
    if runs > 1 and np.isfinite(factor) and factor > 0:
        rng = np.random.default_rng([seed, 3])
        weights = rng.multinomial(runs, np.full(runs, 1 / runs), size=resamples).T / runs  # (R, B): resampled means
        boot, _ = speedup_factors(base.accuracy @ weights, base_lat, other.accuracy @ weights, other_lat, fraction)
        if np.all(np.isfinite(boot) & (boot > 0)):
            log_se = float(np.log(boot).std(ddof=1))
    return Speedup(factor, log_se, float(target[0]), resamples)


# Two curves with no common Thm 1 error range: nothing to compare (an ordering claim on them
# is inconclusive).
_NO_RANGE = (np.array([]), np.array([]), np.array([]))


def _exceptions(common, ok: np.ndarray) -> str:
    """Where the claimed order is reversed, as a range of Thm 1 error (empty if nowhere)."""
    if not ok.size:
        return " (no common range)"
    if ok.all():
        return ""
    xs = common[0][~ok]
    return f" (reversed at Thm 1 error {xs.min():.3g}–{xs.max():.3g})"


def order_verdict(margins: list[np.ndarray], every_pair: bool) -> str:
    """An ordering claim on the upper panels read at the figure's resolution :data:`ON_TOP`.

    Parameters
    ----------
    margins : list of arrays
        Per pair of curves, the relative margin ε_a/ε_b − 1 by which the curve the claim puts
        higher exceeds the other at each common Thm 1 error (negative where reversed).
    every_pair : bool
        Whether every pair must show its order (one curve above each other one) or one pair
        showing it suffices (a monotone trend that allows ties).

    Returns
    -------
    str
        ``fails`` where some pair is reversed by more than ``ON_TOP`` somewhere (a reversal
        the figure shows); ``holds`` where none is and the order shows (a margin above
        ``ON_TOP`` somewhere) in every pair, or in some pair; ``inconclusive`` otherwise.
    """
    if any((m < -ON_TOP).any() for m in margins):
        return "fails"
    shows = [(m > ON_TOP).any() for m in margins]
    return "holds" if (all(shows) if every_pair else any(shows)) else "inconclusive"


def _unseen(ps, margins: np.ndarray) -> str:
    """The p whose margin the figure cannot show (within :data:`ON_TOP` either way), as a note."""
    hidden = [f"p={p:g}" for p, m in zip(ps, margins) if abs(m) <= ON_TOP]
    return f" (within {ON_TOP:.0%} of 1, which the figure cannot show: {', '.join(hidden)})" if hidden else ""


def _order_note(frac: list[float], notes: list[str], margins: list[np.ndarray], names: list[str]) -> str:
    """Each pair's share of points in the claimed order, where it is reversed, and its
    largest reversal against :data:`ON_TOP`."""
    parts = []
    for name, f, n, m in zip(names, frac, notes, margins):
        worst = -float(np.min(m)) if m.size else 0.0
        rev = (f"; largest reversal {worst:.1%} ({'over' if worst > ON_TOP else 'within'} {ON_TOP:.0%})"
               if worst > 0 else "")
        parts.append(f"{name}: {f:.0%} of points{n}{rev}")
    return ", ".join(parts)


def lower_panel_claims(runs: dict, lemma1: pd.DataFrame, probabilities, models, *, data_label: str,
                       seed: int = 0, resamples: int = BOOTSTRAP_RESAMPLES) -> list:
    """The lower panels' claims (SS-Rand-Ring, the text's scheme): per latency model in
    ``models`` (names), the speed-up of every skipping p over ``probabilities[0]`` (no
    skipping) judged against :data:`.claims.SPEEDUP_LINE` (:func:`measured_speedup`,
    :func:`.claims.speedup_comparison`); beside it, not judged, the paired accuracy gain ± SE
    at the common latency (the smallest final latency of the curves) and Lemma 2's predicted
    factor. ``lemma1``: per (model, p) ``latency_per_hop`` and ``latency_per_update``."""
    ps = tuple(probabilities)
    per_hop = lemma1.set_index(["model", "p"])["latency_per_hop"]
    per_update = lemma1.set_index(["model", "p"])["latency_per_update"]
    base_res = runs[("ss_rand_ring", ps[0])]
    n_runs = base_res.accuracy.shape[1]
    out = []
    for name in models:
        budget = min(float(runs[("ss_rand_ring", p)].hops[-1]) * per_hop[(name, p)] for p in ps)
        base = _acc_at_latency(base_res, per_hop[(name, ps[0])], budget)
        parts, comps = [], []
        for p in ps[1:]:
            res = runs[("ss_rand_ring", p)]
            sp = measured_speedup(base_res, per_hop[(name, ps[0])], res, per_hop[(name, p)], resamples=resamples,
                                  seed=seed)
            clear = name != "exponential"
            if np.isfinite(sp.factor):
                spread = (f"2 SE range {sp.low:.2f}-{sp.high:.2f}x" if math.isfinite(sp.log_se)
                          else "spread undefined: one run or a resample without learning")
                speed = f"speed-up {sp.factor:.2f}x ({spread}) to accuracy {sp.target:.3f}"
            else:
                speed = "speed-up n/a (the curves do not rise above their start)"
            lemma2 = per_update[(name, ps[0])] / per_update[(name, p)]
            comps.append(speedup_comparison(f"p={p:g}: {speed}", sp.factor, sp.log_se, clear, paper=lemma2))
            diff = _acc_at_latency(res, per_hop[(name, p)], budget) - base
            se = diff.std(ddof=1) / math.sqrt(len(diff)) if len(diff) > 1 else math.inf
            parts.append(f"p={p:g}: {speed}, Lemma 2 {lemma2:.2f}x, "
                         f"accuracy gain {diff.mean():+.3f} ± {se:.3f} at latency {budget:.4g}")
        spec = lower_scope(SPECS["no_speedup_exponential" if name == "exponential" else f"speedup.{name}"], data_label)
        rule = (f"speed-up against the line {SPEEDUP_LINE}x, margin {SPREAD_Z:g} SE over {n_runs} paired runs "
                f"(bootstrap SE of the log speed-up, {resamples:,} resamples); "
                + ("no clear speed-up: below the line" if name == "exponential" else "clear speed-up: above the line"))
        judged = spec.judge(comps, rule)
        held = judged.evidence.split(";")[0]  # "k of n hold"; the numbers follow in full
        decide = deciding(comps)
        effect = f"; deciding {decide.label.split(':')[0]}: {decide.note}"
        out.append(replace(judged, evidence=f"{held}: " + "; ".join(parts) + effect
                           + SPEEDUP.format(resamples=resamples)))
    return out


def check_claims(analytic: pd.DataFrame, lemma1: pd.DataFrame, lemma2: pd.DataFrame, runs: dict,
                 settings: Fig02Settings, models: dict[str, LatencyModel], *, data_label: str) -> pd.DataFrame:
    """The paper's statements about Fig. 2 (L223–233, :data:`.claims.SPECS`) checked on the
    computed numbers, as :func:`~dpdl_core.verdicts.claims.claims_frame`. The analytic rows are exact
    (no tolerance); the lower-panel rows (:func:`lower_panel_claims`) judge the measured
    speed-up of paired runs with its bootstrap spread, their scope naming ``data_label``,
    the data the runs used."""
    ps = settings.probabilities
    out = []
    exact = "exact (analytic)"

    def add(spec_id, ok, measured, tolerance=exact):
        verdict = ok if isinstance(ok, str) else "holds" if ok else "fails"
        out.append(SPECS[spec_id].claim(verdict, measured, tolerance))

    resolution = f"{ON_TOP:.0%} relative (the paper's 'on top of each other')"

    got = {r.model: r.p_opt for r in lemma2.itertuples()}
    add("lemma2_p_star", all(round(got[k], 3) == v for k, v in PAPER_P_STAR.items()),
        ", ".join(f"{k}: {v:.4f}" for k, v in got.items()), "3 decimals")

    def curve(p, x, y):
        sel = analytic.p == p
        return analytic.loc[sel, x].to_numpy(), analytic.loc[sel, y].to_numpy()

    variants = {"printed": "eps_thm3_printed", "diagnostic": "eps_thm3_diagnostic"}
    for key, x, y in [("ss_ring", "thm1_ss_ring", "eps_thm2")] + [
        (k, "thm1_ss_rand_ring", c) for k, c in variants.items()
    ]:
        ok, worst = True, []
        for p in ps:
            xv, yv = curve(p, x, y)
            left, up = bool(np.all(np.diff(xv) < 0)), bool(np.all(np.diff(yv) >= 0))
            ok &= left and up
            worst.append(f"p={p:g}: ε {yv[0]:.3g}→{yv[-1]:.3g}")
        add(f"latency_upper_left.{key}", ok, "; ".join(worst))

    # Not measurable (see .claims): say what the upper panels share and what differs.
    first = analytic[analytic.p == ps[0]]
    row = first.iloc[len(first) // 2]
    h = int(row["h_max"])
    out.append(SPECS["similar_across_models"].claim(
        "inconclusive", "upper-panel ε vs Thm 1 curves identical for every model (one set of columns); latency labels "
        f"at h_max = {h}, p = {ps[0]:g}: " + ", ".join(f"{n}: {row[f'latency_{n}']:.4g}" for n in models),
        "no criterion in the paper"))

    for key, col in variants.items():
        small, large = [], []
        for p in ps:
            c = _common(*curve(p, "thm1_ss_rand_ring", col), *curve(p, "thm1_ss_ring", "eps_thm2"))
            _, rand, ring = c if c is not None else (None, [np.nan], [np.nan])
            small.append(ring[0] / rand[0])
            large.append(ring[-1] / rand[-1])
        small, large = np.array(small), np.array(large)
        # Each ratio's relative margin in the claimed direction, and p = 1e-4's over the next
        # largest ratio ("especially for p = 1e-4").
        better = [np.array([r - 1]) for r in small] + [np.array([small[0] / np.max(small[1:]) - 1])]
        add(f"rand_ring_small_error.{key}", order_verdict(better, every_pair=True),
            ", ".join(f"p={p:g}: {s:.3g}" for p, s in zip(ps, small)) + _unseen(ps, small - 1), resolution)
        add(f"rand_ring_large_error.{key}", order_verdict([np.array([1 / r - 1]) for r in large], every_pair=True),
            ", ".join(f"p={p:g}: {s:.3g}" for p, s in zip(ps, large)) + _unseen(ps, 1 / large - 1), resolution)

    frac, notes, margins = [], [], []
    for q in ps[1:]:
        c = _common(*curve(ps[0], "thm1_ss_ring", "eps_thm2"), *curve(q, "thm1_ss_ring", "eps_thm2")) or _NO_RANGE
        frac.append(np.mean(c[1] > c[2]))
        notes.append(_exceptions(c, c[1] > c[2]))
        margins.append(c[1] / c[2] - 1)
    add("ss_ring_no_skip_worst", order_verdict(margins, every_pair=True),
        _order_note(frac, notes, margins, [f"vs p={q:g}" for q in ps[1:]]), resolution)

    c = _common(*curve(ps[1], "thm1_ss_ring", "eps_thm2"), *curve(ps[2], "thm1_ss_ring", "eps_thm2"))
    gap = float(np.max(np.abs(c[1] / c[2] - 1))) if c else np.nan
    add("ss_ring_on_top", gap <= ON_TOP, f"p = {ps[1]:g} vs {ps[2]:g}: {gap:.1%}", f"{ON_TOP:.0%} relative")

    for key, col in variants.items():
        frac, notes, margins = [], [], []
        for lo_p, hi_p in zip(ps[:-1], ps[1:]):
            c = _common(*curve(lo_p, "thm1_ss_rand_ring", col), *curve(hi_p, "thm1_ss_rand_ring", col)) or _NO_RANGE
            frac.append(np.mean(c[1] <= c[2]))
            notes.append(_exceptions(c, c[1] <= c[2]))
            margins.append(c[2] / c[1] - 1)
        add(f"rand_ring_small_p.{key}", order_verdict(margins, every_pair=False),
            _order_note(frac, notes, margins, [f"p={a:g}≤p={b:g}" for a, b in zip(ps[:-1], ps[1:])]), resolution)

    out += lower_panel_claims(runs, lemma1, ps, models, data_label=data_label, seed=settings.seed)

    z = lemma1["mc_z"].abs()
    add("lemma1_monte_carlo", bool((z < 3).all()),
        f"max |z| = {z.max():.2f} over {len(z)} (model, p) cells, {settings.mc_runs} runs x {settings.mc_hops} hops",
        "3 standard errors")
    if settings.hops >= SANITY_HOPS:
        acc = {p: float(np.interp(SANITY_HOPS, runs[("ss_rand_ring", p)].hops, runs[("ss_rand_ring", p)].mean_accuracy))
               for p in ps if p in SANITY_ACC}
        add("sanity_band", all(abs(a - SANITY_ACC[p]) <= SANITY_TOL for p, a in acc.items()),
            ", ".join(f"p={p:g}: {a:.3f}" for p, a in acc.items()), f"±{SANITY_TOL}")
    else:  # said, not left out: a claim the output cannot reach is inconclusive
        out.append(SPECS["sanity_band"].claim(
            "inconclusive", f"not measured: the profile runs {settings.hops:,} hops, the band is at {SANITY_HOPS:,}",
            f"±{SANITY_TOL}"))
    return claims_frame(out)


def _fmt(x: float) -> str:
    return f"{x:,.0f}" if x >= 100 else f"{x:.3g}"


def _plain_log_ticks(ax) -> None:
    """Log axes with plain numbers (1, 2, 5 × 10^k) instead of the 6×10¹ minor labels."""
    from matplotlib import ticker

    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_locator(ticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        axis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
        axis.set_minor_formatter(ticker.NullFormatter())


def draw(analytic: pd.DataFrame, accuracy: pd.DataFrame, lemma1: pd.DataFrame, settings: Fig02Settings,
         models: dict[str, LatencyModel], n_runs: int):
    """The 2×3 figure: a column per latency model; upper ε vs Thm 1 bound, lower accuracy vs latency."""
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    fig, axes = plt.subplots(2, len(models), figsize=(5.2 * len(models), 9.5))
    per_hop = lemma1.set_index(["model", "p"])["latency_per_hop"]
    top = settings.upper_max_exponent + 1
    for j, (name, m) in enumerate(models.items()):
        ax = axes[0, j]
        for p in settings.probabilities:
            d = analytic[analytic.p == p]
            col = COLORS.get(p)
            ax.plot(d.thm1_ss_ring, d.eps_thm2, "-", color=col)
            ax.plot(d.thm1_ss_rand_ring, d.eps_thm3_printed, "--", color=col)
            ax.plot(d.thm1_ss_rand_ring, d.eps_thm3_diagnostic, ":", color=col, lw=1.2)
            # Latency labels (Lemma 1) at the h_max nearest to 10^2, 10^3, ... hops.
            for e in range(2, top + 1):
                i = int(np.argmin(np.abs(np.log10(d.h_max.to_numpy()) - e)))
                row = d.iloc[i]
                ax.plot(row.thm1_ss_ring, row.eps_thm2, "o", color=col, ms=3.5)
                ax.annotate(_fmt(row[f"latency_{name}"]), (row.thm1_ss_ring, row.eps_thm2), fontsize=6.5,
                            color=col, xytext=(3, 3), textcoords="offset points")
        ax.set(xscale="log", yscale="log", xlabel="Thm 1 bound on E[f(τ) − f*]", ylabel="privacy ε_ss",
               title=f"{m.label}\n(dots: Lemma 1 latency at h_max = 10², 10³, …)")
        _plain_log_ticks(ax)
        ax.grid(True, which="major", alpha=0.3)

        ax = axes[1, j]
        for scheme, ls in (("ss_ring", "-"), ("ss_rand_ring", "--")):
            for p in settings.probabilities:
                d = accuracy[(accuracy.scheme == scheme) & (accuracy.p == p) & (accuracy.hop > 0)]
                x = d.hop * per_hop[(name, p)]
                ax.plot(x, d.accuracy, ls, color=COLORS.get(p))
                if scheme == "ss_rand_ring" and n_runs > 1:
                    ax.fill_between(x, d.accuracy - d.se, d.accuracy + d.se, color=COLORS.get(p), alpha=0.12, lw=0)
        ax.set(xscale="log", xlabel="average latency (Lemma 1)", ylabel=f"test accuracy (mean of {n_runs} runs)",
               title=f"{m.label}: t_ss = " + ", ".join(f"{m.t_ss_for_p(p):.3g}" for p in settings.probabilities))
        ax.grid(True, alpha=0.3)
    # One legend for both rows, below them: a colour per p, a line style per scheme (upper
    # row: per theorem; lower row: the same styles, the band ±1 SE of SS-Rand-Ring's runs).
    handles = [Line2D([], [], color=COLORS.get(p), label=f"p = {p:g}") for p in settings.probabilities]
    legend_below(fig, handles + [
        Line2D([], [], color="k", ls="-", label="SS-Ring (upper: Thm 2)"),
        Line2D([], [], color="k", ls="--", label="SS-Rand-Ring (upper: Thm 3 as printed; lower: ±1 SE band)"),
        Line2D([], [], color="k", ls=":", label="SS-Rand-Ring (upper: Thm 3 diagnostic, ours)"),
    ], ncol=3)
    return fig


def fig02_tradeoffs(profile: str = "smoke", *, data: HousingData | None = None, params: PaperParams = PaperParams(),
                    settings: Fig02Settings | None = None, progress: bool | None = None,
                    save: bool = True) -> Output:
    """Build Fig. 2 at ``profile`` scale: compute, draw, save, check the claims.

    Parameters
    ----------
    profile : {"smoke", "cpu", "paper"}
        Scale from ``profiles.yaml`` (ignored for the scale when ``settings`` is given, but
        still printed on the figure).
    data : HousingData, optional
        Default: :func:`~dpdl_core.papers.straggler.housing.load_housing` (UCI Boston from
        the offline mirror).
    params : PaperParams
        Constants of Sec. VI-A (the upper panels use d = params.d = 8 as the paper does;
        the lower panels use the data's own dimension).
    progress : bool, optional
        tqdm bars (default on in a terminal unless ``DPDL_PROGRESS=0``).
    save : bool
        Write ``figures/<profile>/straggler_fig02_tradeoffs.{pdf,png}`` and ``..._claims.csv``.

    Returns
    -------
    Output
        The figure and its files (none when ``save`` is False); the claims
        (:func:`check_claims`: ``where``, the line of the paper's text or the spec;
        ``kind`` "paper" for the paper's claims, "check" for our own consistency checks);
        ``tables``: ``analytic`` (upper panels: per (p, h_max) the Thm 1 bounds of both
        schemes, ε of Thm 2, Thm 3 as printed and the Thm 3 diagnostic variant, and Lemma 1
        latency per model), ``lemma1`` (per (model, p): t_ss, Lemma 1 latency per hop, per
        update, Monte Carlo mean and z), ``lemma2`` (per model: the optimal t_ss, its p and
        time per update), ``accuracy`` (lower panels: per (scheme, p, hop) mean test
        accuracy and its standard error); ``text``: the caption and the timings.
    """
    check_choice(types.SimpleNamespace(profile=profile), "profile", PROFILES)
    settings = settings or Fig02Settings.from_profile(profile)
    data = data if data is not None else load_housing()
    models = paper_models(chi=0.01)
    timings = {}
    t0 = time.perf_counter()
    analytic = analytic_table(settings, params, models)
    lemma1, lemma2 = lemma_tables(settings, models)
    timings["analytic"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    runs, accuracy = accuracy_runs(data, settings, params, progress)
    timings["token ring"] = time.perf_counter() - t0
    claims = check_claims(analytic, lemma1, lemma2, runs, settings, models,
                          data_label=f"{data.label}, d = {data.d}")
    fig = draw(analytic, accuracy, lemma1, settings, models, settings.n_runs)
    hm = settings.h_max_grid(params.n)
    text = caption(
        f"{data.label} (lower panels, d = {data.d})", profile,
        f"Fig. 2 of Yakimenka et al. (ITW 2022). Upper: analytic, Thms 1–3 with n = {params.n}, "
        f"ε = {params.epsilon:g}, "
        f"δ = {params.delta:g}, δ' = {params.delta_prime:g}, d = {params.d}, d_W = {params.d_W:g}, k = {params.k:g}, "
        f"ζ = {params.zeta:g}, χ = 0.01, h_max = {hm[0]}…{hm[-1]:,}; dotted = Thm 3 diagnostic variant (ours, not the "
        f"paper's). Lower: mean test accuracy of {settings.n_runs} runs × {settings.hops:,} hops against Lemma 1 "
        "latency; solid SS-Ring, dashed SS-Rand-Ring.",
    )
    files = []
    if save:
        files = save_figure(fig, FIGURE_NAME, text)
        path = files[0].parent / f"{FIGURE_NAME}_claims.csv"  # beside the figure, in its profile's folder
        claims.to_csv(path, index=False)
        files.append(path)
    tables = {"analytic": analytic, "lemma1": lemma1, "lemma2": lemma2, "accuracy": accuracy}
    timed = ", ".join(f"{k} {v:.1f}" for k, v in timings.items())
    return Output(files, claims, tables, figure=fig, text=f"{text}\ntimings (s): {timed}")
