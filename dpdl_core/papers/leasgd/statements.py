"""Every result statement of the LEASGD paper (``leasgd.txt``), and what the package does with it.

One :class:`~dpdl_core.verdicts.statements.Statement` per result statement of the abstract (L39), the
introduction (L47, L49), the privacy scheme (L68, L83), the analysis (L101, L103) and the
experimental evaluation (L115, L117); the workshop text has no conclusion. "L" is the line of
``leasgd.txt``. ``judged`` statements name the claims of :mod:`.claims` that decide them;
``not_run`` ones say which runs (or which computation on the committed study's runs in
``results/leasgd/``) would, with their cost in core-hours on one core beside a second study
worker, from the planner of :mod:`.study`.
"""
from __future__ import annotations

from ...verdicts import Statement

__all__ = ["STATEMENTS"]

STATEMENTS: tuple[Statement, ...] = (
    # Abstract (L39)
    Statement("s01_lower_loss_same_iterations",
              "LEASGD outperforms state-of-the-art decentralized learning algorithm DPSGD by achieving steadily lower "
              "loss within the same iterations",
              "abstract, L39 (Figure 2(a))", "convergence", "judged",
              claims=("fig02.faster_start", "fig02.lower_end")),
    Statement("s02_saving_30", "by reducing the communication cost by 30%", "abstract, L39 (Figure 2(b))",
              "magnitude", "judged", claims=("fig02.saving_30",)),
    Statement("s03_private_less_eps_higher_acc",
              "LEASGD spends less differential privacy budget and has higher final accuracy result than DPSGD under "
              "private setting", "abstract, L39 (Table 1)", "comparison", "judged",
              claims=("tab01.less_epsilon", "tab01.accuracy")),
    # Introduction (L47, L49)
    Statement("s04_leader_follower_saves_communication",
              "The parameters are only transferred between the leader-follower pair, which significantly reduces the "
              "overall communication cost", "§1, L47", "comparison", "judged",
              claims=("fig02.fewer_vectors", "fig02.saving_30")),
    Statement("s05_improved_rate_and_efficiency", "improved convergence rate and communication efficiency", "§1, L47",
              "convergence", "judged",
              claims=("fig02.faster_start", "fig02.lower_per_vector", "fig02.saving_30")),
    Statement("s06_moments_accountant_tighter",
              "we use momentum account to quantize the privacy budget which provides a tighter bound of privacy budget "
              "ϵitalic-ϵ\\epsilon than the classical Strong Composition Theorem [10]", "§1, L47", "privacy", "judged",
              claims=("intro.moments_accountant",)),
    Statement("s07_convergence_proved", "In addition, the convergence rate of LEASGD is mathematically proved.",
              "§1, L47", "theory", "not_testable",
              why="a proof, not a measurement; it is in a supplement the workshop text does not include, and "
                  "Proposition 1 (L97-99) holds for strongly convex losses, which no experiment of the paper (MLP, "
                  "CNN) has"),
    Statement("s08_theory_faster_than_dpsgd", "The theoretical analysis shows LEASGD converge faster than D-PSGD.",
              "§1, L49", "theory", "not_testable",
              why="compares the order of two upper bounds in the strongly convex case (O(h^t) of Proposition 1 against "
                  "the O(1/[(p+1)t]) quoted for D-PSGD, L101), not measured rates; exponential beats 1/t as written. "
                  "The measured counterpart is s01 (fig02.faster_start)"),
    Statement("s09_nonprivate_higher_accuracy_same_communication",
              "Our real testbed experiments show LEASGD achieves higher accuracy than D-PSGD in the non-private "
              "setting with the same communication cost", "§1, L49", "comparison", "judged",
              claims=("intro.nonprivate_accuracy",)),
    Statement("s10_private_higher_accuracy_less_budget", "and under the private setting with less privacy budget",
              "§1, L49 (Table 1)", "comparison", "judged", claims=("tab01.accuracy", "tab01.less_epsilon")),
    # Privacy scheme (L68, L83)
    Statement("s11_randomized_pairing_helps_privacy",
              "This randomization mechanism also benefits the privacy-preserving as randomized communication can "
              "confuse the attacker and make it more difficult to trace the information source.", "§2.2, L68",
              "privacy", "not_testable",
              why="no threat model or privacy measure is given and the accountant credits the random pairing with "
                  "nothing; the pairing is decided from loss values sent unnoised at every split, a leak outside the "
                  "stated epsilon (docs/leasgd.md, 'The leak outside the accountant')"),
    Statement("s12_each_step_dp",
              "we ensure that each communication step of LEAGSD is (ϵ,δitalic-ϵ𝛿\\epsilon,\\delta)-DP",
              "§2.3, L83", "privacy", "not_testable",
              why="a guarantee, decided by proof and not by a run. As printed it does not follow: eq. (4) clips the "
                  "batch gradient to C, whose replace-one sensitivity is 2C, while sigma_2 is calibrated to "
                  "sensitivity C (the classical bound it relies on then gives (2 epsilon, delta), not (epsilon, "
                  "delta)), and the loss scalars each worker sends at every split are not noised (docs/leasgd.md, "
                  "'Eq. (4) as printed versus the Abadi form', 'The leak outside the accountant'). The package "
                  "follows DP-SGD's per-sample form instead"),
    # Analysis (L101, L103)
    Statement("s13_shrink_factor_decreases_with_p",
              "Note that the shrink factor hh is negatively correlated to the p𝑝p, which implies that, when our "
              "system is operating in a strongly convex setting, the larger worker scale can correspondlingly result "
              "in a faster convergence rate of the system.", "§3, L101", "theory", "inconsistent",
              why="eq. (7) (L99) defines h = p(1 - gamma)/(p + 1), which grows with p at any fixed gamma: h = 0.450 at "
                  "p = 1 and 0.720 at p = 4 for gamma = 0.1 (and the admissible gamma shrinks with p, since eta <= "
                  "2(1 - p alpha)/(mu + L), which raises h further). A larger p gives a larger h, i.e. a slower "
                  "contraction, the opposite of the sentence"),
    Statement("s14_dpsgd_rate_slower",
              "Compared with our O(ht)𝑂superscript𝑡O(h^{t}) rate, the convergence rate of D-PSGD is relatively slower "
              "when we extend the t𝑡t\\to\\infty.", "§3, L101", "theory", "not_testable",
              why="compares the orders of two upper bounds as t -> infinity (exponential against 1/t), true of the "
                  "expressions; a bound's order is not a measured rate, and the strongly convex setting is no "
                  "experiment's"),
    Statement("s15_private_floor_independent_of_p", "Note that this trade-off remains the same when p𝑝p grows.",
              "§3, L103", "theory", "not_testable",
              why="a property of the expression eta^2 C^2 sigma_2^2 / gamma (no p in it), true as written; it is a "
                  "bound's floor, which no run measures. Its empirical reading, accuracy stable in m, is s16"),
    Statement("s16_stable_scalability_private",
              "It implies our algorithm has a stable scalability when applied in the private setting.", "§3, L103",
              "robustness", "judged", claims=("tab01.stable_in_m",)),
    # Experimental evaluation (L115, L117)
    Statement("s17_fewer_vectors_per_iteration",
              "Theoretically, in each iteration, LEASGD has less transmitted vectors than D-PSGD.", "§4, L115",
              "comparison", "judged", claims=("fig02.fewer_vectors",)),
    Statement("s18_faster_at_beginning",
              "Figure 2(a) shows that LEASGD converges faster than D-PSGD at the beginning of the training process",
              "§4, L115 (Figure 2(a))", "convergence", "judged", claims=("fig02.faster_start",)),
    Statement("s19_lower_loss_at_end", "also achieves a lower loss function at the end", "§4, L115 (Figure 2(a))",
              "comparison", "judged", claims=("fig02.lower_end",)),
    Statement("s20_better_loss_per_vector",
              "Figure 2(b) shows LEASGD outperforms D-PSGD in terms of the communication efficiency, i.e., with the "
              "same transmitted vectors, LEASGD achieves better training loss.", "§4, L115 (Figure 2(b))",
              "comparison", "judged", claims=("fig02.lower_per_vector",)),
    Statement("s21_better_accuracy_less_epsilon",
              "As shown in Table 1, LEASGD achieves better accuracy with less ϵitalic-ϵ\\epsilon than D-PSGD.",
              "§4, L117 (Table 1)", "comparison", "judged", claims=("tab01.accuracy", "tab01.less_epsilon")),
    Statement("s22_accuracy_stable_in_m",
              "More importantly, the final accuracy of our algorithm does not vary greatly when the worker scale m𝑚m "
              "increases.", "§4, L117 (Table 1)", "robustness", "judged", claims=("tab01.stable_in_m",)),
    Statement("s23_dp_noise_helps_accuracy",
              "the DP noise helps improve the accuracy by encouraging space exploration and helping workers trapped "
              "in local optimum to get out [12]", "§4, L117", "trend", "judged", claims=("tab01.noise_helps",)),
    Statement("s24_noise_does_not_accumulate_with_m",
              "the great scalability that prevents DP noise from accumulating when the worker scale expands",
              "§4, L117", "robustness", "judged", claims=("tab01.noise_flat_in_m",)),
)
