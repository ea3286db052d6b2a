"""The one-run privacy audit (dpdl_core.sim.audit, Steinke, Nasr & Jagielski 2023): the bound is
the exact binomial test where their Theorem 3.1 is tight, exceeds a known ε no more often
than its confidence allows, sits below the accountant's ε for DP-SGD, catches a run noisier
on paper than in fact, and is large when nothing is hidden."""
import dp_accounting as dpa
import numpy as np
import pytest
import torch
from scipy import stats
from scipy.special import expit

from dpdl_core.sim.audit import (
    AuditResult,
    best_k_epsilon_lower_bound,
    best_k_fdp_epsilon_lower_bound,
    default_k_grid,
    draw_inclusion,
    epsilon_from_counts,
    fdp_epsilon_lower_bound,
    gradient_canary_scores,
    guess,
    one_run_epsilon_lower_bound,
    one_run_p_value,
)
from dpdl_core.sim.privacy import rdp_epsilon
from dpdl_core.sim.seeding import derive_seed

CONFIDENCE = 0.95
SIGNIFICANCE = 1 - CONFIDENCE


def most_misses(runs: int) -> int:
    """Most bounds above the true ε among ``runs`` independent audits that a sound bound
    produces with probability 0.999 (its miss rate is at most 1 − confidence)."""
    return int(stats.binom.ppf(0.999, runs, SIGNIFICANCE))


def test_p_value_without_delta_is_the_binomial_tail():
    q = expit(0.8)
    assert one_run_p_value(10, 2, 2, 0.8, 0.0) == pytest.approx(q * q, rel=1e-12)
    assert one_run_p_value(500, 300, 190, 0.8, 0.0) == pytest.approx(stats.binom.sf(189, 300, q), rel=1e-12)
    assert one_run_p_value(500, 300, 0, 0.8, 1e-5) == 1.0


def test_delta_term_is_theorem_3_1s_over_every_i():
    """The code maximises over i ≤ v only; the theorem's maximum runs over i = 1..m."""
    m, r, v, eps, delta = 40, 30, 24, 0.7, 1e-3
    q = expit(eps)

    def f(u):
        return stats.binom.sf(u - 1, r, q)

    expected = f(v) + 2 * m * delta * max((f(v - i) - f(v)) / i for i in range(1, m + 1))
    assert one_run_p_value(m, r, v, eps, delta) == pytest.approx(expected, rel=1e-12)
    assert one_run_p_value(m, r, v, eps, delta) > one_run_p_value(m, r, v, eps, 0.0)


@pytest.mark.parametrize("eps", [0.5, 1.0, 2.0, 4.0])
def test_bound_is_the_exact_binomial_test_for_randomized_response(eps):
    """ε-randomized response on each of m canaries, every canary guessed from its output: the
    correct guesses are exactly Binomial(m, e^ε/(1+e^ε)), Theorem 3.1's worst case (δ = 0).
    The bound then exceeds ε with probability at most 1 − confidence, and one correct guess
    fewer would already exceed it with probability above that: the test loses nothing."""
    m = 400
    q = expit(eps)
    bounds = np.array([epsilon_from_counts(m, m, v, 0.0, CONFIDENCE) for v in range(m + 1)])
    assert np.all(np.diff(bounds) >= 0), "more correct guesses must never prove less"
    assert bounds[-1] > eps
    first = int(np.argmax(bounds > eps))  # fewest correct guesses that claim more than ε
    assert stats.binom.sf(first - 1, m, q) <= SIGNIFICANCE
    assert stats.binom.sf(first - 2, m, q) > SIGNIFICANCE


def _randomized_response_with_reveals(rng, m, eps, delta):
    """Per canary: with probability δ its inclusion in plain sight (score ±2), otherwise
    ε-randomized response (±1); (ε, δ)-DP in each canary. Ties broken by a tiny jitter."""
    z = np.where(draw_inclusion(m, rng), 1, -1)
    y = np.where(rng.random(m) < expit(eps), z, -z).astype(float)
    reveal = rng.random(m) < delta
    y[reveal] = 2 * z[reveal]
    return y + 1e-3 * rng.random(m), z > 0


def test_delta_term_is_needed_and_enough():
    """With δ = 0.02 the k = 50 most extreme scores are mostly revealed canaries: ignoring
    the 2mδ term of Theorem 3.1 the bound exceeds the true ε in about a third of the runs;
    with it, no more often than the confidence allows."""
    rng = np.random.default_rng(derive_seed(0, "audit-test", "reveals"))
    m, eps, delta, runs = 1000, 1.0, 0.02, 300
    with_term = without = 0
    for _ in range(runs):
        scores, included = _randomized_response_with_reveals(rng, m, eps, delta)
        with_term += one_run_epsilon_lower_bound(scores, included, 50, 50, delta, CONFIDENCE).epsilon > eps
        without += one_run_epsilon_lower_bound(scores, included, 50, 50, 0.0, CONFIDENCE).epsilon > eps
    assert without > 3 * most_misses(runs), "the mechanism must exploit its δ for this test to mean anything"
    assert with_term <= most_misses(runs)


@pytest.mark.parametrize("true_eps", [1.0, 4.0])
def test_gaussian_mechanism_bound_is_sound(true_eps):
    """Each canary's score is N(1, σ²) if in, N(0, σ²) if out: the Gaussian mechanism of
    sensitivity 1, whose exact ε at δ = 1e-5 is the analytic one of Balle & Wang (2018)
    (``dp_accounting.get_sigma_gaussian``). Over 200 runs the audited bound (Bonferroni over
    the default k grid) exceeds it no more often than 1 − confidence allows, never by much,
    and it is not vacuous."""
    delta, m, runs = 1e-5, 1000, 200
    sigma = dpa.get_sigma_gaussian(true_eps, delta)
    rng = np.random.default_rng(derive_seed(0, "audit-test", "gaussian", int(true_eps)))
    included = rng.integers(0, 2, size=(runs, m)).astype(bool)
    scores = included + sigma * rng.standard_normal((runs, m))
    bounds = np.array([best_k_epsilon_lower_bound(s, inc, delta, CONFIDENCE).epsilon
                       for s, inc in zip(scores, included)])
    assert np.sum(bounds > true_eps) <= most_misses(runs)
    assert bounds.max() <= 1.25 * true_eps
    assert bounds.mean() > 0.1 * true_eps


def test_no_noise_gives_a_large_bound():
    m = 1000
    included = draw_inclusion(m, np.random.default_rng(derive_seed(0, "audit-test", "no-noise")))
    scores = included.astype(float)
    assert best_k_epsilon_lower_bound(scores, included, 1e-5, CONFIDENCE).epsilon > 4
    # 400 guesses per side are all right whenever 400 to 600 canaries are in (P > 1 − 1e-9).
    all_right = one_run_epsilon_lower_bound(scores, included, 400, 400, 1e-5, CONFIDENCE)
    assert all_right.correct == 800 and all_right.epsilon > 5


def _dp_sgd_sums(seed: int, m: int, sigma: float, q: float, rounds: int, clip: float = 1.0):
    """Logistic regression by DP-SGD on 200 points with m gradient canaries.

    Every example, canaries included, is Poisson-sampled at rate q per round; the round's
    release is Σ clip(∇) + N(0, σ²C²I). A canary's clipped gradient is C·u_c with u_c a
    coordinate vector outside the data's 16 features (Steinke et al.'s Dirac canaries),
    included with probability 1/2. The observer sees every release.

    Returns (releases (T, P), directions (m, P), included (m,)).
    """
    rng = np.random.default_rng(derive_seed(seed, "audit-test", "dp-sgd"))
    n, d = 200, 16
    P = d + m
    x = np.zeros((n, P))
    x[:, :d] = rng.standard_normal((n, d))
    y = (x[:, :d] @ rng.standard_normal(d) > 0).astype(float)
    included = draw_inclusion(m, np.random.default_rng(derive_seed(seed, "audit", "inclusion")))
    directions = np.eye(P)[d:]
    w = np.zeros(P)
    releases = []
    for _ in range(rounds):
        batch = rng.random(n) < q
        canaries = (rng.random(m) < q) & included
        g = (expit(x[batch] @ w) - y[batch])[:, None] * x[batch]
        g *= np.minimum(1.0, clip / np.maximum(np.linalg.norm(g, axis=1), 1e-12))[:, None]
        release = g.sum(0) + clip * directions[canaries].sum(0) + sigma * clip * rng.standard_normal(P)
        releases.append(release)
        w -= 0.5 * release / (q * n)
    return np.array(releases), directions, included


def test_dp_sgd_bound_is_below_the_accountants_and_catches_understated_noise():
    """DP-SGD at σ = 2 (q = 0.5, T = 20): the RDP accountant's ε bounds the audit in every
    run, and the audit proves leakage. Had the run declared σ = 10 while adding σ = 2, the
    audit exceeds that declared ε in every run: it catches the bug."""
    m, q, rounds, delta = 1000, 0.5, 20, 1e-5
    eps_real, eps_declared = rdp_epsilon(2.0, q, 1, rounds, delta), rdp_epsilon(10.0, q, 1, rounds, delta)
    for seed in range(3):
        releases, directions, included = _dp_sgd_sums(seed, m, 2.0, q, rounds)
        bound = best_k_epsilon_lower_bound(gradient_canary_scores(directions, releases), included, delta, CONFIDENCE)
        assert eps_declared < bound.epsilon <= eps_real


@pytest.mark.parametrize("best_k, fixed_k", [(best_k_epsilon_lower_bound, one_run_epsilon_lower_bound),
                                             (best_k_fdp_epsilon_lower_bound, fdp_epsilon_lower_bound)])
def test_best_k_pays_a_bonferroni_split(best_k, fixed_k):
    """The one-run bound and the f-DP bound alike: each k of the grid at (1 − confidence)/3."""
    rng = np.random.default_rng(derive_seed(0, "audit-test", "bonferroni"))
    m, ks = 1000, [10, 50, 200]
    included = draw_inclusion(m, rng)
    scores = included + 0.7 * rng.standard_normal(m)
    best = best_k(scores, included, 1e-5, CONFIDENCE, ks=ks)
    split = [fixed_k(scores, included, k, k, 1e-5, 1 - SIGNIFICANCE / 3).epsilon for k in ks]
    unsplit = [fixed_k(scores, included, k, k, 1e-5, CONFIDENCE).epsilon for k in ks]
    assert best.epsilon == max(split) < max(unsplit)
    assert (best.choices, best.confidence, best.k_pos) == (3, CONFIDENCE, ks[int(np.argmax(split))])
    assert default_k_grid(1000) == [5, 10, 20, 50, 100, 200]


def test_guess_takes_the_extremes_and_breaks_ties_by_index():
    assert guess([0.0, 1.0, 1.0, 0.5, -1.0], 2, 1).tolist() == [0, 1, 1, 0, -1]
    assert guess(torch.zeros(4), 1, 1).tolist() == [-1, 0, 0, 1]
    res = one_run_epsilon_lower_bound([3.0, 2.0, 1.0, 0.0], np.array([True, False, True, False]), 1, 1, 0.0)
    assert isinstance(res, AuditResult) and (res.guesses, res.correct) == (2, 2)


def test_draw_inclusion_is_seeded_fair_coins():
    a = draw_inclusion(10_000, np.random.default_rng(7))
    assert a.dtype == bool and np.array_equal(a, draw_inclusion(10_000, np.random.default_rng(7)))
    assert abs(a.sum() - 5_000) < 4 * 50  # 4 standard deviations of Binomial(10⁴, 1/2)
    t = draw_inclusion(10_000, torch.Generator().manual_seed(7))
    assert t.dtype == bool and np.array_equal(t, draw_inclusion(10_000, torch.Generator().manual_seed(7)))
    assert abs(t.sum() - 5_000) < 4 * 50


def test_gradient_canary_scores_project_the_summed_messages():
    rng = np.random.default_rng(3)
    u = rng.standard_normal((5, 40))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    msgs = rng.standard_normal((7, 40))
    expected = np.array([sum(float(uc @ mt) for mt in msgs) for uc in u])
    np.testing.assert_allclose(gradient_canary_scores(u, msgs), expected, rtol=1e-12)
    np.testing.assert_allclose(gradient_canary_scores(torch.tensor(u, dtype=torch.float32), torch.tensor(msgs.sum(0))),
                               expected, rtol=1e-5)


SCORES, INCLUDED = np.arange(6.0), np.array([True, False] * 3)


@pytest.mark.parametrize("call, message", [
    (lambda: one_run_epsilon_lower_bound(SCORES, INCLUDED, 4, 3, 1e-5), r"k_pos \+ k_neg = 7 must be between 1 and"),
    (lambda: one_run_epsilon_lower_bound(SCORES, INCLUDED, 0, 0, 1e-5), r"k_pos \+ k_neg = 0"),
    (lambda: one_run_epsilon_lower_bound(SCORES, INCLUDED, -1, 2, 1e-5), r"k_pos=-1 must be an integer >= 0"),
    (lambda: one_run_epsilon_lower_bound(SCORES, INCLUDED, 1, 1, 1e-5, confidence=1.0),
     r"confidence=1.0 must be in \(0, 1\)"),
    (lambda: one_run_epsilon_lower_bound(SCORES, INCLUDED, 1, 1, 1e-5, confidence=0.0), r"confidence=0.0"),
    (lambda: one_run_epsilon_lower_bound(SCORES, INCLUDED[:5], 1, 1, 1e-5),
     r"included must be a bool array of the scores' shape"),
    (lambda: one_run_epsilon_lower_bound(SCORES, INCLUDED.astype(int), 1, 1, 1e-5), r"included must be a bool array"),
    (lambda: one_run_epsilon_lower_bound([1.0, np.nan], np.array([True, False]), 1, 1, 1e-5), r"NaN or infinity"),
    (lambda: one_run_epsilon_lower_bound(np.ones((2, 3)), INCLUDED, 1, 1, 1e-5), r"non-empty 1-d array"),
    (lambda: one_run_epsilon_lower_bound(SCORES, INCLUDED, 1, 1, 1.0), r"delta=1.0 must be in \[0, 1\)"),
    (lambda: epsilon_from_counts(10, 5, 6, 1e-5), r"0 <= v \(correct\) <= r \(guesses\) <= m \(canaries\)"),
    (lambda: one_run_p_value(10, 11, 3, 1.0, 1e-5), r"r \(guesses\) <= m"),
    (lambda: one_run_p_value(10, 5, 3, -1.0, 1e-5), r"epsilon=-1.0 must be >= 0"),
    (lambda: best_k_epsilon_lower_bound(SCORES, INCLUDED, 1e-5, ks=[1, 1]), r"distinct guess counts"),
    (lambda: best_k_epsilon_lower_bound(SCORES, INCLUDED, 1e-5, ks=[1, 4]), r"k_pos \+ k_neg = 8"),
    (lambda: draw_inclusion(0, np.random.default_rng(0)), r"m=0 must be an integer >= 1"),
    (lambda: draw_inclusion(5, 0), r"generator must be a numpy.random.Generator or a torch.Generator"),
    (lambda: gradient_canary_scores(np.eye(3), np.ones((2, 4))), r"same P"),
    (lambda: gradient_canary_scores(2 * np.eye(3), np.ones((2, 3))), r"norm 1 \(one has 2\); divide each row"),
])
def test_invalid_input_says_what_to_pass(call, message):
    with pytest.raises(ValueError, match=message):
        call()
