"""The f-DP audit from one run (dpdl_core.sim.audit, Mahloujifar, Melis & Chaudhuri 2024): its
p-value bounds the correct guesses of a Gaussian mechanism, its ε exceeds a known ε no more
often than its confidence allows, it is never below the one-run bound on the same counts, it
pays for the choice of k as the one-run audit does, and it is large when nothing is hidden."""
import dp_accounting as dpa
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from test_audit import CONFIDENCE, SIGNIFICANCE, most_misses

from dpdl_core.sim.audit import (
    best_k_epsilon_lower_bound,
    best_k_fdp_epsilon_lower_bound,
    draw_inclusion,
    epsilon_from_counts,
    fdp_epsilon_from_counts,
    fdp_epsilon_lower_bound,
    fdp_mu_from_counts,
    fdp_p_value,
    gdp_delta,
    gdp_epsilon,
    one_run_epsilon_lower_bound,
)
from dpdl_core.sim.seeding import derive_seed


def gaussian_canaries(mu: float, m: int, runs: int, seed: str):
    """``runs`` audits of the Gaussian mechanism with sensitivity 1 and σ = 1/μ, exactly
    μ-GDP per canary: score N(1, σ²) if in, N(0, σ²) if out. Returns (scores, included)."""
    rng = np.random.default_rng(derive_seed(0, "audit-fdp-test", seed))
    included = rng.integers(0, 2, size=(runs, m)).astype(bool)
    return included + rng.standard_normal((runs, m)) / mu, included


def correct_guesses(scores: np.ndarray, included: np.ndarray, k: int) -> np.ndarray:
    """W per run: "in" on the k highest scores, "out" on the k lowest."""
    m = scores.shape[1]
    order = np.argpartition(scores, [k, m - k], axis=1)
    top = np.take_along_axis(included, order[:, m - k:], axis=1).sum(1)
    bottom = (~np.take_along_axis(included, order[:, :k], axis=1)).sum(1)
    return top + bottom


def test_gdp_conversion_is_the_analytic_gaussian_mechanism():
    """μ = 1/σ for the Gaussian mechanism of sensitivity 1: the ε of Dong, Roth & Su's
    Corollary 2.13 at δ is the one Balle & Wang's analytic calibration gives σ for."""
    for eps in (0.5, 2.0, 8.0):
        sigma = dpa.get_sigma_gaussian(eps, 1e-5)
        assert gdp_epsilon(1 / sigma, 1e-5) == pytest.approx(eps, rel=1e-6)
    assert gdp_epsilon(0.0, 1e-5) == 0.0 and gdp_delta(3.0, 0.0) == 0.0
    assert gdp_epsilon(1e-6, 1e-5) == 0.0  # 2Φ(μ/2) − 1 < δ: (0, δ)-DP already


@settings(max_examples=60, deadline=None)
@given(mu=st.floats(0.01, 20.0), delta=st.sampled_from([1e-8, 1e-5, 1e-3, 0.05]))
def test_gdp_epsilon_inverts_gdp_delta(mu, delta):
    eps = gdp_epsilon(mu, delta)
    if eps > 0:
        assert gdp_delta(eps, mu) == pytest.approx(delta, rel=1e-6)
    else:
        assert gdp_delta(0.0, mu) <= delta


@pytest.mark.parametrize("mu, m, k", [(0.5, 1000, 100), (1.0, 1000, 50), (2.0, 1000, 20), (3.0, 200, 10),
                                      (0.1, 5000, 25)])
def test_p_value_bounds_the_gaussian_mechanisms_tail(mu, m, k):
    """4,000 simulated audits of an exactly μ-GDP mechanism: for every v the share with at
    least v correct guesses stays below fdp_p_value (up to 4 Monte Carlo standard errors).
    A binomial at the best balanced accuracy Φ(μ/2), which ignores that the abstaining
    auditor keeps only its most confident guesses, fails the same check: it has teeth."""
    runs = 4000
    w = correct_guesses(*gaussian_canaries(mu, m, runs, f"tail-{mu}"), k)
    r = 2 * k
    naive_exceeded = False
    for v in range(int(np.quantile(w, 0.01)), r + 1):
        share = float(np.mean(w >= v))
        slack = 4 * np.sqrt(max(share * (1 - share), 1 / runs) / runs)
        assert share <= fdp_p_value(m, r, v, mu) + slack, v
        naive_exceeded |= share > stats.binom.sf(v - 1, r, stats.norm.cdf(mu / 2)) + slack
    assert naive_exceeded


def test_p_value_is_near_tight_for_few_confident_guesses():
    """μ = 2, 20 guesses per side among 1,000 canaries: the bound at the 95% quantile of the
    correct guesses is within 0.05 of the simulated probability."""
    w = correct_guesses(*gaussian_canaries(2.0, 1000, 4000, "tight"), 20)
    v = int(np.quantile(w, 0.95))
    assert fdp_p_value(1000, 40, v, 2.0) - float(np.mean(w >= v)) < 0.05


@pytest.mark.parametrize("r, v", [(10, 7), (40, 30), (100, 60)])
def test_no_leakage_bound_covers_the_fair_coin(r, v):
    """At μ = 0 the output says nothing and W is Binomial(r, 1/2): the bound is at least that
    tail (the supremum includes it) and at most 1."""
    assert stats.binom.sf(v - 1, r, 0.5) <= fdp_p_value(1000, r, v, 0.0) <= 1.0


@pytest.mark.parametrize("mu", [0.5, 1.0, 2.0])
def test_gaussian_mechanism_bound_is_sound_and_tighter(mu):
    """200 audits of the μ-GDP Gaussian mechanism (its ε at δ = 1e-5 known exactly), best k
    over the default grid with the Bonferroni split: the f-DP ε exceeds the true ε no more
    often than 1 − confidence allows, never by much, and on average beats the one-run ε."""
    delta, m, runs = 1e-5, 1000, 200
    true_eps = gdp_epsilon(mu, delta)
    scores, included = gaussian_canaries(mu, m, runs, f"sound-{mu}")
    fdp = np.array([best_k_fdp_epsilon_lower_bound(s, inc, delta, CONFIDENCE).epsilon
                    for s, inc in zip(scores, included)])
    one_run = np.array([best_k_epsilon_lower_bound(s, inc, delta, CONFIDENCE).epsilon
                        for s, inc in zip(scores, included)])
    assert np.sum(fdp > true_eps) <= most_misses(runs)
    assert fdp.max() <= 1.25 * true_eps
    assert fdp.mean() > 1.2 * one_run.mean() and fdp.mean() > 0.3 * true_eps


def test_no_noise_gives_a_large_bound():
    m = 1000
    included = draw_inclusion(m, np.random.default_rng(derive_seed(0, "audit-test", "no-noise")))
    scores = included.astype(float)
    best = best_k_fdp_epsilon_lower_bound(scores, included, 1e-5, CONFIDENCE)
    assert best.epsilon > 7 and best.epsilon > 1.5 * best_k_epsilon_lower_bound(scores, included, 1e-5).epsilon
    all_right = fdp_epsilon_lower_bound(scores, included, 400, 400, 1e-5, CONFIDENCE)
    assert all_right.correct == 800 and all_right.epsilon > 10 and all_right.bound == "f-DP"
    assert all_right.mu == pytest.approx(fdp_mu_from_counts(1000, 800, 800, CONFIDENCE))


GRID = [(m, r, v) for m in (10, 100, 1000, 5000) for r in sorted({1, 5, 50, 500, 2000, m}) if r <= m
        for v in sorted({*range(0, r + 1, max(1, r // 8)), r})]


@pytest.mark.parametrize("confidence, delta", [(0.95, 1e-5), (1 - 0.05 / 6, 1e-3)])
def test_never_below_the_one_run_bound_and_the_recursion_beats_it_past_0_1(confidence, delta):
    """On a grid of counts: the f-DP ε is at least the one-run ε (by construction, both
    p-values hold under μ-GDP); the recursion alone is at least 1.05 times it wherever the
    one-run ε exceeds 0.1 (close to ε = 0 the one-run bound can be the larger)."""
    for m, r, v in GRID:
        one_run = epsilon_from_counts(m, r, v, delta, confidence)
        assert fdp_epsilon_from_counts(m, r, v, delta, confidence) >= one_run
        mu = fdp_mu_from_counts(m, r, v, confidence)
        if one_run > 0.1:
            assert gdp_epsilon(mu, delta) >= 1.05 * one_run, (m, r, v)


@settings(max_examples=80, deadline=None)
@given(m=st.integers(1, 3000), data=st.data(), delta=st.sampled_from([1e-6, 1e-5, 1e-2]))
def test_never_below_the_one_run_bound_on_any_counts(m, data, delta):
    r = data.draw(st.integers(0, m))
    v = data.draw(st.integers(0, r))
    assert fdp_epsilon_from_counts(m, r, v, delta, CONFIDENCE) >= epsilon_from_counts(m, r, v, delta, CONFIDENCE)


def test_results_say_which_bound():
    """The Bonferroni split itself is tested with the one-run bound's, in test_audit.py."""
    rng = np.random.default_rng(derive_seed(0, "audit-fdp-test", "which"))
    included = draw_inclusion(1000, rng)
    scores = included + 0.7 * rng.standard_normal(1000)
    fdp = best_k_fdp_epsilon_lower_bound(scores, included, 1e-5)
    one_run = one_run_epsilon_lower_bound(scores, included, fdp.k_pos, fdp.k_neg, 1e-5, 1 - SIGNIFICANCE / 6)
    assert (fdp.bound, fdp.choices, one_run.bound, one_run.mu) == ("f-DP", 6, "one-run", None)
    assert one_run.correct == fdp.correct and fdp.mu > 0 and fdp.epsilon > one_run.epsilon


def test_nothing_to_reject():
    assert fdp_epsilon_from_counts(100, 0, 0, 1e-5) == 0.0
    assert fdp_epsilon_from_counts(100, 20, 0, 1e-5) == 0.0
    assert fdp_mu_from_counts(100, 20, 10) == 0.0  # half right: chance
    assert fdp_p_value(100, 20, 0, 1.0) == 1.0


SCORES = np.arange(6.0)
INCLUDED = np.array([False, False, False, True, True, True])


@pytest.mark.parametrize("call, message", [
    (lambda: fdp_epsilon_from_counts(100, 10, 5, 0.0), r"delta=0.0 must be in \(0, 1\).*ε = ∞ at δ = 0"),
    (lambda: fdp_epsilon_from_counts(100, 10, 5, 1.0), r"delta=1.0 must be in \(0, 1\)"),
    (lambda: fdp_epsilon_from_counts(100, 10, 11, 1e-5), r"0 <= v \(correct\) <= r \(guesses\) <= m \(canaries\)"),
    (lambda: fdp_epsilon_from_counts(100, 10.0, 5, 1e-5), r"r=10.0 must be an integer count"),
    (lambda: fdp_epsilon_from_counts(100, 10, 5, 1e-5, confidence=1.0), r"confidence=1.0 must be in \(0, 1\)"),
    (lambda: fdp_p_value(100, 10, 5, -1.0), r"mu=-1.0 must be a finite number >= 0"),
    (lambda: fdp_p_value(100, 10, 5, np.inf), r"mu=inf must be a finite number >= 0"),
    (lambda: gdp_epsilon(1.0, 0.0), r"pass the δ of the \(ε, δ\) guarantee being audited"),
    (lambda: gdp_delta(-1.0, 1.0), r"epsilon=-1.0 must be >= 0"),
    (lambda: fdp_epsilon_lower_bound(SCORES, INCLUDED, 1, 1, 0.0), r"delta=0.0 must be in \(0, 1\)"),
    (lambda: fdp_epsilon_lower_bound(SCORES, INCLUDED, 4, 4, 1e-5), r"k_pos \+ k_neg = 8"),
    (lambda: best_k_fdp_epsilon_lower_bound(SCORES, INCLUDED, 1e-5, ks=[1, 1]), r"distinct guess counts"),
])
def test_invalid_input_says_what_to_pass(call, message):
    with pytest.raises(ValueError, match=message):
        call()
