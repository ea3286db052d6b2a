"""DPDL's claims as the paper states them, and their rules: accuracy (Tables I–II, §VI-C;
Tables V–VI, Appendix D) and the gradient-inversion attack (Tables III–IV, Figures 5–6, §VI-D).

Each claim is a :class:`~dpdl_core.verdicts.claims.ClaimSpec` quoting ``dpdl.txt``. Scopes, from
the text: DPDL best in every cell of every table ("across all settings"); accuracy grows
with ε and with a denser graph *for our algorithm* (the text's examples are DPDL's, and for
the baselines the paper's own tables contradict both: 23 ε steps and 93 of 180 graph
comparisons go the other way); Table V states no ε trend. ``tests/test_claims_on_paper_numbers.py``
pins the scopes and applies every rule to ``reference/dpdl_accuracy.csv``.
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from ...sim import display_name
from ...verdicts import Claim, ClaimSpec, Comparison, margin_from_stats, margin_note, paired_margin

__all__ = ["SPECS", "ACCURACY_TOL", "ATTACK_SPECS", "ATTACK_TOL", "RULES", "SECTIONS", "TABLE_SPECS", "attack_claims",
           "table_claims"]

PAPER = "dpdl"
# The paper prints accuracies to 0.1 pp: a difference under half of that would print as a tie.
ACCURACY_TOL = 0.05
GRAPH_ORDER = ("ring", "bipartite", "fully_connected")

_BEST = (f"DPDL's final test accuracy (average model) at least the best baseline's in each (alpha_d, topology, N, "
         f"epsilon) cell; within {ACCURACY_TOL} pp plus t SE over seeds is inconclusive")
_EPS = (f"DPDL's accuracy non-decreasing from each epsilon to the next, per (alpha_d, topology, N); within "
        f"{ACCURACY_TOL} pp plus t SE is inconclusive")
_DENSE = (f"DPDL's accuracy on the fully connected graph at least its accuracy on the bipartite graph, per (alpha_d, "
          f"N, epsilon); within {ACCURACY_TOL} pp plus t SE is inconclusive")
_DPDL_ONLY = {"algorithm": ("dpdl",)}


# Where each table is discussed in dpdl.txt (§V is the theory; the experiments are §VI).
SECTIONS = {"I": "§VI-C1", "II": "§VI-C2", "V": "Appendix D", "VI": "Appendix D", "III-IV": "§VI-D",
            "5-6": "§VI-D"}


def _spec(table: str, rule: str, statement: str, quote: str, scope: str, text: str, applies=None) -> ClaimSpec:
    return ClaimSpec(PAPER, f"{table}.{rule}", statement, quote, f"{SECTIONS[text]}, Table {text}", scope,
                     {"best": _BEST, "grows_with_epsilon": _EPS, "denser_is_better": _DENSE}[rule], applies or {})


_BEST_S, _EPS_S, _DENSE_S = ("DPDL has the best accuracy in its cell", "DPDL's accuracy grows with epsilon",
                             "denser graphs do better for DPDL (bipartite <= fully connected)")
TABLE_SPECS = {
    "tab01_mnist_accuracy": [
        _spec("tab01", "best", _BEST_S, "It is evident that our DPDL algorithm consistently achieves the highest "
              "prediction accuracy across all settings", "every cell", "I"),
        _spec("tab01", "grows_with_epsilon", _EPS_S, "Moreover, increasing the privacy budget ϵ\\epsilon leads to "
              "higher test accuracy, though at the cost of reduced privacy protection", "DPDL (the text's example)",
              "I", _DPDL_ONLY),
        _spec("tab01", "denser_is_better", _DENSE_S, "adopting denser communication graphs can lead to higher test "
              "accuracy for our algorithm", "DPDL", "I", _DPDL_ONLY),
    ],
    "tab02_cifar10_accuracy": [
        _spec("tab02", "best", _BEST_S, "the advantage of our DPDL algorithm over the other reference methods remains "
              "clear", "every cell", "II"),
        _spec("tab02", "grows_with_epsilon", _EPS_S, "the test accuracy of our algorithm further improves to "
              "64.2%64.2\\%, as less noise is added to the gradients", "DPDL", "II", _DPDL_ONLY),
        _spec("tab02", "denser_is_better", _DENSE_S, "the impact of communication topology on performance observed on "
              "the CIFAR-10 dataset is consistent with the findings from the MNIST dataset", "DPDL", "II", _DPDL_ONLY),
    ],
    "tab05_mnist_ring_accuracy": [
        _spec("tab05", "best", _BEST_S, "our DPDL algorithm still has the highest prediction accuracy on extreme "
              "sparse topology with high data heterogeneity", "every cell (ring)", "V"),
    ],
    "tab06_cifar10_ring_accuracy": [
        _spec("tab06", "best", _BEST_S, "the advantage of our proposed DPDL algorithm over the baseline methods "
              "remains evident", "every cell (ring)", "VI"),
        _spec("tab06", "grows_with_epsilon", _EPS_S, "the test accuracy of our algorithm further improves to "
              "61.4%61.4\\%, benefiting from reduced noise injection during gradient perturbation", "DPDL (ring)",
              "VI", _DPDL_ONLY),
    ],
}


# Tables III-IV and Figures 5-6 (gradient inversion), judged per channel (CG, MM).
# A difference of a metric smaller than this is not "worse for the attacker" (about 5% of the
# no-defence values of the paper's Tables III-IV: MSE 0.7-1.9, PSNR 6.5-12 dB, SSIM x 100 6.6-24).
ATTACK_TOL = {"MSE": 0.05, "PSNR": 0.5, "SSIM_x100": 1.0}
_ATTACK_TOL_TEXT = ", ".join(f"{k} {v:g}" for k, v in ATTACK_TOL.items())
ATTACK_SPECS = {s.id: s for s in (
    ClaimSpec(PAPER, "attack.metrics", "DP makes inversion worse: higher MSE, lower PSNR and SSIM than no defence",
              "It is evident that our DPDL algorithm effectively protects data privacy",
              f"{SECTIONS['III-IV']}, Tables III-IV",
              "every (topology, N) cell of Tables III-IV, per channel (cross-gradient CG, momentum MM)",
              "in every cell, the DPDL scenario's MSE above and PSNR, SSIM below the no-defence scenario's by more "
              f"than the tolerance ({_ATTACK_TOL_TEXT}) plus t SE over the attacked images; the other way by more "
              "than that fails; in between inconclusive"),
    ClaimSpec(PAPER, "attack.success", "no DP reconstruction succeeds, while some undefended ones do",
              "when the Gaussian mechanism is applied in our algorithm, the adversary fails to effectively reconstruct "
              "the agents’ private data", f"{SECTIONS['5-6']}, Figures 5-6", "every cell, per channel",
              "holds when the best success rate (PSNR threshold) of the DPDL scenario is 0 and the no-defence "
              "scenario's above 0, by a one-sided Fisher exact test at 5% over the attacked images where their "
              "counts are known; fails when a DPDL reconstruction succeeds; inconclusive when no undefended one "
              "does, or too few to tell from chance (an attack too weak to tell)"),
)}

# The attack over the rounds it taps (Figures 5-6 show rounds 200, 400 and 800).
ROUND_SPECS = {s.id: s for s in (
    ClaimSpec(PAPER, "attack.later_rounds", "undefended reconstructions improve in later rounds",
              "Moreover, as training progresses, the reconstructed images from later rounds tend to reveal more "
              "detailed and clearer information.", f"{SECTIONS['5-6']}, Figures 5-6",
              "the no-defence scenario, per channel, first against last attacked round",
              "the no-defence scenario's PSNR and SSIM at the last attacked round above, and MSE below, the first "
              f"attacked round's by more than the tolerance ({_ATTACK_TOL_TEXT}) plus t SE over the attacked images; "
              "the other way by more than that fails; in between inconclusive"),
    ClaimSpec(PAPER, "attack.success_every_round", "no DP reconstruction succeeds at any attacked round",
              "Even as the number of rounds increases, the privacy protection remains robust.",
              f"{SECTIONS['5-6']}, Figures 5-6", "every attacked round, per channel",
              "attack.success's rule at every attacked round: fails when it fails at one; holds when it holds at "
              "every one; otherwise inconclusive"),
)}

# Figure 1's training-loss statements on DPDL (MNIST, bipartite, N = 10), read as the mean
# training loss over the last tenth of the rounds ("after convergence").
LOSS_SPECS = {s.id: s for s in (
    ClaimSpec(PAPER, "fig01.loss_eps_025_05", "DPDL's loss after convergence is lower at eps 0.5 than at 0.25",
              "when ϵ\\epsilon is increased from 0.250.25 to 0.50.5, our DPDL algorithm achieves a noticeably lower "
              "training loss after convergence.", "§VI-B1, Figure 1", "DPDL, MNIST bipartite, N = 10",
              "DPDL's mean training loss over the last tenth of the rounds at eps 0.5 below eps 0.25's by more than "
              "the loss tolerance (5% of the larger) plus t SE of the per-seed differences (\"noticeably\"); above "
              "by more than that fails; in between inconclusive"),
    ClaimSpec(PAPER, "fig01.loss_eps_05_1", "eps 1 lowers DPDL's loss little or not at all against eps 0.5",
              "Yet, further increasing ϵ\\epsilon to 1.01.0 yields little to no improvement in the minimum training "
              "loss.", "§VI-B1, Figure 1", "DPDL, MNIST bipartite, N = 10",
              "DPDL's mean training loss over the last tenth of the rounds at eps 1 lower than eps 0.5's by less than "
              "the loss tolerance (5% of the larger) beyond t SE of the per-seed differences holds (\"little to "
              "no\"); by more than the tolerance beyond that fails; otherwise inconclusive"),
)}

# Every claim of the paper, by id.
SPECS = {**{s.id: s for specs in TABLE_SPECS.values() for s in specs}, **ATTACK_SPECS, **ROUND_SPECS, **LOSS_SPECS}

def _margin(a, b, tolerance: float = ACCURACY_TOL) -> float:
    """Two table rows' margin: of their per-seed differences where both carry seed → value
    maps of the same seeds (an optional ``ours_seeds`` column, :func:`~dpdl_core.verdicts.claims.paired_margin`),
    else of their means' std over seeds; with ``tolerance`` 0, the half-width of the 95%
    interval of ``a − b``."""
    sa, sb = getattr(a, "ours_seeds", None), getattr(b, "ours_seeds", None)
    if isinstance(sa, Mapping) and isinstance(sb, Mapping) and (m := paired_margin(sa, sb, tolerance)) is not None:
        return m
    return margin_from_stats(a.ours_std, a.runs, b.ours_std, b.runs, tolerance)


def _versus(label: str, a, b) -> Comparison:
    """``a`` ≥ ``b`` for two table rows (``ours_mean``; an optional ``paper_mean`` column gives
    the paper's effect)."""
    paper = getattr(a, "paper_mean", np.nan) - getattr(b, "paper_mean", np.nan)
    return Comparison(label, a.ours_mean - b.ours_mean, _margin(a, b), interval=_margin(a, b, 0.0), paper=paper,
                      unit=" pp")


# How a comparison's label shows each table column.
_SHOW = {"alpha_d": "a_d={:g}".format, "topology": str, "n_agents": "N={}".format, "epsilon": "eps={:g}".format,
         "algorithm": display_name}
# ... and the two ends of a step along a column.
_STEP = {"epsilon": "eps {:g} -> {:g}".format, "topology": "{} -> {}".format}


def _cell(columns: list[str], key: tuple) -> str:
    """A table cell in words, e.g. ``a_d=0.25 bipartite N=10 eps=0.5``."""
    return " ".join(_SHOW[c](v) for c, v in zip(columns, key))


def _best(t: pd.DataFrame) -> list[Comparison]:
    cell = ["alpha_d", "topology", "n_agents", "epsilon"]
    n_alg = t["algorithm"].nunique()
    out = []
    for key, g in t.groupby(cell):
        if len(g) < n_alg or not (g["algorithm"] == "dpdl").any():
            continue  # a cell that did not run completely decides nothing
        others = g[g["algorithm"] != "dpdl"]
        top = others.loc[others["ours_mean"].idxmax()]
        ours = g[g["algorithm"] == "dpdl"].iloc[0]
        out.append(_versus(f"{_cell(cell, key)}: vs {display_name(top['algorithm'])}", ours, top))
    return out


def _steps(t: pd.DataFrame, along: str, groups: list[str], order) -> list[Comparison]:
    out = []
    for key, g in t.groupby(groups + ["algorithm"]):
        g = g.sort_values(along, key=order)
        cell = _cell(groups + ["algorithm"], key)
        for lo, hi in zip(g.itertuples(), g.iloc[1:].itertuples()):
            step = _STEP[along](getattr(lo, along), getattr(hi, along))
            out.append(_versus(f"{cell}: {step}", hi, lo))
    return out


# Each table rule's comparisons on the rows inside a claim's scope (columns as
# :func:`table_claims` takes them).
RULES = {
    "best": _best,
    "grows_with_epsilon": lambda t: _steps(t, "epsilon", ["alpha_d", "topology", "n_agents"], None),
    "denser_is_better": lambda t: _steps(t[t["topology"].isin(GRAPH_ORDER[1:])], "topology",
                                         ["alpha_d", "n_agents", "epsilon"], lambda s: s.map(GRAPH_ORDER.index)),
}


def table_claims(table: pd.DataFrame, key: str) -> list[Claim]:
    """The claims of table ``key`` per noise mode (the claim's ``condition``), on ``table``
    (columns noise, alpha_d, topology, n_agents, epsilon, algorithm, ours_mean, ours_std in
    %, runs; optionally paper_mean, the paper's value of the cell, which gives each
    comparison the paper's effect)."""
    out = []
    for mode, t in table.groupby("noise", sort=False):
        tol = margin_note(f"{ACCURACY_TOL} pp", t["runs"])
        for spec in TABLE_SPECS[key]:
            comps = RULES[spec.id.split(".", 1)[1]](spec.select(t))
            out.append(spec.judge(comps, tol, condition=mode))
    return out


# The direction in which DP makes each metric worse for the attacker.
_WORSE = {"MSE": 1, "PSNR": -1, "SSIM_x100": -1}


# One-sided level of the test that the undefended attack succeeds more often than the DP one.
SUCCESS_LEVEL = 0.05


def _success(channel: str, dp_best: float, nd_best: float, counts: tuple[int, int, int, int] | None = None) -> Claim:
    """``attack.success`` of one channel from the best success share (%) of each scenario;
    ``counts`` (successes and images of the DP and the no-defence scenario in the no-defence
    scenario's best cell) add a one-sided Fisher exact test: with few images a 0 against a
    few successes is no evidence that the noise prevents them."""
    spec = ATTACK_SPECS["attack.success"]
    evidence = f"best success: DP {dp_best:.0f}%, no defence {nd_best:.0f}%"
    rule = "exact counts"
    if not (np.isfinite(dp_best) and np.isfinite(nd_best)):
        return spec.claim("inconclusive", evidence + " (not measured)", rule, condition=channel)
    if dp_best > 0:
        verdict = "fails"
    elif nd_best > 0:
        verdict = "holds"
        if counts is not None:
            from scipy.stats import fisher_exact

            k_dp, n_dp, k_nd, n_nd = counts
            p = float(fisher_exact([[k_nd, n_nd - k_nd], [k_dp, n_dp - k_dp]], alternative="greater").pvalue)
            rule = f"exact counts; one-sided Fisher exact test at {SUCCESS_LEVEL:.0%} over the attacked images"
            evidence += (f"; {k_nd} of {n_nd} vs {k_dp} of {n_dp} images, Fisher p = {p:.2g} (counts: the test "
                         "decides, no interval)")
            if p >= SUCCESS_LEVEL:
                verdict, evidence = "inconclusive", evidence + ": too few undefended successes to tell the noise's " \
                    "effect from chance"
    else:
        verdict, evidence = "inconclusive", evidence + ": the attack reconstructs nothing even without noise, so " \
            "it cannot show what the noise prevents"
    return spec.claim(verdict, evidence, rule, condition=channel)


def attack_claims(table: pd.DataFrame) -> list[Claim]:
    """The attack claims per channel (the ``condition``) on ``table`` (columns topology,
    n_agents, scenario such as ``ND-CG`` / ``DPDL-CG``, metric, ours; optionally
    ``ours_std`` and ``n``, the spread over the attacked images and their number, which add
    t SE to the margin; ``paper``, the paper's value where numeric, which gives each comparison
    the paper's effect). The success claim needs a ``success_%`` metric (ours; the paper prints none)."""
    out = []
    spread = {"ours_std", "n"} <= set(table.columns)
    values = ["ours", "ours_std", "n"] if spread else ["ours"]
    values += ["paper"] if "paper" in table.columns and pd.api.types.is_numeric_dtype(table["paper"]) else []
    wide = table.pivot_table(index=["topology", "n_agents", "metric"], columns="scenario", values=values, dropna=False)
    for channel in sorted({sc.split("-", 1)[1] for sc in table["scenario"]}):
        scenarios = wide["ours"].columns
        nd = [c for c in scenarios if c == f"ND-{channel}"]
        dp = [c for c in scenarios if c.endswith(f"-{channel}") and not c.startswith("ND")]
        if not nd or not dp:
            continue
        nd, dp = nd[0], dp[0]
        comps = []
        for cell in wide.index:
            topo, n, metric = cell
            if metric not in _WORSE:
                continue
            a, b = wide.loc[cell, ("ours", dp)], wide.loc[cell, ("ours", nd)]

            def margin(tol, cell=cell, dp=dp, nd=nd):
                return (margin_from_stats(wide.loc[cell, ("ours_std", dp)], wide.loc[cell, ("n", dp)],
                                          wide.loc[cell, ("ours_std", nd)], wide.loc[cell, ("n", nd)], tol)
                        if spread else tol)
            paper = (_WORSE[metric] * (wide.loc[cell, ("paper", dp)] - wide.loc[cell, ("paper", nd)])
                     if "paper" in wide.columns.get_level_values(0) else np.nan)
            comps.append(Comparison(f"{topo} N={n} {metric}: DP {a:.3g} vs ND {b:.3g}", _WORSE[metric] * (a - b),
                                    margin(ATTACK_TOL[metric]), strict=True, interval=margin(0.0), paper=paper,
                                    unit=f" {metric}"))
        tol = _ATTACK_TOL_TEXT + (" + t SE over the attacked images" if spread else "; no spread (one value a cell)")
        out.append(ATTACK_SPECS["attack.metrics"].judge(comps, tol, condition=channel))
        if "success_%" in wide.index.get_level_values("metric"):
            rates = wide["ours"].xs("success_%", level="metric")
            counts = None
            if spread:
                cell = rates[nd].idxmax()
                n = wide["n"].xs("success_%", level="metric").loc[cell]
                counts = tuple(int(x) for x in (round(rates.loc[cell, dp] * n[dp] / 100), n[dp],
                                                round(rates.loc[cell, nd] * n[nd] / 100), n[nd]))
            out.append(_success(channel, float(rates[dp].max()), float(rates[nd].max()), counts))
    return out
