"""Every result statement of the PDSL paper (``pdsl.txt``), and what the package does with it.

One :class:`~dpdl_core.verdicts.statements.Statement` per result statement of the abstract (L11), the
contributions (L26-30), the theory (§V, L251-312), the experiments (§VI-C, L342-508) and the
conclusion (L531); "L" is the line of ``pdsl.txt``. A statement is ``judged`` when a claim of
:mod:`.claims` decides it and the committed study (``results/pdsl/``) holds runs of its own
setting; one about settings the study lacks (other ε or M) is ``not_run`` and names the claim
that decides it once they are run.

Every number the text quotes for Tables I-II agrees with the table to one unit of its last
printed digit (the "improvements" in % are differences in percentage points; the "times
higher" ratios are mostly truncated, 1.3867 printed 1.38), except the one ``inconsistent``
statement; ``tests/test_statements.py`` recomputes each from ``reference/pdsl_accuracy.csv``.
The losses the text quotes for Figures 1 and 4 have no table to check them against.

Costs are core-hours on one core beside a second study worker, from :mod:`.study`'s per-round
constants (PDSL 60 s a round at MNIST, fully connected, M = 10, |Q| = 500, scaled by its
Shapley games; a baseline 6.6 s at M = 10; CIFAR-10 3x) over 200 rounds. Its games are not
scaled by M for the bipartite and ring graphs; here they are (bipartite M = 20: 20 agents x
10 permutations of 11 players, 2.2x the fully connected M = 10 games; ring M = 20: 2 x the
ring M = 10 games). A cell is PDSL and the four baselines with seeds 1-2 of the strongest
baseline, as the study runs them. Per run: MNIST PDSL 3.0 (fully connected M = 10), 11.0
(M = 20), 2.1 / 6.2 (bipartite), 0.6 / 0.8 (ring), a baseline 0.37 / 0.73; CIFAR-10 PDSL 5.3,
17.8, 3.8 / 10.3, 1.4 / 1.8, a baseline 0.63 / 1.26. On an H100 the study's MNIST runs took
1.2-4.8 min (PDSL) and 0.3-3.3 min (baselines).
"""
from __future__ import annotations

from ...verdicts import Statement

__all__ = ["STATEMENTS"]

# How a stored run's convergence round is read (the convergence statements name none).
_CONVERGED = ("its convergence round (the first round after which its mean training loss stays within 5% of its "
              "final loss, the mean of the last logged rounds as the lower_loss claims read it; none for a run that "
              "diverged)")
_GPU = "affordable on a GPU"
_PROOFS_ELSEWHERE = ("§V's proofs are in an online supplement [39] the text does not include")

STATEMENTS: tuple[Statement, ...] = (
    # Abstract (L11) and contributions (L26-30)
    Statement("s01_abstract_efficacy",
              "We conduct both solid theoretical analysis and extensive experiments to demonstrate the efficacy of our "
              "PDSL algorithm in terms of privacy preservation and convergence.", "abstract, L11", "comparison",
              "not_testable",
              why="names no quantity or comparison; its measurable content is §VI's statements, each listed here "
                  "(s15-s56)"),
    Statement("s02_robust_algorithm",
              "We propose PDSL, an innovative and robust decentralized learning algorithm with DP to address "
              "heterogeneous data distribution and privacy leakage risks.", "§I contributions, L26", "robustness",
              "not_testable", why="'robust' names no perturbation or measure; the experiments' statements are s15-s56"),
    Statement("s03_prove_dp_and_convergence",
              "We conduct rigorous theoretical analysis to prove the DP guarantee of our algorithm and verify its "
              "convergence under the DP framework.", "§I contributions, L28", "theory", "not_testable",
              why=f"proofs, not measurements ({_PROOFS_ELSEWHERE}); see s05 (Theorem 1) and s06-s10 (Theorem 2, "
                  "Corollary 1)"),
    Statement("s04_experiments_validate",
              "The outcomes validate both its practical viability and efficacy.", "§I contributions, L30",
              "comparison", "not_testable",
              why="a summary of §VI with no measurable content of its own; §VI's statements are s15-s56"),
    # Theory (§V)
    Statement("s05_theorem1_dp_per_round",
              "Algorithm 1 can guarantee (ϵ,δ)(\\epsilon,\\delta)-DP in each round, if", "§V-A, Theorem 1, L251",
              "privacy", "not_testable",
              why="a guarantee, decided by proof and not by a run. As printed its sigma is infinite: eq. (19) gives "
                  "the worst player of every game weight 0, so phi_min = 0 in eq. (27); even at its best case, "
                  "phi_min = 1/n, it is 4,213 x C at MNIST, fully connected, M = 10, eps 0.08, noise that cannot "
                  "give Table I's accuracies; it is per round (no composition over T), needs eps < 1 (Table II's "
                  "eps = 1 is outside), and does not cover the shared validation set Q (docs/pdsl.md, 'Theorem 1')"),
    Statement("s06_noise_cannot_disturb_convergence",
              "It is a minor polynomial factor and thus cannot disturb the convergence of our algorithm.",
              "§V-B, L279", "theory", "not_testable",
              why=f"a reading of Theorem 2's bound ({_PROOFS_ELSEWHERE}). Condition (31) requires gamma > "
                  "(1 - alpha)^2/alpha: 0.5 at MNIST's alpha = 0.5 and 0.129 at CIFAR-10's alpha = 0.7, while §VI "
                  "uses gamma = 0.001 and 0.01, so no experiment of the paper is covered (docs/pdsl.md, "
                  "'Convergence (Theorem 2)'). The study's PDSL runs at the paper's noise diverged"),
    Statement("s07_rate_sigma2_over_sqrt_t",
              "the convergence rate of our PDSL algorithm mainly depends on 𝒪(σ2T)\\mathcal{O}\\left(\\frac{"
              "\\sigma^{2}}{\\sqrt{T}}\\right)", "§V-B, Corollary 1, L312", "theory", "not_testable",
              why=f"the order of an upper bound as T grows ({_PROOFS_ELSEWHERE}); a bound's order is not a measured "
                  "rate, and condition (31) excludes §VI's step sizes (s06)"),
    Statement("s08_stronger_noise_slower_convergence",
              "When ’stronger’ Gaussian noise is adopted for higher differential privacy preservation, we have to be "
              "content with slower convergence.", "§V-B, L312", "trend", "judged",
              claims=("text.slower_at_stronger_noise",)),
    Statement("s09_linear_speedup",
              "it is revealed that our PDSL algorithm has a linear speedup (with respect to TT)", "§V-B, L312",
              "theory", "not_testable",
              why="a property of the bound (35), not a measurement; its leading term K sigma^2 d / sqrt(T) does not "
                  "shrink with M (only the 1/(M sqrt(T)) term does), so it is no speed-up in the number of agents, "
                  "the usual sense of 'linear speedup'; condition (31) excludes §VI's step sizes (s06)"),
    Statement("s10_rate_comparable_to_dsgd",
              "this convergence rate is comparable to the well-known results in decentralized SGD algorithms",
              "§V-B, L312", "theory", "not_testable",
              why="compares orders of upper bounds with other papers' bounds; nothing to run"),
    # §VI-C1, MNIST (Figures 1-3, Table I)
    Statement("s11_fig1_faster_convergence",
              "our PDSL algorithm exhibits a faster convergence rate than the other four reference algorithms across "
              "the different privacy budgets", "§VI-C1, L342 (Figure 1)", "convergence", "judged",
              claims=("fig01.faster_convergence",)),
    Statement("s12_fig1_min_loss_80_rounds",
              "our PDSL algorithm can reach its minimum loss value after about 8080 rounds",
              "§VI-C1, L342 (Figure 1)", "convergence", "judged",
              claims=("fig01.min_loss_at_80",)),
    Statement("s13_fig1_80_rounds_at_m20",
              "Even with an increased number of agents, the convergence rate of our PDSL algorithm remains "
              "consistent, ensuring that 8080 rounds are still sufficient for convergence.", "§VI-C1, L342 (Figure 1)",
              "robustness", "judged",
              claims=("fig01.80_rounds_at_m20",)),
    Statement("s14_fig1_baselines_slower_at_m20",
              "when the number of agents increases (e.g., M=20M=20), the other four reference algorithms require more "
              "communication rounds to achieve convergence", "§VI-C1, L342 (Figure 1)", "convergence", "judged",
              claims=("fig01.baselines_slower_at_m20",)),
    Statement("s15_fig1_m20_netfleet_100_others_180",
              "when M=20M=20, DP-NET-FLEET algorithm reaches convergence within about 100100 rounds, while DP-DPSGD, "
              "DP-CGA and MUFFLIATO algorithms fail to guarantee convergence even after 180180 communication rounds",
              "§VI-C1, L342 (Figure 1)", "convergence", "judged",
              claims=("fig01.m20_netfleet_100_others_180",)),
    Statement("s16_fig1_lower_loss",
              "compared to other reference algorithms, our PDSL algorithm achieves a lower average loss across the "
              "different values of ϵ\\epsilon", "§VI-C1, L344 (Figure 1)", "comparison", "judged",
              claims=("fig01.lower_loss",)),
    Statement("s17_fig1_pdsl_loss_0_1",
              "when M=10M=10 and ϵ=0.3\\epsilon=0.3, the average loss of PDSL is about 0.10.1 when the convergence is "
              "reached", "§VI-C1, L344 (Figure 1)", "magnitude", "judged",
              claims=("fig01.pdsl_loss_0_1",)),
    Statement("s18_fig1_loss_ratios_eps03",
              "it is 1.61.6 times lower than that of DP-NET-FLEET, 3.53.5 times lower than that of MUFFLIATO, 3.23.2 "
              "times lower than that of DP-CGA, and 5.85.8 times lower than that of DP-DPSGD",
              "§VI-C1, L344 (Figure 1)", "magnitude", "judged",
              claims=("fig01.loss_ratios_eps03",)),
    Statement("s19_fig1_lower_loss_small_eps",
              "As the privacy budget ϵ\\epsilon decreases (e.g., ϵ=0.1,0.08\\epsilon=0.1,0.08) such that more noise is "
              "injected, our PDSL algorithm still exhibits a lower average loss compared to other reference "
              "algorithms.", "§VI-C1, L344 (Figure 1)", "comparison", "not_run",
              needs="fig01.lower_loss decides it once Figure 1's eps 0.08 and 0.1 panels are run (the study has eps "
                    "0.3 only): the four baselines at M = 10 (PDSL is stored) and both cells at M = 20, 35.3 "
                    "core-hours, " + _GPU),
    Statement("s20_fig1_loss_ratios_eps008",
              "when M=10,ϵ=0.08M=10,\\epsilon=0.08, the final average loss of PDSL is 2.52.5 times lower than that of "
              "MUFFLIATO algorithm, 22 times lower than that of DP-CGA algorithm, and 3.53.5 times lower than that of "
              "DP-DPSGD algorithm", "§VI-C1, L344 (Figure 1)", "magnitude", "not_run",
              needs="MUFFLIATO, DP-CGA and DP-DPSGD at MNIST, fully connected, M = 10, eps 0.08 (PDSL is stored: "
                    "mnist/fc10/eps0.08/Q500/PDSL), one seed each: 1.1 core-hours on a CPU; then the loss ratios "
                    "against 2.5, 2 and 3.5"),
    Statement("s21_fig1_pdsl_loss_stable_in_m",
              "the average loss of PDSL remains nearly unchanged with an increased number of agents",
              "§VI-C1, L344 (Figure 1)", "robustness", "judged", claims=("fig01.stable_in_m",)),
    Statement("s22_fig1_baselines_loss_grows_with_m",
              "unlike the other reference algorithms which show a significant increase", "§VI-C1, L344 (Figure 1)",
              "trend", "judged",
              claims=("fig01.baselines_loss_grows_with_m",)),
    Statement("s23_fig1_m20_ratios_6_to_15",
              "the final average loss of PDSL is 6156\\sim 15 times lower than the ones of the reference algorithms",
              "§VI-C1, L344 (Figure 1)", "magnitude", "judged",
              claims=("fig01.m20_ratios_6_to_15",)),
    Statement("s24_fig23_lower_loss_sparse",
              "Even on the sparser communication graphs, our PDSL algorithm has smaller average loss than the other "
              "reference algorithms", "§VI-C1, L369 (Figures 2-3)", "comparison", "judged",
              claims=("fig02.lower_loss", "fig03.lower_loss")),
    Statement("s25_fig23_converges_100_110",
              "converges within about 100110100\\sim 110 rounds across different values of ϵ\\epsilon",
              "§VI-C1, L369 (Figures 2-3)", "convergence", "judged",
              claims=("fig23.converges_by_110",)),
    Statement("s26_fig23_baselines_need_more_rounds",
              "In contrast, the DP-CGA, MUFFLIATO and DP-DPSGD algorithms require much more communication rounds to "
              "achieve convergence.", "§VI-C1, L369 (Figures 2-3)", "convergence", "judged",
              claims=("fig23.baselines_need_more_rounds",)),
    Statement("s27_fig3_netfleet_comparable_ring",
              "in comparison to PDSL, the DP- NET-FLEET algorithm demonstrates comparable convergence performance on "
              "the ring graph", "§VI-C1, L369 (Figure 3)", "convergence", "judged",
              claims=("fig03.netfleet_comparable",)),
    Statement("s28_netfleet_accuracy_much_smaller",
              "However, as will be shown later, the test accuracy of DP-NET-FLEET is much smaller.",
              "§VI-C1, L369 (Table I)", "comparison", "judged", claims=("tab01.best",)),
    Statement("s29_tab1_significantly_outperforms",
              "The results reveal that PDSL significantly outperforms the other reference algorithms.",
              "§VI-C1, L416 (Table I)", "comparison", "judged", claims=("tab01.best",)),
    Statement("s30_tab1_pdsl_0_938",
              "When M=10,ϵ=0.08M=10,\\epsilon=0.08, the test accuracy of PDSL is 0.9380.938",
              "§VI-C1, L416 (Table I)", "magnitude", "judged",
              claims=("tab01.pdsl_0_938",)),
    Statement("s31_tab1_gains_eps008",
              "it is an improvement of 8.5%8.5\\% over DP-DPSGD, 5.7%5.7\\% over DP-CGA, 10%10\\% over MUFFLIATO, "
              "and 2.6%2.6\\% over DP-NET-FLEET, respectively", "§VI-C1, L416 (Table I)", "magnitude", "not_run",
              needs="the four baselines at MNIST, fully connected, M = 10, eps 0.08 (PDSL is stored), with seeds 1-2 "
                    "of DP-NETFLEET: 2.2 core-hours on a CPU; then PDSL's gain over each in pp against 8.5, 5.7, "
                    "10 and 2.6"),
    Statement("s32_tab1_accuracy_stable_in_m",
              "as the number of agents increases, the test accuracy of PDSL remains relatively stable, in contrast to "
              "the significant decline observed in the other reference algorithms", "§VI-C1, L416 (Table I)",
              "robustness", "judged", claims=("tab01.stable_in_m",)),
    Statement("s33_tab1_m20_gains_3_to_26",
              "when M=20M=20, ϵ=0.08\\epsilon=0.08, the test accuracy of PDSL is 0.9320.932, demonstrating an "
              "improvement of around 3%26%3\\%\\sim 26\\% over the reference algorithms", "§VI-C1, L416 (Table I)",
              "magnitude", "not_run",
              needs="the MNIST, fully connected, M = 20, eps 0.08 cell (PDSL and the four baselines): 15.4 "
                    "core-hours (PDSL alone 11.0), " + _GPU),
    Statement("s34_tab1_grows_with_epsilon",
              "as privacy budget ϵ\\epsilon is increased (e.g., ϵ\\epsilon = 0.1, 0.3), the test accuracy of PDSL "
              "increases significantly", "§VI-C1, L416 (Table I)", "trend", "judged",
              claims=("tab01.grows_with_epsilon",)),
    Statement("s35_tab1_best_every_graph",
              "Table I also reveals that the test accuracy of PDSL is better than the other reference algorithms on "
              "the different communication graphs", "§VI-C1, L416 (Table I)", "comparison", "judged",
              claims=("tab01.best",)),
    Statement("s36_tab1_bipartite_m20_ratios",
              "Especially when M=20,ϵ=0.3M=20,\\epsilon=0.3, the test accuracy of PDSL is 1.381.38 times higher than "
              "DP-DPSGD, 1.121.12 times higher than DP-CGA, 1.131.13 times higher than MUFFLIATO, and 1.061.06 times "
              "higher than DP-NET-FLEET on bipartite graphs", "§VI-C1, L416 (Table I)", "magnitude", "not_run",
              needs="the MNIST, bipartite, M = 20, eps 0.3 cell: 10.6 core-hours (PDSL 6.2) on one CPU core "
                    "or " + _GPU),
    Statement("s37_tab1_ring_m20_ratios",
              "On the ring graph, the test accuracy of PDSL is around 1.021.361.02\\sim 1.36 times higher than the "
              "those of the reference algorithms", "§VI-C1, L416 (Table I)", "magnitude", "not_run",
              needs="the MNIST, ring, M = 20, eps 0.3 cell: 5.2 core-hours on a CPU"),
    # §VI-C2, CIFAR-10 (Figures 4-6, Table II)
    Statement("s38_fig45_outperforms_three",
              "our PDSL algorithm significantly outperforms DP-DPSGD, DP-CGA and MUFFLIATO algorithms with different "
              "privacy budget on both fully connected graphs and bipartite graphs", "§VI-C2, L439 (Figures 4-5)",
              "comparison", "judged", claims=("fig04.lower_loss", "fig05.lower_loss")),
    Statement("s39_fig4_pdsl_loss_0_65",
              "when ϵ=1,M=10\\epsilon=1,M=10, the average loss of PDSL after 200200 communication rounds is around "
              "0.650.65 on the fully connected graph", "§VI-C2, L439 (Figure 4)", "magnitude", "judged",
              claims=("fig04.pdsl_loss_0_65",)),
    Statement("s40_fig4_similar_to_netfleet", "it is similar to the average loss of DP-NET-FLEET",
              "§VI-C2, L439 (Figure 4)", "comparison", "judged",
              claims=("fig04.similar_to_netfleet",)),
    Statement("s41_fig4_loss_ratios_m10",
              "and 2.22.2 times smaller than DP-DPSGD, 2.12.1 times smaller than MUFFLIATO, and 1.671.67 times smaller "
              "than DP-CGA", "§VI-C2, L439 (Figure 4)", "magnitude", "judged",
              claims=("fig04.loss_ratios_m10",)),
    Statement("s42_fig4_lower_loss_more_agents",
              "Furthermore, we can see that PDSL still maintains better average loss than other reference algorithms "
              "as the number of agents increases.", "§VI-C2, L439 (Figure 4)", "comparison", "not_run",
              needs="fig04.lower_loss decides it once Figure 4's M = 20 panels are run (the study has M = 10, eps 1): "
                    "CIFAR-10, fully connected, M = 20, eps 0.5, 0.7 and 1, 75.9 core-hours (PDSL 17.8 a run), "
                    + _GPU),
    Statement("s43_fig4_loss_ratios_m20",
              "when ϵ=1\\epsilon=1 and MM is increased to 2020, the average loss of PDSL is 2.342.34 times smaller "
              "than DP-DPSGD, 1.741.74 times smaller than DP-CGA, 2.22.2 times smaller than MUFFLIATO, while "
              "1.231.23 times smaller than DP-NET-FLEET", "§VI-C2, L439 (Figure 4)", "magnitude", "not_run",
              needs="the CIFAR-10, fully connected, M = 20, eps 1 cell: 25.3 core-hours (PDSL 17.8), " + _GPU),
    Statement("s44_fig6_netfleet_equal_or_better",
              "compared to PDSL, DP-NET-FLEET exhibits equivalent or even superior convergence properties, as "
              "evidenced in Fig. 6", "§VI-C2, L439 (Figure 6)", "convergence", "not_run",
              needs="PDSL and DP-NETFLEET (three seeds) on CIFAR-10's ring, M = 10 and 20, eps 0.5, 0.7 and 1: 26.6 "
                    "core-hours, " + _GPU + " (one panel, M = 10, eps 1: 3.3 core-hours on a CPU); then per "
                    "run " + _CONVERGED + " and the final loss, DP-NETFLEET's not worse than PDSL's"),
    Statement("s45_netfleet_accuracy_lower",
              "However, the test accuracy for DP-NET-FLEET is lower than that achieved by our PDSL algorithm",
              "§VI-C2, L439 (Table II)", "comparison", "judged", claims=("tab02.best",)),
    Statement("s46_tab2_better_accuracy",
              "PDSL performs better in test accuracy compared to the other reference algorithms",
              "§VI-C2, L508 (Table II)", "comparison", "judged", claims=("tab02.best",)),
    Statement("s47_tab2_pdsl_0_758",
              "when ϵ=1,M=10\\epsilon=1,M=10, the test accuracy of our PDSL algorithm on the fully connected graph is "
              "0.7580.758", "§VI-C2, L508 (Table II)", "magnitude", "judged",
              claims=("tab02.pdsl_0_758",)),
    Statement("s48_tab2_gains_eps1_m10",
              "it is an improvement of 27.3%27.3\\% over DP-DPSGD, 16.2%16.2\\% over DP-CGA, 23%23\\% over "
              "MUFFLIATO, and 20.7%20.7\\% over DP-NET-FLEET", "§VI-C2, L508 (Table II)", "magnitude", "judged",
              claims=("tab02.gains_eps1_m10",)),
    Statement("s49_tab2_best_small_eps_more_agents",
              "as the privacy budget ϵ\\epsilon becomes smaller or the number of agents increases, PDSL still "
              "maintains superior performance over the other reference algorithms in terms of test accuracy",
              "§VI-C2, L508 (Table II)", "comparison", "not_run",
              needs="tab02.best decides it once Table II's cells with eps < 1 or M = 20 are run (the study has eps 1, "
                    "M = 10 only): 15 cells, 200.8 core-hours (fully connected 94.0, bipartite 68.5, ring 38.3), "
                    + _GPU),
    Statement("s50_tab2_m20_gains_23_to_30",
              "when ϵ=1\\epsilon=1 and M=20M=20, our PDSL algorithm has an improvement of around 23%30%23\\%\\sim "
              "30\\% over the four reference algorithms", "§VI-C2, L508 (Table II)", "magnitude", "inconsistent",
              why="Table II, fully connected (the paragraph's graph: its 0.758 and 0.691 are fully connected "
                  "values), eps 1, M = 20: PDSL 0.746 against DP-DPSGD 0.447, DP-CGA 0.537, MUFFLIATO 0.476 and "
                  "DP-NET-FLEET 0.512 are gains of 29.9, 20.9, 27.0 and 23.4 pp: 20.9-29.9, not 23-30 (DP-CGA's "
                  "20.9 is 2.1 pp below the quoted 23). No other graph gives 23 at the low end (bipartite "
                  "24.5-29.6, ring 7.6-17.5)"),
    Statement("s51_tab2_eps05_gains_15_to_31",
              "When ϵ=0.5,M=10\\epsilon=0.5,M=10, the test accuracy of PDSL reaches 0.6910.691; that is an improvement "
              "of 15%31%15\\%\\sim 31\\% over the reference algorithms", "§VI-C2, L508 (Table II)", "magnitude",
              "not_run", needs="the CIFAR-10, fully connected, M = 10, eps 0.5 cell: 9.0 core-hours (PDSL 5.3)"),
    Statement("s52_tab2_best_sparse",
              "Moreover, our PDSL algorithm still has better test accuracy with sparser communication graphs.",
              "§VI-C2, L508 (Table II)", "comparison", "judged", claims=("tab02.best",)),
    Statement("s53_tab2_bipartite_m20_ratios",
              "when ϵ=1,M=20\\epsilon=1,M=20, the test accuracy of PDSL is around 0.7120.712 on bipartite graphs; it "
              "is 1.681.68 times higher than DP-DPSGD, 1.551.55 times higher than DP-CGA, 1.521.52 times higher than "
              "MUFFLIATO, and 1.711.71 times higher than DP-NET-FLEET", "§VI-C2, L508 (Table II)", "magnitude",
              "not_run", needs="the CIFAR-10, bipartite, M = 20, eps 1 cell: 17.8 core-hours (PDSL 10.3), " + _GPU),
    Statement("s54_tab2_ring_m20_ratios",
              "If ring graphs are adopted, the test accuracy of PDSL is 1.491.49 times higher than DP-DPSGD, 1.211.21 "
              "times higher than DP-CGA, 1.231.23 times higher than MUFFLIATO, and 1.161.16 times higher than "
              "DP-NET-FLEET", "§VI-C2, L508 (Table II)", "magnitude", "not_run",
              needs="the CIFAR-10, ring, M = 20, eps 1 cell: 9.3 core-hours"),
    # Conclusion (L531)
    Statement("s55_conclusion_theory",
              "We conduct solid theoretical analysis to reveal the privacy of each agent can be preserved effectively "
              "during the decentralized learning process, and the convergence of our algorithm can be ensured with a "
              "linear speedup.", "§VII, L531", "theory", "not_testable",
              why="restates Theorems 1-2 and Corollary 1 (s05-s09): proofs, not measurements; Theorem 1's sigma is "
                  "infinite as printed and condition (31) excludes §VI's step sizes"),
    Statement("s56_conclusion_experiments",
              "The efficacy of our algorithm is also verified by our extensive experiments on two real-world "
              "datasets.", "§VII, L531", "comparison", "not_testable",
              why="a summary of §VI with no measurable content of its own; §VI's statements are s11-s54"),
)
