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

import dataclasses
from collections.abc import Mapping

import numpy as np
import pandas as pd

from ...sim import display_name
from ...verdicts import (
    LOSS_REL_TOL,
    Claim,
    ClaimSpec,
    Comparison,
    margin_from_stats,
    margin_note,
    paired_margin,
    seed_mean,
)

__all__ = ["SPECS", "ACCURACY_TOL", "ATTACK_SPECS", "ATTACK_TOL", "CURVE_PAPER", "CURVE_POINTS", "CURVE_SPECS",
           "CURVE_TOLERANCE", "RULES", "SECTIONS",
           "TABLE_SPECS", "attack_claims", "curve_claim", "table_claims", "window_means"]

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

# The text's statements on the loss curves of Figures 1, 2 and 8 (MNIST; N = 10 unless a point
# names another), read per seed on window means of the agents' mean training loss of each round
# (``train_loss_mean``, a mini-batch loss: a window mean, not one round, is what the curves show
# through the noise). The text's
# horizon for these curves is 500 rounds ("in about 500 rounds", "within 500 rounds").
HORIZON = 500
# The horizons the text reads DPDL's loss at ("within 200 / 400 / 500 rounds"): window ``at_<h>``
# is the mean over the last tenth of the first h rounds.
HORIZONS = (200, 400, HORIZON)
WINDOWS = {
    "speed": f"the mean training loss over rounds 1-{HORIZON} (the area under the curve to the text's "
             f"{HORIZON}-round horizon: lower when the loss falls faster)",
    "final": "the mean training loss over the last tenth of the rounds (after convergence, as fig01.loss_eps_*)",
    **{f"at_{h}": f"the mean training loss over rounds {h - h // 10 + 1}-{h} (the last tenth of the text's "
                  f"{h}-round horizon)" for h in HORIZONS},
}
# The five algorithms in the order the text names them.
CURVE_ALGORITHMS = ("dpdl", "dp_cga", "dp_netfleet", "dp_dpsgd", "muffliato")
_CURVE_BASELINES = CURVE_ALGORITHMS[1:]
# Appendix D, L1464: each algorithm's loss on the ring, N = 10, eps 0.5, "in about 500 rounds".
RING_500 = {"dpdl": 0.39, "dp_cga": 0.56, "dp_netfleet": 0.68, "dp_dpsgd": 1.99, "muffliato": 2.14}
# §VI-B1, L447: each algorithm's loss on the bipartite graph, N = 20, eps 0.5, "in about 500 rounds".
N20_500 = {"dpdl": 0.27, "dp_cga": 0.69, "dp_netfleet": 0.53, "dp_dpsgd": 1.62, "muffliato": 1.64}
# §VI-B1, L451: DPDL's minimum "approximately 0.25 to 0.29 within 500 rounds for N = 10, 20, 30".
N_RANGE_500 = (0.25, 0.29)
N_SWEEP = (10, 20, 30)
# §VI-B1, L453: DPDL at N = 20 reaches "approximately 0.29 within 400 rounds" on the bipartite graph
# and "a similar minimum in only 200 rounds" on the fully connected one.
N20_MINIMUM = 0.29
# The text prints these losses to 0.01.
RING_500_UNIT = 0.01
# The N of every curve point but those of the N = 20 and 30 statements (the study's cells are N = 10).
N10 = 10
_DENSER = ("bipartite", "fully_connected")
_LOWER = (f"loss tolerance {LOSS_REL_TOL:.0%} of the larger + t SE (Student's t, 95%) of the per-seed differences "
          "(of the two means where the seeds differ; one seed: no spread)")
_FACTOR = (f"a factor {1 + LOSS_REL_TOL:g} + t SE (Student's t, 95%) of the per-seed log ratios (of the two means "
           "where the seeds differ; one seed: no spread)")
_DIVERGED = ("A run that diverged counts at the loss where the runner stops it (1,000x its first round's), above "
             "any run that learns")
_TEXT_LEVEL = (f"within the tolerance of the text's value ({LOSS_REL_TOL:.0%} of the larger or half the print unit, "
               f"{RING_500_UNIT / 2:g}, whichever is larger): nearer than the tolerance less the 95% t interval of our "
               "seed mean holds, further than the tolerance plus it fails")
_REACHED = (f"its loss over the last tenth of the rounds below that window's by less than the loss tolerance "
            f"({LOSS_REL_TOL:.0%} of the last tenth's) beyond the 95% t interval of the per-seed differences (the "
            "minimum is reached by then); by more than the tolerance beyond it fails")


def _curve(id_: str, statement: str, quote: str, where: str, scope: str, rule: str) -> ClaimSpec:
    return ClaimSpec(PAPER, id_, statement, quote, where, scope, rule)


CURVE_SPECS = {s.id: s for s in (
    _curve("fig08.ring_lowest_500", "DPDL's loss at about 500 rounds is the lowest of the five (ring, N = 10)",
           "when ϵ=0.5\\epsilon=0.5 and N=10N=10, the average training loss of our DPDL algorithm achieves its "
           "minimum value around 0.390.39 in about 500500 rounds", "Appendix D, Figure 8",
           "MNIST ring, N = 10, eps 0.5, DPDL against each of the four baselines",
           f"per baseline, {WINDOWS['at_500']} above DPDL's by more than the {_LOWER} holds; below DPDL's by more "
           "than that fails; in between inconclusive; every baseline must hold"),
    _curve("fig08.ring_losses_500", "each algorithm's loss at about 500 rounds is the text's (ring, N = 10)",
           "while the ones of the other four reference algorithms, i.e., DP-CGA, DP-NETFLEET, DP-DPSGD, and "
           "MUFFLIATO, are 0.560.56, 0.680.68, 1.991.99, and 2.142.14, respectively, within the same time horizon.",
           "Appendix D, Figure 8",
           "MNIST ring, N = 10, eps 0.5, each of the five algorithms (the text's DPDL 0.39 and the four baselines')",
           f"per algorithm, {WINDOWS['at_500']} (its mean over seeds) within the tolerance of the text's value: "
           f"{LOSS_REL_TOL:.0%} of the larger or half the print unit ({RING_500_UNIT / 2:g}), whichever is larger. "
           "Nearer than the tolerance less the 95% t interval of our seed mean holds, further than the tolerance "
           "plus it fails, otherwise inconclusive; every algorithm must hold"),
    _curve("fig01.n20_lowest_500", "DPDL's loss at about 500 rounds is the lowest of the five (bipartite, N = 20)",
           "when ϵ=0.5\\epsilon=0.5 and N=20N=20, the training loss of our DPDL algorithm achieves its minimum value "
           "around 0.270.27 in about 500500 rounds", "§VI-B1, Figure 1",
           "MNIST bipartite, N = 20, eps 0.5, DPDL against each of the four baselines",
           f"per baseline, {WINDOWS['at_500']} above DPDL's by more than the {_LOWER} holds; below DPDL's by more "
           "than that fails; in between inconclusive; every baseline must hold"),
    _curve("fig01.n20_losses_500", "each algorithm's loss at about 500 rounds is the text's (bipartite, N = 20)",
           "while the ones of the other four reference algorithms, i.e., DP-CGA, DP-NETFLEET, DP-DPSGD, and "
           "MUFFLIATO, are 0.690.69, 0.530.53, 1.621.62, and 1.641.64, respectively, within the same time horizon.",
           "§VI-B1, Figure 1",
           "MNIST bipartite, N = 20, eps 0.5, each of the five algorithms (the text's DPDL 0.27 and the four "
           "baselines')",
           f"per algorithm, {WINDOWS['at_500']} (its mean over seeds) within the tolerance of the text's value: "
           f"{LOSS_REL_TOL:.0%} of the larger or half the print unit ({RING_500_UNIT / 2:g}), whichever is larger. "
           "Nearer than the tolerance less the 95% t interval of our seed mean holds, further than the tolerance "
           "plus it fails, otherwise inconclusive; every algorithm must hold"),
    _curve("fig01.n_minimal", "N has only a minimal effect on DPDL's convergence rate (bipartite, N = 10, 20, 30)",
           "The results indicate that increasing the number of agents has only a minimal effect on the convergence "
           "rate of our algorithm in practice.", "§VI-B1, Figure 1",
           "DPDL, MNIST bipartite, eps 0.5 (Figure 1's middle panel), N = 10 against 20 and 30",
           f"per N of 20 and 30, DPDL's speed ({WINDOWS['speed']}) differs from its speed at N = 10 by less than the "
           f"loss tolerance ({LOSS_REL_TOL:.0%} of N = 10's) beyond the 95% t interval of the difference "
           "(\"minimal\", either way) holds; by more than the tolerance beyond it fails; otherwise inconclusive; "
           "both must hold"),
    _curve("fig01.n_losses_500", "DPDL's minimum loss is 0.25-0.29 within 500 rounds at N = 10, 20 and 30",
           "our algorithm consistently reaches its minimum training loss (approximately 0.250.25 to 0.290.29) within "
           "500500 rounds for N=10,20,30N=10,20,30.", "§VI-B1, Figure 1",
           "DPDL, MNIST bipartite, eps 0.5, N = 10, 20 and 30",
           f"per N, (i) {WINDOWS['at_500']} (its mean over seeds) inside the text's range 0.25-0.29, its distance "
           f"from the range {_TEXT_LEVEL}; (ii) \"within 500 rounds\": {_REACHED}. Otherwise inconclusive; all six "
           "must hold"),
    _curve("fig02.n20_fc_200", "at N = 20 DPDL reaches its minimum, about 0.29, within 400 rounds on the bipartite "
           "graph and within 200 on the fully connected one",
           "when ϵ=0.5\\epsilon=0.5 and N=20N=20, our algorithm reaches its minimum training loss of approximately "
           "0.290.29 within 400400 rounds over the bipartite graph, while it achieves a similar minimum in only "
           "200200 rounds over the fully connected graph.", "§VI-B1, Figures 1-2",
           "DPDL, MNIST, N = 20, eps 0.5, bipartite and fully connected",
           f"(i) bipartite: {WINDOWS['at_400']} {_TEXT_LEVEL} (0.29); (ii) bipartite, \"within 400 rounds\": "
           f"{_REACHED}; (iii) fully connected, \"a similar minimum\": {WINDOWS['at_200']}, the same test against "
           f"0.29; (iv) fully connected, \"in only 200 rounds\": {_REACHED}; (v) \"only\": the bipartite graph's loss "
           f"over rounds 181-200 above the fully connected graph's by more than the {_LOWER}. Otherwise "
           "inconclusive; all five must hold"),
    _curve("fig02.dpdl_denser_faster", "DPDL converges faster and lower on the fully connected graph than on "
           "the bipartite one", "It can be observed that the convergence performance of our algorithm improves "
           "with denser communication topologies", "§VI-B1, Figure 2",
           "DPDL, MNIST, N = 10, eps 0.5, bipartite against fully connected (Figure 2's N = 20 and 30 are not run)",
           f"convergence performance read two ways per seed: speed, {WINDOWS['speed']}; level, {WINDOWS['final']}. "
           f"Each lower on the fully connected graph than on the bipartite by more than the {_LOWER} holds; higher "
           "by more than that fails; otherwise inconclusive; both must hold"),
    _curve("fig02.advantage_grows", "DPDL's advantage over each baseline grows from the bipartite to the fully "
           "connected graph", "and its advantage over the other reference algorithms becomes more pronounced.",
           "§VI-B1, Figure 2",
           "the four baselines against DPDL, MNIST, N = 10, eps 0.5, bipartite and fully connected",
           "DPDL's advantage over a baseline on a graph: the baseline's loss over DPDL's, per seed, in both of "
           "fig02.dpdl_denser_faster's readings (speed and level; a ratio, as the text's \"2.38 to 6.24 times "
           "higher\", so that the lower losses of the denser graph do not shrink it by themselves). Per baseline "
           "and reading, the advantage on the fully connected graph above the bipartite graph's by more than "
           f"{_FACTOR} holds; below it by more than that fails; otherwise inconclusive; all eight must hold"),
    _curve("fig01.small_eps_baselines", "at eps 0.25 DPDL still converges, the baselines' convergence cannot be "
           "ensured (N = 10)", "when ϵ\\epsilon is decreased from 1.01.0 to 0.250.25, our DPDL algorithm still "
           "achieves convergence rapidly and smoothly, whereas the convergences of the other four algorithms cannot "
           "be ensured.", "§VI-B1, Figure 1",
           "MNIST bipartite, N = 10 only (Figure 1's N = 20 and 30 are not run), eps 1 -> 0.25, all five algorithms",
           f"(i) DPDL still converges rapidly: its speed ({WINDOWS['speed']}) at eps 0.25 above its speed at eps 1 "
           f"by less than the loss tolerance ({LOSS_REL_TOL:.0%} of eps 1's) beyond t SE of the per-seed "
           "differences; by more than the tolerance beyond it fails. (ii) Per baseline, \"cannot be ensured\" read "
           "as ending worse than DPDL and losing more to the smaller eps than DPDL does: its level "
           f"({WINDOWS['final']}) at eps 0.25 above DPDL's by more than the {_LOWER}, and its level at eps 0.25 "
           f"over its level at eps 1 above DPDL's ratio by more than {_FACTOR}; the other way by more than the "
           f"margin fails. {_DIVERGED}. "
           "All nine comparisons must hold; otherwise inconclusive. \"Smoothly\" is not judged"),
    _curve("fig08.ring_fastest", "DPDL converges fastest on the ring at N = 10",
           "As illustrated in Fig. 8, when the number of agents N=10N=10, our proposed algorithm demonstrates the "
           "fastest convergence among reference algorithms.", "Appendix D, Figure 8",
           "MNIST ring, N = 10, each eps of Figure 8 (0.25, 0.5, 1), DPDL against each of the four baselines",
           f"per eps and baseline, its speed ({WINDOWS['speed']}) above DPDL's by more than the {_LOWER} holds; "
           f"below DPDL's by more than that fails; otherwise inconclusive; every baseline must hold. {_DIVERGED}"),
)}
# The (algorithm, graph, eps) points each curve claim reads, per eps it is judged at (its setting).
CURVE_POINTS = {
    "fig08.ring_lowest_500": {0.5: [(a, "ring", 0.5, N10) for a in CURVE_ALGORITHMS]},
    "fig08.ring_losses_500": {0.5: [(a, "ring", 0.5, N10) for a in CURVE_ALGORITHMS]},
    "fig01.n20_lowest_500": {0.5: [(a, "bipartite", 0.5, 20) for a in CURVE_ALGORITHMS]},
    "fig01.n20_losses_500": {0.5: [(a, "bipartite", 0.5, 20) for a in CURVE_ALGORITHMS]},
    "fig01.n_minimal": {0.5: [("dpdl", "bipartite", 0.5, n) for n in N_SWEEP]},
    "fig01.n_losses_500": {0.5: [("dpdl", "bipartite", 0.5, n) for n in N_SWEEP]},
    "fig02.n20_fc_200": {0.5: [("dpdl", g, 0.5, 20) for g in _DENSER]},
    "fig02.dpdl_denser_faster": {0.5: [("dpdl", g, 0.5, N10) for g in _DENSER]},
    "fig02.advantage_grows": {0.5: [(a, g, 0.5, N10) for a in CURVE_ALGORITHMS for g in _DENSER]},
    "fig01.small_eps_baselines": {0.25: [(a, "bipartite", e, N10) for a in CURVE_ALGORITHMS for e in (0.25, 1.0)]},
    "fig08.ring_fastest": {e: [(a, "ring", e, N10) for a in CURVE_ALGORITHMS] for e in (0.25, 0.5, 1.0)},
}
# What the text says for each, in the answer's "paper" column.
CURVE_PAPER = {
    "fig08.ring_lowest_500": "DPDL 0.39 lowest; " + ", ".join(f"{display_name(a)} {RING_500[a]:g}"
                                                              for a in _CURVE_BASELINES),
    "fig08.ring_losses_500": ", ".join(f"{display_name(a)} {RING_500[a]:g}" for a in CURVE_ALGORITHMS),
    "fig01.n20_lowest_500": "DPDL 0.27 lowest; " + ", ".join(f"{display_name(a)} {N20_500[a]:g}"
                                                             for a in _CURVE_BASELINES),
    "fig01.n20_losses_500": ", ".join(f"{display_name(a)} {N20_500[a]:g}" for a in CURVE_ALGORITHMS),
    "fig01.n_minimal": "\"only a minimal effect\" of N on DPDL's convergence rate (Figure 1, N = 10, 20, 30)",
    "fig01.n_losses_500": "DPDL's minimum 0.25-0.29 within 500 rounds at N = 10, 20 and 30",
    "fig02.n20_fc_200": f"DPDL {N20_MINIMUM:g} within 400 rounds on the bipartite graph, \"a similar minimum in "
                        "only 200 rounds\" on the fully connected one (N = 20)",
    "fig02.dpdl_denser_faster": "\"improves with denser communication topologies\" (Figure 2; at N = 20 DPDL's "
                                "0.29 within 400 rounds on the bipartite graph, 200 on the fully connected)",
    "fig02.advantage_grows": "\"becomes more pronounced\" (Figure 2; at N = 20 on the fully connected graph the "
                             "baselines' losses are 2.38 to 6.24 times DPDL's)",
    "fig01.small_eps_baselines": "DPDL converges at eps 0.25, the other four \"cannot be ensured\" (Figure 1, curves)",
    "fig08.ring_fastest": "DPDL \"the fastest convergence\" at N = 10 (Figure 8, curves)",
}

# (algorithm, graph, eps, N) -> seed -> window -> mean loss.
Means = Mapping[tuple[str, str, float, int], Mapping[int, Mapping[str, float]]]


def window_means(loss: pd.Series, rounds: int, diverged: bool = False) -> dict[str, float]:
    """A run's :data:`WINDOWS` from its agents' mean training loss of each round (``loss``,
    indexed by round from 1) and its declared ``rounds``. A run that diverged (``diverged``, a
    non-finite loss, or a history that stops before ``rounds``) has every window at the loss where
    the runner stops it, :data:`~dpdl_core.runs.runner.EXPLOSION_FACTOR` times its first round's."""
    from ...runs import EXPLOSION_FACTOR

    loss = loss.sort_index()
    if diverged or loss.empty or int(loss.index[-1]) < rounds or not np.isfinite(loss.to_numpy()).all():
        first = float(loss.iloc[0]) if len(loss) else np.nan
        return dict.fromkeys(WINDOWS, EXPLOSION_FACTOR * first if np.isfinite(first) else np.inf)
    return {"speed": float(loss.loc[1:HORIZON].mean()),
            "final": float(loss.iloc[-max(1, len(loss) // 10):].mean()),
            **{f"at_{h}": float(loss.loc[h - h // 10 + 1:h].mean()) for h in HORIZONS}}


def _seeds(means: Means, point: tuple[str, str, float, int], window: str) -> dict[int, float]:
    return {seed: w[window] for seed, w in means[point].items()}


def _below(label: str, ours: Mapping[int, float], other: Mapping[int, float], paper: float = np.nan) -> Comparison:
    """``ours`` (seed -> loss) below ``other`` by more than :data:`LOSS_REL_TOL` of the larger
    plus t SE (paired where the seeds are the same)."""
    return Comparison.paired(label, other, ours, LOSS_REL_TOL * max(seed_mean(ours), seed_mean(other)), paper=paper)


def _log_ratio(num: Mapping[int, float], den: Mapping[int, float]) -> dict[int, float]:
    """Per seed both ran, log(num / den); where they share no seed, the log ratio of their means."""
    common = sorted(set(num) & set(den))
    return ({s: float(np.log(num[s] / den[s])) for s in common} if common
            else {min(num): float(np.log(seed_mean(num) / seed_mean(den)))})


def _factor_above(label: str, a: Mapping[int, float], b: Mapping[int, float]) -> Comparison:
    """Log ratios ``a`` above ``b`` by more than a factor 1 + :data:`LOSS_REL_TOL` plus t SE."""
    return dataclasses.replace(Comparison.paired(label, a, b, float(np.log1p(LOSS_REL_TOL))), log=True)


def _lowest_at_500(graph: str, n: int, text: Mapping[str, float]):
    """The rule "DPDL's loss at about 500 rounds is the lowest" on (``graph``, N = ``n``),
    each baseline's effect set beside the ``text``'s losses' difference."""
    def rule(m: Means, eps: float) -> tuple[list[Comparison], str]:
        d = _seeds(m, ("dpdl", graph, eps, n), "at_500")
        comps = []
        for b in _CURVE_BASELINES:
            o = _seeds(m, (b, graph, eps, n), "at_500")
            comps.append(_below(f"DPDL {seed_mean(d):.3f} vs {display_name(b)} {seed_mean(o):.3f}", d, o,
                                text[b] - text["dpdl"]))
        return comps, _listing(m, graph, eps, "at_500", n)
    return rule


def _losses_at_500(graph: str, n: int, text: Mapping[str, float]):
    """The rule "each algorithm's loss at about 500 rounds is the ``text``'s" on (``graph``, N = ``n``)."""
    from ...verdicts import mean_interval

    def rule(m: Means, eps: float) -> tuple[list[Comparison], str]:
        comps = []
        for a in CURVE_ALGORITHMS:
            ours = list(_seeds(m, (a, graph, eps, n), "at_500").values())
            mean, paper = float(np.mean(ours)), text[a]
            tol, band = max(LOSS_REL_TOL * max(paper, mean), RING_500_UNIT / 2), mean_interval(ours)
            # The tolerance less our distance from the text: positive when nearer than it.
            comps.append(Comparison(f"{display_name(a)} {mean:.3f} vs {paper:g} (tolerance {tol:.3g})",
                                    tol - abs(mean - paper), band, interval=band, paper=paper, effect=mean, level=True))
        return comps, _listing(m, graph, eps, "at_500", n)
    return rule


def _near(label: str, seeds: Mapping[int, float], low: float, high: float | None = None) -> Comparison:
    """Our seed mean (``seeds``: seed -> loss) at the text's value ``low`` (or inside the range
    ``low``-``high``) within :data:`LOSS_REL_TOL` of the larger or half the print unit, whichever is
    larger; the comparison's value is the tolerance less our distance from it (positive when nearer)."""
    from ...verdicts import mean_interval

    high = low if high is None else high
    ours = list(seeds.values())
    mean = float(np.mean(ours))
    target = min(max(mean, low), high)
    tol, band = max(LOSS_REL_TOL * max(target, mean), RING_500_UNIT / 2), mean_interval(ours)
    text = f"{low:g}" if high == low else f"{low:g}-{high:g}"
    return Comparison(f"{label} {mean:.3f} vs {text} (tolerance {tol:.3g})", tol - abs(mean - target), band,
                      interval=band, paper=target, effect=mean, level=True)


def _still(label: str, new: Mapping[int, float], ref: Mapping[int, float], both_ways: bool = False,
           change: str = "rise") -> Comparison:
    """``new`` (seed -> loss) above ``ref`` by less than :data:`LOSS_REL_TOL` of ``ref``'s mean beyond
    the 95% t interval of the difference (``both_ways``: differing either way by less); the
    comparison's value is the tolerance less the difference (the ``change``, in the label)."""
    from ...verdicts import effect_interval

    diff, half = effect_interval(new, ref)
    tol = LOSS_REL_TOL * seed_mean(ref)
    return Comparison(f"{label}: {seed_mean(ref):.3f} -> {seed_mean(new):.3f}, the tolerance {tol:.3g} less the "
                      f"{'difference' if both_ways else change}", tol - (abs(diff) if both_ways else diff), half,
                      interval=half, effect=diff)


def _reached(label: str, window: Mapping[int, float], final: Mapping[int, float]) -> Comparison:
    """The minimum reached by the end of ``window`` (seed -> loss): the loss over the last tenth
    of the rounds (``final``) below it by less than :data:`LOSS_REL_TOL` of ``final``'s mean beyond
    the 95% t interval (:func:`_still`, read from the end back)."""
    return _still(f"{label}, last tenth -> window", window, final, change="drop after the window")


def _n_minimal(m: Means, eps: float) -> tuple[list[Comparison], str]:
    ref = _seeds(m, ("dpdl", "bipartite", eps, N10), "speed")
    comps = [_still(f"DPDL's speed N = {N10} -> {n}", _seeds(m, ("dpdl", "bipartite", eps, n), "speed"), ref, True)
             for n in N_SWEEP if n != N10]
    return comps, _dpdl_listing(m, [("bipartite", n) for n in N_SWEEP], eps, ("speed", "at_500", "final"))


def _n_losses_500(m: Means, eps: float) -> tuple[list[Comparison], str]:
    comps = []
    for n in N_SWEEP:
        at, final = (_seeds(m, ("dpdl", "bipartite", eps, n), w) for w in ("at_500", "final"))
        comps.append(_near(f"N = {n}: DPDL", at, *N_RANGE_500))
        # Reached by round 500: the level after it is not lower by more than the tolerance.
        comps.append(_reached(f"N = {n}: DPDL by round {HORIZON}", at, final))
    return comps, _dpdl_listing(m, [("bipartite", n) for n in N_SWEEP], eps, ("at_500", "final"))


def _n20_fc_200(m: Means, eps: float) -> tuple[list[Comparison], str]:
    w = {(g, x): _seeds(m, ("dpdl", g, eps, 20), x) for g in _DENSER for x in ("at_200", "at_400", "final")}
    comps = [_near("bipartite, rounds 361-400: DPDL", w["bipartite", "at_400"], N20_MINIMUM),
             _reached("bipartite: DPDL by round 400", w["bipartite", "at_400"], w["bipartite", "final"]),
             _near("fully connected, rounds 181-200: DPDL", w["fully_connected", "at_200"], N20_MINIMUM),
             _reached("fully connected: DPDL by round 200", w["fully_connected", "at_200"],
                      w["fully_connected", "final"]),
             _below(f"rounds 181-200: fully connected {seed_mean(w['fully_connected', 'at_200']):.3f} vs bipartite "
                    f"{seed_mean(w['bipartite', 'at_200']):.3f}", w["fully_connected", "at_200"],
                    w["bipartite", "at_200"])]
    return comps, _dpdl_listing(m, [(g, 20) for g in _DENSER], eps, ("at_200", "at_400", "final"))


def _dpdl_listing(m: Means, points: list[tuple[str, int]], eps: float, windows: tuple[str, ...]) -> str:
    """DPDL's seed means of ``windows`` at each (graph, N) of ``points``."""
    names = {"speed": f"rounds 1-{HORIZON}", "final": "last tenth",
             **{f"at_{h}": f"rounds {h - h // 10 + 1}-{h}" for h in HORIZONS}}
    return "DPDL's mean loss: " + "; ".join(
        f"{g.replace('_', ' ')} N = {n}: " + ", ".join(f"{names[x]} {seed_mean(_seeds(m, ('dpdl', g, eps, n), x)):.3f}"
                                                      for x in windows)
        + f" ({len(m['dpdl', g, eps, n])} seeds)" for g, n in points)


def _denser_faster(m: Means, eps: float) -> tuple[list[Comparison], str]:
    comps = []
    for window in ("speed", "final"):
        bip, fc = (_seeds(m, ("dpdl", g, eps, N10), window) for g in _DENSER)
        comps.append(_below(f"{window}: fully connected {seed_mean(fc):.3f} vs bipartite {seed_mean(bip):.3f}",
                            fc, bip))
    return comps, "; ".join(f"{w}: DPDL bipartite {seed_mean(_seeds(m, ('dpdl', 'bipartite', eps, N10), w)):.3f}, "
                            f"fully connected {seed_mean(_seeds(m, ('dpdl', 'fully_connected', eps, N10), w)):.3f}"
                            for w in ("speed", "final"))


def _advantage(m: Means, eps: float) -> tuple[list[Comparison], str]:
    comps, shown = [], []
    for window in ("speed", "final"):
        for b in _CURVE_BASELINES:
            adv = {g: _log_ratio(_seeds(m, (b, g, eps, N10), window), _seeds(m, ("dpdl", g, eps, N10), window))
                   for g in _DENSER}
            ratio = {g: float(np.exp(seed_mean(v))) for g, v in adv.items()}
            comps.append(_factor_above(f"{window}: {display_name(b)}/DPDL {ratio['bipartite']:.2f}x -> "
                                       f"{ratio['fully_connected']:.2f}x", adv["fully_connected"], adv["bipartite"]))
            shown.append(f"{display_name(b)} {ratio['bipartite']:.2f}x -> {ratio['fully_connected']:.2f}x")
        shown[-len(_CURVE_BASELINES)] = f"{window}: " + shown[-len(_CURVE_BASELINES)]
    return comps, "baseline/DPDL loss, bipartite -> fully connected: " + ", ".join(shown)


def _small_eps(m: Means, eps: float) -> tuple[list[Comparison], str]:
    lo, hi = eps, 1.0
    d_fast = {e: _seeds(m, ("dpdl", "bipartite", e, N10), "speed") for e in (lo, hi)}
    # "Still rapidly": the tolerance less DPDL's slowdown (the interval is the slowdown's).
    comps = [_still(f"DPDL's speed eps {hi:g} -> {lo:g}", d_fast[lo], d_fast[hi], change="slowdown")]
    level = {(a, e): _seeds(m, (a, "bipartite", e, N10), "final") for a in CURVE_ALGORITHMS for e in (lo, hi)}
    d_loss = _log_ratio(level["dpdl", lo], level["dpdl", hi])
    for b in _CURVE_BASELINES:
        comps.append(_below(f"eps {lo:g}: DPDL {seed_mean(level['dpdl', lo]):.3f} vs {display_name(b)} "
                            f"{seed_mean(level[b, lo]):.3f}", level["dpdl", lo], level[b, lo]))
        b_loss = _log_ratio(level[b, lo], level[b, hi])
        comps.append(_factor_above(f"eps {hi:g} -> {lo:g}: {display_name(b)} x{np.exp(seed_mean(b_loss)):.2f} vs DPDL "
                                   f"x{np.exp(seed_mean(d_loss)):.2f}", b_loss, d_loss))
    return comps, (f"DPDL speed {seed_mean(d_fast[hi]):.3f} -> {seed_mean(d_fast[lo]):.3f}; "
                   f"level eps {hi:g} -> {lo:g}: "
                   + ", ".join(f"{display_name(a)} {seed_mean(level[a, hi]):.3f} -> {seed_mean(level[a, lo]):.3f}"
                               for a in CURVE_ALGORITHMS))


def _ring_fastest(m: Means, eps: float) -> tuple[list[Comparison], str]:
    d = _seeds(m, ("dpdl", "ring", eps, N10), "speed")
    comps = [_below(f"DPDL {seed_mean(d):.3f} vs {display_name(b)} {seed_mean(o):.3f}", d, o)
             for b in _CURVE_BASELINES for o in [_seeds(m, (b, "ring", eps, N10), "speed")]]
    return comps, _listing(m, "ring", eps, "speed", N10)


def _listing(m: Means, graph: str, eps: float, window: str, n: int) -> str:
    """Each algorithm's mean of ``window`` at (``graph``, ``eps``, N = ``n``) with its number of seeds."""
    head = {"speed": f"mean loss over rounds 1-{HORIZON}", "at_500": f"mean loss over rounds "
            f"{HORIZON - HORIZON // 10 + 1}-{HORIZON}"}[window]
    return head + ": " + ", ".join(f"{display_name(a)} {seed_mean(_seeds(m, (a, graph, eps, n), window)):.3f} "
                                   f"({len(m[a, graph, eps, n])} seed{'s' * (len(m[a, graph, eps, n]) > 1)})"
                                   for a in CURVE_ALGORITHMS)


_CURVE_RULES = {"fig08.ring_lowest_500": _lowest_at_500("ring", N10, RING_500),
                "fig08.ring_losses_500": _losses_at_500("ring", N10, RING_500),
                "fig01.n20_lowest_500": _lowest_at_500("bipartite", 20, N20_500),
                "fig01.n20_losses_500": _losses_at_500("bipartite", 20, N20_500),
                "fig01.n_minimal": _n_minimal, "fig01.n_losses_500": _n_losses_500,
                "fig02.n20_fc_200": _n20_fc_200,
                "fig02.dpdl_denser_faster": _denser_faster, "fig02.advantage_grows": _advantage,
                "fig01.small_eps_baselines": _small_eps, "fig08.ring_fastest": _ring_fastest}
# Each curve claim's margin in words (the claim's ``tolerance``).
_TEXT_LOSS_TOL = (f"{LOSS_REL_TOL:.0%} of the larger loss or half the print unit ({RING_500_UNIT / 2:g}), whichever "
                  "is larger, -+ the 95% t interval of our seed mean (one seed: none)")
CURVE_TOLERANCE = {
    "fig08.ring_lowest_500": _LOWER, "fig08.ring_losses_500": _TEXT_LOSS_TOL,
    "fig01.n20_lowest_500": _LOWER, "fig01.n20_losses_500": _TEXT_LOSS_TOL,
    "fig01.n_minimal": f"{LOSS_REL_TOL:.0%} of N = 10's speed -+ the 95% t interval of the difference",
    "fig01.n_losses_500": f"{_TEXT_LOSS_TOL}; reached: {LOSS_REL_TOL:.0%} of the last tenth's loss -+ the 95% t "
                          "interval of the per-seed differences",
    "fig02.n20_fc_200": f"{_TEXT_LOSS_TOL}; reached: {LOSS_REL_TOL:.0%} of the last tenth's loss -+ the 95% t "
                        f"interval of the per-seed differences; {_LOWER}",
    "fig02.dpdl_denser_faster": _LOWER, "fig02.advantage_grows": _FACTOR,
    "fig01.small_eps_baselines": f"{_LOWER}; ratios: {_FACTOR}", "fig08.ring_fastest": _LOWER}


def curve_claim(spec_id: str, eps: float, means: Means, condition: str = "") -> Claim:
    """Curve claim ``spec_id`` (:data:`CURVE_SPECS`) at ``eps``, judged on ``means``: (algorithm,
    graph, eps, N) -> seed -> :func:`window_means`, holding every point of :data:`CURVE_POINTS`
    at ``eps``. The evidence has the text's words (``paper``), our window means (``ours``) and
    the comparisons (``why``)."""
    comps, ours = _CURVE_RULES[spec_id](means, eps)
    claim = CURVE_SPECS[spec_id].judge(comps, CURVE_TOLERANCE[spec_id], condition=condition)
    return dataclasses.replace(claim, evidence={"paper": CURVE_PAPER[spec_id], "ours": ours, "why": claim.evidence})


# Every claim of the paper, by id.
SPECS = {**{s.id: s for specs in TABLE_SPECS.values() for s in specs}, **ATTACK_SPECS, **ROUND_SPECS, **LOSS_SPECS,
         **CURVE_SPECS}

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
