"""PDSL's claims (§VI-C) as the paper states them, and the rules that check them.

Each claim is a :class:`~dpdl_core.verdicts.claims.ClaimSpec` quoting ``pdsl.txt``; its ``applies``
is the scope the text states, which ``tests/test_claims_on_paper_numbers.py`` pins and
checks on the paper's own numbers (Tables I–II in ``reference/pdsl_accuracy.csv``, the
losses the text gives for Figures 1 and 4 in ``reference/pdsl_losses_text.csv``).

Scopes, from the text:

- Figures 1–2: PDSL's loss below all four baselines'; Figure 3 (ring): below DP-DPSGD,
  DP-CGA and MUFFLIATO ("DP-NET-FLEET ... comparable ... on the ring graph"); Figures 4–5:
  below DP-DPSGD, DP-CGA and MUFFLIATO (Fig. 4: "similar to the average loss of
  DP-NET-FLEET"); Figure 6: no loss ordering (DP-NET-FLEET "equivalent or even superior").
- PDSL's loss "nearly unchanged" as M grows: Figure 1 only.
- Accuracy drops less than the baselines' as M grows, and grows with ε: Table I, the fully
  connected graph (the paragraph's "illustration").
- Best accuracy in its cell: Tables I and II, every graph.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

# Final losses within the package's one loss tolerance (5% of the larger) are a tie.
from ...verdicts import LOSS_REL_TOL, Claim, ClaimSpec, Comparison, margin_from_stats, margin_note, parts_margin

__all__ = ["SPECS", "ACCURACY_TOL", "CONVERGENCE", "ROUND_TOL", "TEXT_SPECS", "convergence_round", "FLUCTUATION_ROUNDS",
           "LOSS_REL_TOL", "STABLE_REL", "FIGURE_SPECS", "TABLE_SPECS", "figure_claims", "reach_comparison",
           "table_claims", "variant_spec"]

PAPER = "pdsl"
# The package's display names (the curves' and rows' labels); the paper spells DP-NET-FLEET.
BASELINES = ("DP-DPSGD", "DP-CGA", "MUFFLIATO", "DP-NETFLEET")
NOT_NETFLEET = ("DP-DPSGD", "DP-CGA", "MUFFLIATO")
# The paper prints accuracies to 3 decimals of a fraction (0.1 pp): a difference under half of
# that would print as a tie.
ACCURACY_TOL = 0.05
# "Nearly unchanged": PDSL's final loss moves by at most 25% from the smallest to the largest M.
STABLE_REL = 0.25
# A one-seed run's final loss has no seed spread to read; the part of it one run shows is its
# own fluctuation, measured over this many last rounds about a straight line (so that a
# steady descent is not counted as noise).
FLUCTUATION_ROUNDS = 20

_LOWER_RULE = ("final average training loss (mean of the last logged rounds) of PDSL below each named baseline's, "
               "per (epsilon, M) panel; a difference within 5% of the larger loss plus t SE over seeds is inconclusive")
_SPARSE = ("Even on the sparser communication graphs, our PDSL algorithm has smaller average loss than the other "
           "reference algorithms")
_CIFAR = ("our PDSL algorithm significantly outperforms DP-DPSGD, DP-CGA and MUFFLIATO algorithms with different "
          "privacy budget on both fully connected graphs and bipartite graphs")


def _lower(fig: str, quote: str, scope: str, baselines: tuple) -> ClaimSpec:
    return ClaimSpec(PAPER, f"{fig}.lower_loss", f"PDSL's final loss is below {', '.join(baselines)}'s in each panel",
                     quote, f"§VI-C, Figure {int(fig[3:])}", scope, _LOWER_RULE, {"label": ("PDSL", *baselines)})


FIGURE_SPECS = {
    "fig01_mnist_fully_connected": [
        _lower("fig01", "compared to other reference algorithms, our PDSL algorithm achieves a lower average loss "
               "across the different values of ϵ\\epsilon", "all four baselines, every epsilon and M", BASELINES),
        ClaimSpec(PAPER, "fig01.stable_in_m", "PDSL's final loss barely changes with M (within 25%)",
                  "the average loss of PDSL remains nearly unchanged with an increased number of agents",
                  "§VI-C, Figure 1", "Figure 1 only (MNIST, fully connected), at each epsilon",
                  "|loss(largest M) - loss(smallest M)| <= 25% of loss(smallest M), per epsilon; within t SE over "
                  "seeds of the 25% line is inconclusive", {"label": ("PDSL",)}),
    ],
    "fig02_mnist_bipartite": [_lower("fig02", _SPARSE, "all four baselines (bipartite)", BASELINES)],
    "fig03_mnist_ring": [_lower("fig03", _SPARSE, "DP-DPSGD, DP-CGA, MUFFLIATO; not DP-NET-FLEET, which the text calls "
                                "'comparable' on the ring graph", NOT_NETFLEET)],
    "fig04_cifar10_fully_connected": [_lower("fig04", _CIFAR, "DP-DPSGD, DP-CGA, MUFFLIATO; not DP-NET-FLEET, whose "
                                             "loss the text calls 'similar' (Figure 4)", NOT_NETFLEET)],
    "fig05_cifar10_bipartite": [_lower("fig05", _CIFAR, "DP-DPSGD, DP-CGA, MUFFLIATO", NOT_NETFLEET)],
    # Figure 6 (CIFAR-10 ring): "DP-NET-FLEET exhibits equivalent or even superior convergence
    # properties": the text claims no loss ordering for PDSL there.
    "fig06_cifar10_ring": [],
}

_BEST_RULE = (f"PDSL's final test accuracy at least the best baseline's in each (topology, epsilon, M) cell; a "
              f"difference within {ACCURACY_TOL} pp plus t SE over seeds is inconclusive")
_EPS_RULE = (f"PDSL's accuracy non-decreasing from each epsilon to the next, per (topology, M); within {ACCURACY_TOL} "
             "pp plus t SE is inconclusive")
_STABLE_RULE = (f"PDSL's drop from the smallest to the largest M at most every baseline's drop, per (topology, "
                f"epsilon); within {ACCURACY_TOL} pp plus t SE is inconclusive")
_FC = "the fully connected graph (the text's 'illustration' for Table I)"

TABLE_SPECS = {
    "tab01_mnist_accuracy": [
        ClaimSpec(PAPER, "tab01.best", "PDSL has the best accuracy in its cell",
                  "Table I also reveals that the test accuracy of PDSL is better than the other reference algorithms "
                  "on the different communication graphs", "§VI-C, Table I", "every graph, epsilon and M", _BEST_RULE),
        ClaimSpec(PAPER, "tab01.grows_with_epsilon", "PDSL's accuracy grows with epsilon",
                  "as privacy budget ϵ\\epsilon is increased (e.g., ϵ\\epsilon = 0.1, 0.3), the test accuracy of PDSL "
                  "increases significantly", "§VI-C, Table I", _FC, _EPS_RULE,
                  {"topology": ("fully_connected",), "label": ("PDSL",)}),
        ClaimSpec(PAPER, "tab01.stable_in_m", "PDSL's accuracy drops less than every baseline's as M grows",
                  "as the number of agents increases, the test accuracy of PDSL remains relatively stable, in contrast "
                  "to the significant decline observed in the other reference algorithms", "§VI-C, Table I", _FC,
                  _STABLE_RULE, {"topology": ("fully_connected",)}),
    ],
    "tab02_cifar10_accuracy": [
        ClaimSpec(PAPER, "tab02.best", "PDSL has the best accuracy in its cell",
                  "PDSL performs better in test accuracy compared to the other reference algorithms",
                  "§VI-C, Table II", "every graph, epsilon and M", _BEST_RULE),
    ],
}


# The text's statements on convergence rounds and on the numbers it prints (Figures 1-4,
# Tables I-II) that the stored runs decide: declared here, judged by the study
# (:func:`~dpdl_core.papers.pdsl.study.text_claims`). The text gives rounds in tens (80, 100,
# 180): two rounds within ROUND_TOL of each other are a tie.
ROUND_TOL = 10
# A run's convergence round, as the rules below read it (:func:`convergence_round`).
CONVERGENCE = (f"the first round after which its mean training loss stays within {LOSS_REL_TOL:.0%} of its final "
               "loss, the mean of its last logged rounds; a diverged run has none and counts as converging after its "
               "last round")
_WORDS = {"CONV": CONVERGENCE, "ROUND_TOL": str(ROUND_TOL), "LOSS_REL_TOL": f"{LOSS_REL_TOL:.0%}",
          "STABLE_REL": f"{STABLE_REL:.0%}", "ACCURACY_TOL": f"{ACCURACY_TOL:g}"}


def _text(id_: str, statement: str, quote: str, where: str, scope: str, rule: str) -> ClaimSpec:
    for key, words in _WORDS.items():
        rule = rule.replace(key, words)
    return ClaimSpec(PAPER, id_, statement, quote, where, scope, rule)


TEXT_SPECS = {s.id: s for s in (
    _text('text.slower_at_stronger_noise', 'stronger noise (smaller eps), slower convergence (PDSL)',
          'When ’stronger’ Gaussian noise is adopted for higher differential '
          'privacy preservation, we have to be content with slower convergence.',
          '§V-B, L312', 'PDSL, MNIST, fully connected, M = 10, eps 0.08, 0.1, 0.3',
          "PDSL's convergence round (CONV) at each smaller eps at least its round at the next larger eps, per "
          "step: a round earlier by more than ROUND_TOL rounds fails, later by more holds, otherwise inconclusive"),
    _text('fig01.faster_convergence', 'PDSL converges in fewer rounds than each baseline',
          'our PDSL algorithm exhibits a faster convergence rate than the other '
          'four reference algorithms across the different privacy budgets',
          '§VI-C1 L342, Figure 1',
          'MNIST, fully connected, eps 0.3, M = 10 and 20 (the panels stored), all four baselines',
          "per panel and baseline, the baseline's convergence round (CONV) minus PDSL's: above ROUND_TOL "
          "rounds plus t SE over the baseline's seeds holds, below minus that fails, otherwise inconclusive"),
    _text('fig01.min_loss_at_80', 'PDSL reaches its minimum loss after about 80 rounds',
          'our PDSL algorithm can reach its minimum loss value after about 8080 rounds',
          '§VI-C1 L342, Figure 1',
          'PDSL, MNIST, fully connected, M = 10 at eps 0.08, 0.1, 0.3 and M = 20 at eps 0.3 (the panels stored)',
          "the round of each run's smallest mean training loss within ROUND_TOL rounds of 80 holds, beyond it fails"),
    _text('fig01.80_rounds_at_m20', '80 rounds still suffice for PDSL at M = 20',
          'Even with an increased number of agents, the convergence rate of our PDSL algorithm '
          'remains consistent, ensuring that 8080 rounds are still sufficient for convergence.',
          '§VI-C1 L342, Figure 1', 'PDSL, MNIST, fully connected, M = 20, eps 0.3',
          "PDSL's convergence round (CONV) at most 80: below 80 by more than "
          "ROUND_TOL rounds holds, above by more fails, otherwise inconclusive"),
    _text('fig01.baselines_slower_at_m20', 'every baseline needs more rounds at M = 20 than at M = 10',
          'when the number of agents increases (e.g., M=20M=20), the other four '
          'reference algorithms require more communication rounds to achieve convergence',
          '§VI-C1 L342, Figure 1', 'the four baselines, MNIST, fully connected, eps 0.3, M = 10 and 20',
          'per baseline, its convergence round (CONV) at M = 20 minus at M = 10: above ROUND_TOL rounds plus t SE '
          'over seeds (paired where both ran the same seeds) holds, below minus that fails, otherwise inconclusive'),
    _text('fig01.m20_netfleet_100_others_180',
          'at M = 20 DP-NETFLEET converges in about 100 rounds, the others not by 180',
          'when M=20M=20, DP-NET-FLEET algorithm reaches convergence within about 100100 rounds, while DP-DPSGD, '
          'DP-CGA and MUFFLIATO algorithms fail to guarantee convergence even after 180180 communication rounds',
          '§VI-C1 L342, Figure 1', 'the four baselines, MNIST, fully connected, M = 20, eps 0.3',
          "DP-NETFLEET's convergence round (CONV) within ROUND_TOL rounds plus t SE over its seeds of 100; each other "
          "baseline's later than 180 by more than ROUND_TOL rounds; the reverse by more fails, otherwise inconclusive"),
    _text('fig01.pdsl_loss_0_1', "PDSL's final loss is about 0.1 at M = 10, eps 0.3",
          'when M=10M=10 and ϵ=0.3\\epsilon=0.3, the average loss '
          'of PDSL is about 0.10.1 when the convergence is reached',
          '§VI-C1 L344, Figure 1', 'PDSL, MNIST, fully connected, M = 10, eps 0.3',
          "PDSL's final loss (mean of the last logged rounds) within the loss tolerance "
          "(LOSS_REL_TOL of the larger) or half the print unit (0.05) of 0.1 holds, beyond it fails"),
    _text('fig01.loss_ratios_eps03', "each baseline's final loss is 1.6-5.8 times PDSL's, as printed",
          'it is 1.61.6 times lower than that of DP-NET-FLEET, 3.53.5 times lower than that of MUFFLIATO, '
          '3.23.2 times lower than that of DP-CGA, and 5.85.8 times lower than that of DP-DPSGD',
          '§VI-C1 L344, Figure 1', 'MNIST, fully connected, M = 10, eps 0.3, all four baselines',
          "per baseline, its final loss over PDSL's: the paper's ratio inside our 95% interval (t over the "
          "baseline's seeds; PDSL one seed) widened by half the print unit (0.05) holds, outside fails"),
    _text('fig01.baselines_loss_grows_with_m', "every baseline's final loss grows significantly from M = 10 to 20",
          'unlike the other reference algorithms which show a significant increase',
          '§VI-C1 L344, Figure 1', 'the four baselines, MNIST, fully connected, eps 0.3, M = 10 and 20',
          'per baseline, its final loss at M = 20 minus at M = 10, less the 25% band of fig01.stable_in_m (STABLE_REL '
          'of the M = 10 loss): above t SE over seeds holds, below minus t SE fails, otherwise inconclusive'),
    _text('fig01.m20_ratios_6_to_15', "at M = 20 every baseline's final loss is 6-15 times PDSL's",
          'the final average loss of PDSL is 6156\\sim 15 times lower than the ones of the reference algorithms',
          '§VI-C1 L344, Figure 1', 'MNIST, fully connected, M = 20, eps 0.3, all four baselines',
          "per baseline, its final loss over PDSL's inside [6, 15] by more than half the print "
          "unit (0.5) plus our 95% half-width holds, outside by more fails, otherwise inconclusive"),
    _text('fig23.converges_by_110', 'PDSL converges within about 100-110 rounds',
          'converges within about 100110100\\sim 110 rounds across different values of ϵ\\epsilon',
          '§VI-C1 L369, Figures 2-3', 'PDSL, MNIST, bipartite and ring graphs, M = 10, eps 0.3 (the panels stored)',
          "per graph, PDSL's convergence round (CONV) at most 110: below by more "
          "than ROUND_TOL rounds holds, above by more fails, otherwise inconclusive"),
    _text('fig23.baselines_need_more_rounds', 'DP-CGA, MUFFLIATO and DP-DPSGD need more rounds than PDSL',
          'In contrast, the DP-CGA, MUFFLIATO and DP-DPSGD algorithms '
          'require much more communication rounds to achieve convergence.',
          '§VI-C1 L369, Figures 2-3', 'MNIST, bipartite and ring graphs, M = 10, eps 0.3',
          "per graph and baseline, the baseline's convergence round (CONV) minus PDSL's: above ROUND_TOL "
          "rounds plus t SE over the baseline's seeds holds, below minus that fails, otherwise inconclusive"),
    _text('fig03.netfleet_comparable', 'DP-NETFLEET converges comparably to PDSL on the ring',
          'in comparison to PDSL, the DP- NET-FLEET algorithm demonstrates '
          'comparable convergence performance on the ring graph',
          '§VI-C1 L369, Figure 3', 'MNIST, ring, M = 10, eps 0.3, PDSL and DP-NETFLEET',
          "DP-NETFLEET's final loss within the loss tolerance (LOSS_REL_TOL of the larger) of "
          "PDSL's, and its convergence round (CONV) within ROUND_TOL rounds of PDSL's, each beyond "
          "t SE over its seeds: holds; outside by more than t SE fails; otherwise inconclusive"),
    _text('tab01.pdsl_0_938', "PDSL's test accuracy is 0.938 at M = 10, eps 0.08",
          'When M=10,ϵ=0.08M=10,\\epsilon=0.08, the test accuracy of PDSL is 0.9380.938',
          '§VI-C1 L416, Table I', 'PDSL, MNIST, fully connected, M = 10, eps 0.08',
          "PDSL's final test accuracy within ACCURACY_TOL pp (half the print unit) plus 2 seed stds of "
          "the strongest baseline's seeds at eps 0.3 (PDSL ran one seed) of 93.8% holds, beyond it fails"),
    _text('fig04.pdsl_loss_0_65', "PDSL's loss after 200 rounds is about 0.65 on CIFAR-10",
          'when ϵ=1,M=10\\epsilon=1,M=10, the average loss of PDSL after 200200 '
          'communication rounds is around 0.650.65 on the fully connected graph',
          '§VI-C2 L439, Figure 4', 'PDSL, CIFAR-10, fully connected, M = 10, eps 1',
          "PDSL's final loss (mean of the last logged rounds, to round 200) within the loss tolerance "
          "(LOSS_REL_TOL of the larger) or half the print unit (0.005) of 0.65 holds, beyond it fails"),
    _text('fig04.similar_to_netfleet', "PDSL's final loss is similar to DP-NETFLEET's on CIFAR-10",
          'it is similar to the average loss of DP-NET-FLEET',
          '§VI-C2 L439, Figure 4', 'CIFAR-10, fully connected, M = 10, eps 1, PDSL and DP-NETFLEET',
          'the two final losses within the loss tolerance (LOSS_REL_TOL of the larger) '
          'beyond t SE over seeds holds, outside it by more fails, otherwise inconclusive'),
    _text('fig04.loss_ratios_m10', "DP-DPSGD's, MUFFLIATO's and DP-CGA's losses are 2.2, 2.1, 1.67 times PDSL's",
          'and 2.22.2 times smaller than DP-DPSGD, 2.12.1 times smaller '
          'than MUFFLIATO, and 1.671.67 times smaller than DP-CGA',
          '§VI-C2 L439, Figure 4', 'CIFAR-10, fully connected, M = 10, eps 1',
          "per baseline, its final loss over PDSL's: the paper's ratio inside our 95% interval (t over "
          "the baseline's seeds; PDSL one seed) widened by half the print unit holds, outside fails"),
    _text('tab02.pdsl_0_758', "PDSL's test accuracy is 0.758 at M = 10, eps 1 on CIFAR-10",
          'when ϵ=1,M=10\\epsilon=1,M=10, the test accuracy of our '
          'PDSL algorithm on the fully connected graph is 0.7580.758',
          '§VI-C2 L508, Table II', 'PDSL, CIFAR-10, fully connected, M = 10, eps 1',
          "PDSL's final test accuracy within ACCURACY_TOL pp (half the print unit) plus 2 seed "
          "stds of the cell's seeded baseline (PDSL ran one seed) of 75.8% holds, beyond it fails"),
    _text('tab02.gains_eps1_m10', "PDSL's accuracy gains over the baselines are 27.3, 16.2, 23 and 20.7 pp",
          'it is an improvement of 27.3%27.3\\% over DP-DPSGD, 16.2%16.2\\% over '
          'DP-CGA, 23%23\\% over MUFFLIATO, and 20.7%20.7\\% over DP-NET-FLEET',
          '§VI-C2 L508, Table II', 'CIFAR-10, fully connected, M = 10, eps 1, all four baselines',
          "per baseline, PDSL's accuracy minus the baseline's (pp): the paper's gain inside our 95% interval "
          "(t over the baseline's seeds; PDSL one seed) widened by ACCURACY_TOL pp holds, outside fails"),
)}


def convergence_round(loss: pd.Series, diverged: bool, final_window: int) -> int | None:
    """A run's convergence round: the first logged round after which its mean training loss
    (``loss``, indexed by round) stays within :data:`LOSS_REL_TOL` of its final loss (the
    mean of its last ``final_window`` logged rounds); None for a run that diverged."""
    if diverged or loss.empty:
        return None
    loss = loss.sort_index()
    final = float(loss.tail(final_window).mean())
    outside = np.flatnonzero(np.abs(loss.to_numpy() - final) > LOSS_REL_TOL * abs(final))
    if not len(outside):
        return int(loss.index[0])
    return int(loss.index[min(outside[-1] + 1, len(loss) - 1)])


# Every claim of the paper, by id.
SPECS = {s.id: s for specs in (*FIGURE_SPECS.values(), *TABLE_SPECS.values()) for s in specs} | TEXT_SPECS

def reach_comparison(label: str, ceiling: float, paper: float, spread_std: float) -> Comparison:
    """"The stated setting reaches the paper's accuracy": ``ceiling``, a run without noise (an
    upper reference for the private runs), at least the paper's private ``paper`` (%) less
    :data:`ACCURACY_TOL` pp and 2 SE of the private runs' seed std ``spread_std``. The
    spread counts for the paper: a shortfall within it reaches."""
    margin = margin_from_stats(spread_std, 1, 0.0, 1, ACCURACY_TOL)
    # One run against the paper's number: the seed spread is folded into the difference, so
    # the comparison has no interval of its own.
    return Comparison(f"{label} {ceiling:.1f} vs the paper's {paper:.1f} less {margin:.2f}", ceiling - paper + margin,
                      interval=0.0, unit=" pp")


def variant_spec(variant: str) -> ClaimSpec:
    return ClaimSpec(PAPER, f"variant.{variant}", f"beyond the paper: {variant} beats the four baselines in its cell",
                     "", "beyond the paper", "every cell that ran", _BEST_RULE.replace("PDSL's", f"{variant}'s"),
                     kind="beyond the paper")


def _tolerance(table: pd.DataFrame, unit: str) -> str:
    """:func:`~dpdl_core.verdicts.claims.margin_note` of a table (its ``runs`` column; none: the
    paper's own single values)."""
    return margin_note(unit, table["runs"] if "runs" in table else [1])


def _stats(g: pd.DataFrame, label: str) -> tuple[float, float, int]:
    r = g[g["label"] == label].iloc[0]
    return float(r["ours"]), float(r.get("ours_std", 0.0)), int(r.get("runs", 1))


def _paper(g: pd.DataFrame, label: str) -> float:
    """The paper's value (``paper_mean`` column, %) of ``label``'s row of ``g``; NaN without one."""
    r = g[g["label"] == label]
    return float(r["paper_mean"].iloc[0]) if "paper_mean" in g.columns and len(r) else np.nan


def _best(spec: ClaimSpec, table: pd.DataFrame, who: str) -> Claim:
    cell = ["topology", "epsilon", "n_agents"]
    comps = []
    for key, g in spec.select(table).groupby(cell):
        others = g[g["label"].isin(BASELINES)]
        if not (g["label"] == who).any() or not len(others):
            continue
        top = others.loc[others["ours"].idxmax(), "label"]
        (a, sa, na), (b, sb, nb) = _stats(g, who), _stats(g, top)
        comps.append(Comparison(f"{key[0]} eps={key[1]:g} M={key[2]}: vs {top}", a - b,
                                margin_from_stats(sa, na, sb, nb, ACCURACY_TOL),
                                interval=margin_from_stats(sa, na, sb, nb), paper=_paper(g, who) - _paper(g, top),
                                unit=" pp"))
    return spec.judge(comps, _tolerance(table, f"{ACCURACY_TOL} pp"))


def _grows(spec: ClaimSpec, table: pd.DataFrame) -> Claim:
    comps = []
    for (topo, m), g in spec.select(table).groupby(["topology", "n_agents"]):
        g = g.sort_values("epsilon")
        for lo, hi in zip(g.itertuples(), g.iloc[1:].itertuples()):
            spread = (getattr(hi, "ours_std", 0.0), getattr(hi, "runs", 1), getattr(lo, "ours_std", 0.0),
                      getattr(lo, "runs", 1))
            comps.append(Comparison(f"{topo} M={m}: eps {lo.epsilon:g} -> {hi.epsilon:g}", hi.ours - lo.ours,
                                    margin_from_stats(*spread, ACCURACY_TOL), interval=margin_from_stats(*spread),
                                    paper=getattr(hi, "paper_mean", np.nan) - getattr(lo, "paper_mean", np.nan),
                                    unit=" pp"))
    return spec.judge(comps, _tolerance(table, f"{ACCURACY_TOL} pp"))


def _stable(spec: ClaimSpec, table: pd.DataFrame) -> Claim:
    comps = []
    for (topo, eps), g in spec.select(table).groupby(["topology", "epsilon"]):
        if g["n_agents"].nunique() < 2:
            continue
        lo, hi = (g[g["n_agents"] == m].set_index("label") for m in (g["n_agents"].min(), g["n_agents"].max()))
        both = [lab for lab in ("PDSL", *BASELINES) if lab in lo.index and lab in hi.index]
        if "PDSL" not in both or len(both) < 2:
            continue
        drop = {lab: lo.loc[lab, "ours"] - hi.loc[lab, "ours"] for lab in both}
        base = min((lab for lab in both if lab != "PDSL"), key=drop.get)
        told = {lab: (lo.loc[lab, "paper_mean"] - hi.loc[lab, "paper_mean"]) if "paper_mean" in lo.columns else np.nan
                for lab in ("PDSL", base)}
        # The four means of two drops are independent (their seeds are), each with its seeds.
        parts = [(float(t.loc[lab].get("ours_std", 0.0)) ** 2 / int(t.loc[lab].get("runs", 1)),
                  int(t.loc[lab].get("runs", 1))) for lab in ("PDSL", base) for t in (lo, hi)]
        comps.append(Comparison(f"{topo} eps={eps:g}: PDSL drop {drop['PDSL']:.2f} vs {base} {drop[base]:.2f}",
                                drop[base] - drop["PDSL"], parts_margin(parts, ACCURACY_TOL),
                                interval=parts_margin(parts), paper=told[base] - told["PDSL"], unit=" pp"))
    return spec.judge(comps, _tolerance(table, f"{ACCURACY_TOL} pp"))


def table_claims(table: pd.DataFrame, key: str) -> list[Claim]:
    """The claims of table ``key`` on ``table`` (columns topology, epsilon, n_agents, label,
    algorithm, ours in %, and optionally ours_std and runs for the seed spread, and paper_mean,
    the paper's value in %, which gives each comparison the paper's effect; a numeric ``paper``
    column, as :func:`.figures.accuracy_table` gives, stands for it)."""
    if "paper_mean" not in table.columns and "paper" in table.columns and pd.api.types.is_numeric_dtype(table["paper"]):
        table = table.assign(paper_mean=table["paper"])
    rules = {"best": lambda s: _best(s, table[table["label"].isin(("PDSL", *BASELINES))], "PDSL"),
             "grows_with_epsilon": lambda s: _grows(s, table), "stable_in_m": lambda s: _stable(s, table)}
    out = [rules[spec.id.split(".", 1)[1]](spec) for spec in TABLE_SPECS[key]]
    for variant in sorted(set(table["label"]) - {"PDSL", *BASELINES}):
        rows = table[(table["label"] == variant) | table["label"].isin(BASELINES)]
        out.append(_best(variant_spec(variant), rows, variant))
    return out


def _final_stats(final: pd.DataFrame) -> pd.DataFrame:
    """Per (label, epsilon, n_agents): mean, std and count over seeds of the final loss; a
    one-seed row's std is its run's ``fluctuation`` where ``final`` has that column
    (:func:`.figures.final_losses`), else 0."""
    stats = final.groupby(["label", "epsilon", "n_agents"])["value"].agg(["mean", "std", "count"]).reset_index()
    if "fluctuation" in final.columns:
        own = final.groupby(["label", "epsilon", "n_agents"])["fluctuation"].first().to_numpy()
        stats["std"] = stats["std"].where(stats["count"] > 1, own)
    return stats.fillna({"std": 0.0})


def _loss_margin_note(tolerance: str, final: pd.DataFrame, stats: pd.DataFrame) -> str:
    """:func:`~dpdl_core.verdicts.claims.margin_note`, saying where one-seed rows take their own
    fluctuation as their spread."""
    note = margin_note(tolerance, stats["count"])
    if "fluctuation" in final.columns and (stats["count"] == 1).any():
        note = note.replace("no seed spread (1 seed)", "2 SE").rstrip()
        note += (f"; a one-seed row's spread is its own fluctuation (std of its last {FLUCTUATION_ROUNDS} rounds' "
                 "loss about their straight line)")
    return note


def _lower_loss(spec: ClaimSpec, final: pd.DataFrame) -> Claim:
    stats = _final_stats(spec.select(final))
    comps = []
    for (eps, m), g in stats.groupby(["epsilon", "n_agents"]):
        g = g.set_index("label")
        if "PDSL" not in g.index:
            continue
        p = g.loc["PDSL"]
        for lab in (x for x in g.index if x != "PDSL"):
            b = g.loc[lab]
            tol = LOSS_REL_TOL * max(p["mean"], b["mean"])
            comps.append(Comparison(f"eps={eps:g} M={m}: vs {lab} ({p['mean']:.3g} vs {b['mean']:.3g})",
                                    b["mean"] - p["mean"],
                                    margin_from_stats(p["std"], p["count"], b["std"], b["count"], tol),
                                    interval=margin_from_stats(p["std"], p["count"], b["std"], b["count"])))
    return spec.judge(comps, _loss_margin_note(f"{100 * LOSS_REL_TOL:.0f}% of the larger loss", final, stats))


def _stable_loss(spec: ClaimSpec, final: pd.DataFrame) -> Claim:
    stats = _final_stats(spec.select(final))
    comps = []
    for eps, g in stats.groupby("epsilon"):
        if g["n_agents"].nunique() < 2:
            continue
        g = g.sort_values("n_agents")
        lo, hi = g.iloc[0], g.iloc[-1]
        comps.append(Comparison(f"eps={eps:g}: M={lo['n_agents']} {lo['mean']:.3g} -> M={hi['n_agents']} "
                                f"{hi['mean']:.3g}", STABLE_REL * lo["mean"] - abs(hi["mean"] - lo["mean"]),
                                margin_from_stats(lo["std"], lo["count"], hi["std"], hi["count"]),
                                interval=margin_from_stats(lo["std"], lo["count"], hi["std"], hi["count"])))
    return spec.judge(comps, _loss_margin_note("25% band", final, stats))


def figure_claims(final: pd.DataFrame, key: str) -> list[Claim]:
    """The claims of figure ``key`` on the final losses ``final`` (columns label, epsilon,
    n_agents, seed, value)."""
    rules = {"lower_loss": _lower_loss, "stable_in_m": _stable_loss}
    return [rules[spec.id.split(".", 1)[1]](spec, final) for spec in FIGURE_SPECS[key]]
