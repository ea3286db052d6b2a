"""Every result statement of the straggler paper (``straggler_resilient_dp.txt``), and what the
package does with it.

One :class:`~dpdl_core.verdicts.statements.Statement` per result statement of the abstract (L12), the
contributions (L24-28), the latency lemmas (L140-152), the theorems and their remarks (L158-210)
and the numerical results (Sec. VI, L223-233); the text has no conclusion section. "L" is the line
of the text. ``judged`` statements name the claims of :mod:`.claims` that decide them;
``not_run`` ones say which computation would, on the study's stored curves in
``results/straggler/`` (six curves, SS-Ring and SS-Rand-Ring at p = 1e-4, 1/2, 7/10, each 100 + 300
runs x 50,000 hops on California housing, run r of every curve on the same data split) or on the
package's exact theorems (:mod:`.theorems`). The paper states no table.
"""
from __future__ import annotations

from ...verdicts import Statement

__all__ = ["STATEMENTS"]

_TRADE_OFF = ("rand_ring_small_p.printed", "rand_ring_small_p.diagnostic", "speedup.gamma", "speedup.lomax")
_SPEEDUP = ("no_speedup_exponential", "speedup.gamma", "speedup.lomax")
_SMALL_ERROR = ("rand_ring_small_error.printed", "rand_ring_small_error.diagnostic")
_UNPROVED = "a guarantee whose proof the text omits (L28)"

STATEMENTS: tuple[Statement, ...] = (
    # Abstract (L12) and contributions (L24-28)
    Statement("s01_abstract_trade_off",
              "Our results show a trade-off between training latency, accuracy, and privacy, parameterized by the "
              "timeout of the skipping scheme.", "abstract, L12", "trend", "judged", claims=_TRADE_OFF),
    Statement("s02_contribution_trade_off", "Our results reveal a trade-off parameterized by the timeout of the "
              "skipping scheme.", "§I contributions, L24", "trend", "judged", claims=_TRADE_OFF),
    Statement("s03_skipping_faster_some_models",
              "showing that skipping is beneficial for faster convergence for certain popular computational delay "
              "models considered in the literature", "§I contributions, L25", "convergence", "judged",
              claims=("lemma2_p_star", *_SPEEDUP)),
    Statement("s04_randomization_better_convergence_and_privacy",
              "We show that randomizing the processing order of nodes on the ring provides an improvement in both "
              "convergence behavior and privacy in the long run.", "§I contributions, L26", "convergence", "judged",
              claims=("rand_ring_long_run_convergence", "rand_ring_small_error.printed",
                      "rand_ring_small_error.diagnostic")),
    Statement("s05_randomization_improves_trade_off",
              "Hence, randomization is capable of enhancing the privacy-convergence tradeoff (see Section VI-A).",
              "§I contributions, L26", "privacy", "judged", claims=_SMALL_ERROR),
    Statement("s06_experiments_validate_theory",
              "Finally, we present results for logistic regression on a real-world dataset to validate our "
              "theoretical findings.", "§I, L28", "comparison", "not_testable",
              why="names no finding; what the lower panels bear on is L233's speed-up and its agreement with "
                  "Lemma 2, s28 (judged) and s29"),
    # Latency (Lemmas 1-2, L140-152)
    Statement("s07_shorter_update_time_helps",
              "we would expect shorter times between token updates (all other properties being the same) to be "
              "beneficial for convergence", "§III-B, L146", "convergence", "judged", claims=_SPEEDUP),
    Statement("s08_lemma1_latency", "The expected total latency for the skipping scheme in Algorithm 1 is",
              "§III-B, Lemma 1, L140", "theory", "judged", claims=("lemma1_monte_carlo",)),
    Statement("s09_lemma2_optimal_timeout",
              "The value of $t_{\\text{ss}}$ that minimizes the average time between two consecutive updates of the "
              "token is given by the solution of the optimization problem", "§III-B, Lemma 2, L150", "theory",
              "judged",
              claims=("lemma2_optimum_monte_carlo",)),
    Statement("s10_theorem1_bound",
              "the expected difference between the minimum value $f(\\tau^*; \\cdot)$ and that from Algorithm 1 "
              "with an arbitrary learning rate parameter $\\zeta > 0$ after $h_{\\text{max}}$ steps is bounded as",
              "§IV, Theorem 1, L158", "theory", "not_testable",
              why=f"{_UNPROVED}; at the paper's constants it is vacuous: the bound is at least 143 for every "
                  "h_max up to 100,000, the lower panels' 50,000 hops included (theorems.thm1_bound), while the "
                  "logistic loss of Sec. VI-B with |tau| <= d_W/2 = 5 and unit-norm features has f - f* <= "
                  "log(1 + e^5) = 5.0, so no run can exceed it"),
    Statement("s11_rate_log_over_sqrt",
              "from which it can be proved (using [37, Thm. 1]) that the asymptotic convergence rate equals "
              "$O(\\log(h_{\\text{max}})/\\sqrt{h_{\\text{max}}})$", "§IV, L168", "theory", "not_testable",
              why="an asymptotic order of the bound, proved (proof omitted), not measured; theorems.thm1_bound times "
                  "sqrt(h_max)/log(h_max) stays between 3,800 and 7,800 for h_max from 10 to 10^6 (every p, both "
                  "schemes), consistent with it, but a finite grid cannot decide an order"),
    Statement("s12_rate_vs_literature",
              "This rate is the same as that of [34, Thm. 2], while being a $\\log(h_{\\text{max}})$ -factor worse "
              "compared to [35, Thm. 1].", "§IV, L168", "theory", "not_testable",
              why="compares the order of this bound with other papers' bounds; nothing to run"),
    Statement("s13_bias_same_asymptotics",
              "Note that the asymptotic behavior of the bound in Theorem 1 is the same for $\\lambda_1 = 0$ and "
              "$\\lambda_1 > 0$ .", "§IV, L170", "theory", "not_testable",
              why="an asymptotic property of the bound; theorems.thm1_bound's SS-Ring over SS-Rand-Ring ratio at p = "
                  "1e-4 is 1.28 at h_max = 10^3, 1.54 at 10^5 and 1.03 at 10^6, consistent with it, but a finite "
                  "grid cannot decide a limit"),
    Statement("s14_bias_does_not_slow",
              "Hence, a biased (sub)gradient estimate that converges to unbiased exponentially fast does not "
              "influence the asymptotic convergence rate.", "§IV, L170", "theory", "not_testable",
              why="follows from s13, a property of the bound as h_max grows without limit; nothing to run"),
    Statement("s15_theorem2_ss_ring_ndp",
              "Then, the SS-Ring scheme on a ring with $n$ nodes and with learning rate parameter $0 < \\zeta \\leq "
              "2/\\beta$ achieves $(\\varepsilon_{\\text{ss}}, \\delta + \\delta')$ -NDP", "§V, Theorem 2, L184",
              "privacy", "judged", claims=("theorem2_ndp_audit",)),
    Statement("s16_theorem3_ss_rand_ring_ndp",
              "Then, the SS-Rand-Ring scheme on a ring with $n$ nodes and with learning rate parameter $0 < \\zeta "
              "\\leq 2/\\beta$ achieves $(\\varepsilon_{\\text{ss}}, \\delta + \\delta')$ -NDP",
              "§V, Theorem 3, L196", "privacy", "judged", claims=("theorem3_ndp_audit",)),
    # Sec. VI-A: upper panels (analytic)
    Statement("s17_latency_upper_left",
              "parameterized by the average latency (Lemma 1), which increases toward the upper left corner",
              "Sec. VI-A, L223", "trend", "judged",
              claims=("latency_upper_left.ss_ring", "latency_upper_left.printed", "latency_upper_left.diagnostic")),
    Statement("s18_lemma2_p_star",
              "since $p = 10^{-4}$ and $7/10$ are close to the values of $p$ given by Lemma 2, respectively 0 and "
              "$0.710/0.737$ for the exponential and gamma/Pareto delay models", "Sec. VI-A, L223", "magnitude",
              "judged", claims=("lemma2_p_star",)),
    Statement("s19_similar_across_models",
              "As can be seen from the figure, the trade-offs look similar for all latency models considered.",
              "Sec. VI-A, L225", "comparison", "not_testable",
              why="Theorems 1-3 depend on p and h_max, not on the latency model, so the upper panels' curves are "
                  "identical for the three models by construction (only the latency labels along them differ); "
                  "nothing measured can confirm or refute it, and the paper gives no criterion for 'similar'. "
                  "similar_across_models records it as by construction, never as evidence"),
    Statement("s20_rand_ring_better_small_error",
              "SS-Rand-Ring gives better trade-off curves (especially for $p = 10^{-4}$ , i.e., virtually no "
              "skipping) for smaller values of error in function minimization", "Sec. VI-A, L225", "comparison",
              "judged", claims=_SMALL_ERROR),
    Statement("s21_rand_ring_worse_large_error",
              "while the situation changes for higher values of error (i.e., at the initial stages of Algorithm 1's "
              "execution)", "Sec. VI-A, L225", "comparison", "judged",
              claims=("rand_ring_large_error.printed", "rand_ring_large_error.diagnostic")),
    Statement("s22_randomization_long_run",
              "Hence, path randomization improves the trade-off in the long run", "Sec. VI-A, L225", "comparison",
              "judged", claims=_SMALL_ERROR),
    Statement("s23_ss_ring_no_skip_worst",
              "On the contrary, the SS-Ring curve for $p = 10^{-4}$ is the worst, which means that skipping helps.",
              "Sec. VI-A, L227", "comparison", "judged", claims=("ss_ring_no_skip_worst",)),
    Statement("s24_ss_ring_on_top",
              "there is not much difference between the SS-Ring curves for $p = 1/2$ and $p = 7/10$ (they are almost "
              "on top of each other and hence difficult to distinguish)", "Sec. VI-A, L227", "comparison", "judged",
              claims=("ss_ring_on_top",)),
    Statement("s25_choose_timeout_by_speed",
              "Therefore, one should choose the timeout based on faster convergence (cf. Lemma 2).",
              "Sec. VI-A, L227", "convergence", "not_testable",
              why="a recommendation drawn from s23-s24 (judged) and Lemma 2 (s18), with no measurable content of its "
                  "own"),
    Statement("s26_rand_ring_favours_small_p",
              "On the other hand, SS-Rand-Ring favors smaller values of $p$ (i.e., larger timeout)",
              "Sec. VI-A, L227", "privacy", "judged",
              claims=("rand_ring_small_p.printed", "rand_ring_small_p.diagnostic")),
    Statement("s27_small_p_costs_latency", "at the expense of a higher training latency as shown in the next "
              "subsection", "Sec. VI-A, L227", "convergence", "judged", claims=("speedup.gamma", "speedup.lomax")),
    # Sec. VI-B: lower panels (logistic regression)
    Statement("s28_clear_speedup_except_exponential",
              "We observe that skipping achieves a clear speed-up compared to no skipping, except for the exponential "
              "delay model", "Sec. VI-B, L233", "comparison", "judged", claims=_SPEEDUP),
    Statement("s29_predicted_by_lemma2", "as predicted well by Lemma 2", "Sec. VI-B, L233", "magnitude", "judged",
              claims=("lemma2_predicts_speedup",)),
    Statement("s30_no_skipping_more_private",
              "However, as can be seen from the upper plots, no skipping provides a slightly higher privacy for the "
              "SS-Rand-Ring scheme.", "Sec. VI-B, L233", "privacy", "judged",
              claims=("rand_ring_small_p.printed", "rand_ring_small_p.diagnostic")),
)
