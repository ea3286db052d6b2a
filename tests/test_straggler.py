"""Straggler-resilient DP paper: oracle values of the spec, Monte Carlo and statistical
checks, the vectorized token ring against a per-run reference loop, the data loader."""
import math

import numpy as np
import pytest
from scipy import stats
from scipy.special import expit

from dpdl_core.papers.straggler import (
    HopSampler,
    LatencyModel,
    PaperParams,
    RunSplits,
    TokenRingConfig,
    h_tilde,
    load_housing,
    paper_models,
    prepare_housing,
    run_token_ring,
    split_runs,
    thm1_bound,
    thm1_bound_bruteforce,
    thm2_epsilon,
    thm3_as_printed,
    thm3_diagnostic,
)
from dpdl_core.sim.data import DataUnavailableError

PS = (1e-4, 0.5, 0.7)
# Spec §2 table: t_ss, Lemma 1 latency per hop, per update, for p = 1e-4, 0.5, 0.7.
ORACLE_LATENCY = {
    "exponential": ((9.2103, 0.69315, 0.35667), (1.0099, 0.5100, 0.3100), (1.0100, 1.0200, 1.0333)),
    "gamma": ((6.4283, 0.043674, 0.0054913), (0.25991, 0.036137, 0.014173), (0.25993, 0.072274, 0.047242)),
    "lomax": ((41.089, 0.51984, 0.25250), (1.00785, 0.38004, 0.22163), (1.00795, 0.76008, 0.73875)),
}
# The oracle is printed to 5 significant digits: compare to half a unit of the last one.
REL5 = 1e-4


@pytest.fixture(scope="module")
def models():
    return paper_models()


@pytest.fixture(scope="module")
def housing():
    return load_housing()


# ---------------------------------------------------------------- Lemmas 1 and 2 (latency)
@pytest.mark.parametrize("name", list(ORACLE_LATENCY))
def test_lemma1_oracle_latencies(models, name):
    m = models[name]
    t_ss_want, hop_want, upd_want = ORACLE_LATENCY[name]
    t_ss = m.t_ss_for_p(PS)
    assert t_ss == pytest.approx(t_ss_want, rel=REL5)
    assert m.latency_per_hop(t_ss) == pytest.approx(hop_want, rel=REL5)
    assert m.time_per_update(t_ss) == pytest.approx(upd_want, rel=REL5)
    assert m.expected_latency(1000, t_ss) == pytest.approx(1000 * np.array(hop_want), rel=REL5)


def test_lemma2_oracle_optima(models):
    t, p, g = models["exponential"].optimal_t_ss()
    assert math.isinf(t) and p == 0.0 and g == pytest.approx(1.0100, rel=REL5)
    t, p, g = models["gamma"].optimal_t_ss()
    assert (t, p, g) == pytest.approx((0.0048018, 0.70986, 0.047172), rel=REL5)
    t, p, g = models["lomax"].optimal_t_ss()
    assert (t, p, g) == pytest.approx((0.21390, 0.73726, 0.73797), rel=REL5)
    # The optimum is a minimum: nudging t_ss either way costs time per update.
    for m in (models["gamma"], models["lomax"]):
        t, _, g = m.optimal_t_ss()
        assert m.time_per_update(0.9 * t) > g and m.time_per_update(1.1 * t) > g


@pytest.mark.parametrize("name", ["exponential", "gamma", "lomax"])
def test_expected_min_closed_form_matches_quadrature(models, name):
    m = models[name]
    for t in (1e-4, 0.01, 0.3, 1.0, 5.0, 50.0):
        assert m.expected_min(t) == pytest.approx(m.expected_min_numeric(t), rel=1e-8)
    assert m.expected_min(np.inf) == pytest.approx(m.dist.mean(), rel=1e-12)


def test_lemma1_monte_carlo_within_3_standard_errors(models):
    """Realized latency of Algorithm 1 (lines 4, 10, 12) vs Lemma 1; tolerance 3 SE, fixed seed."""
    rng = np.random.default_rng(7)
    h_max, runs = 200, 4000
    for m in models.values():
        for p in PS:
            t = m.t_ss_for_p(p)
            ell = m.simulate_latency(h_max, t, runs, rng)
            se = ell.std(ddof=1) / math.sqrt(runs)
            assert abs(ell.mean() - m.expected_latency(h_max, t)) < 3 * se, (m.name, p)
            # The same test rejects a wrong closed form (χ forgotten): it can fail.
            assert abs(ell.mean() - h_max * m.expected_min(t)) > 3 * se, (m.name, p)


def test_latency_model_validation():
    with pytest.raises(ValueError, match=r"name='weibull'.*allowed values.*exponential"):
        LatencyModel("weibull")
    with pytest.raises(ValueError, match="scale"):
        LatencyModel("gamma", 0.25, -1.0)


# ---------------------------------------------------------------- Theorems 1–3
def test_sigma_and_h_tilde():
    assert PaperParams().sigma == pytest.approx(10.5976, abs=5e-5)
    assert h_tilde(1000, 1e-4) == 127  # ⌈99.99 + √(3·99.99·log 10)⌉ = ⌈126.27⌉


def test_thm1_oracle_h1000():
    ring = [thm1_bound(1000, p, "ss_ring") for p in PS]
    rand = [thm1_bound(1000, p, "ss_rand_ring") for p in PS]
    assert ring == pytest.approx([1210.1, 1234.0, 1493.7], abs=0.06)
    assert rand == pytest.approx([946.2, 1233.9, 1493.6], abs=0.06)


@pytest.mark.parametrize("scheme", ["ss_ring", "ss_rand_ring"])
@pytest.mark.parametrize("p", [1e-4, 0.3, 0.9])
def test_thm1_closed_form_equals_bruteforce(scheme, p):
    for h_max in (1, 2, 7, 25):
        assert thm1_bound(h_max, p, scheme) == pytest.approx(thm1_bound_bruteforce(h_max, p, scheme), rel=1e-10)
    # Vector h_max gives the same as one call per value.
    grid = np.array([3, 10, 40])
    assert thm1_bound(grid, p, scheme) == pytest.approx([thm1_bound(int(h), p, scheme) for h in grid], rel=1e-12)


def test_thm1_validation():
    with pytest.raises(ValueError, match="p=0"):
        thm1_bound(10, 0, "ss_ring")  # |λ₁| = 1: SS-Ring needs p > 0
    with pytest.raises(ValueError, match="scheme"):
        thm1_bound(10, 0.5, "ring")
    assert thm1_bound(10, 0.0, "ss_rand_ring") > 0  # p = 0 is allowed for SS-Rand-Ring


def test_thm2_oracle():
    assert [thm2_epsilon(1000, p) for p in PS] == pytest.approx([13.441, 9.469, 7.456], abs=6e-4)
    assert thm2_epsilon([10, 100_000], 1e-4) == pytest.approx([2.06, 283], rel=5e-3)


def test_thm3_as_printed_oracle():
    assert [thm3_as_printed(1000, p) for p in PS] == pytest.approx([1.99] * 3, abs=5e-3)
    assert thm3_as_printed([10, 100_000], 1e-4) == pytest.approx([2.52, 1.971], abs=5e-3)
    # Spec §5.2: α sits at its cap, so ε_ss ≥ log(1/δ)/(cap − 1).
    cap = (1 + math.sqrt(16 * math.log(1.25e6) + 1)) / 2
    assert cap == pytest.approx(8.0103, abs=1e-4)
    assert thm3_as_printed(10_000, 0.5) > math.log(1e6) / (cap - 1)


def test_thm3_diagnostic_oracle_and_label():
    got = thm3_diagnostic([10, 100, 1000, 10_000], 1e-4)
    assert got == pytest.approx([2.47, 3.84, 10.4, 38.1], rel=6e-3)
    assert "NOT the paper's formula" in thm3_diagnostic.__doc__


# ---------------------------------------------------------------- token ring (Algorithm 1)
def _reference_run(splits: RunSplits, cfg: TokenRingConfig):
    """Algorithm 1 one run at a time, from the same batched draws (HopSampler)."""
    R, n, m, d = splits.z.shape
    sampler = HopSampler(cfg, R, n, d, m)
    tau = [np.zeros(d) for _ in range(R)]
    c = [1] * R
    for h in range(cfg.h_max):
        v = sampler.nodes(h)
        u, noise, keys = sampler.draws()
        for r in range(R):
            valid = np.flatnonzero(splits.mask[r, v[r]])
            if keys is not None and len(valid) > cfg.batch_size:
                valid = valid[np.argsort(keys[r, valid], kind="stable")[: cfg.batch_size]]
            z = splits.z[r, v[r], valid]
            grad = -np.mean([zi * expit(-zi @ tau[r]) for zi in z], axis=0)
            if u[r] <= 1 - cfg.p:
                new = tau[r] - cfg.zeta / math.sqrt(c[r]) * (grad + noise[r])
                nrm = np.linalg.norm(new)
                tau[r] = new if nrm <= cfg.radius else new * cfg.radius / nrm
                c[r] += 1
    return np.array(tau), np.array(c) - 1


@pytest.mark.parametrize("scheme", ["ss_ring", "ss_rand_ring"])
@pytest.mark.parametrize("batch_size", [100, 7])
def test_vectorized_token_ring_equals_per_run_loop(housing, scheme, batch_size):
    splits = split_runs(housing, 3, seed=11)
    cfg = TokenRingConfig(scheme=scheme, p=0.5, h_max=60, batch_size=batch_size, eval_every=20, seed=3,
                          radius=0.8)  # a small ball so that the projection is exercised
    res = run_token_ring(splits, cfg)
    tau, updates = _reference_run(splits, cfg)
    np.testing.assert_allclose(res.tau, tau, rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(res.updates, updates)
    assert np.all(np.linalg.norm(res.tau, axis=1) <= cfg.radius + 1e-12)
    assert res.accuracy.shape == (4, 3) and list(res.hops) == [0, 20, 40, 60]


def test_token_ring_reports_progress_in_log_mode(housing, monkeypatch, capsys):
    """A study's curve runs for tens of minutes in a background worker (stderr to a file):
    it must say how far it got, as the training runs do."""
    monkeypatch.setenv("DPDL_PROGRESS", "log")
    run_token_ring(split_runs(housing, 2, seed=5), TokenRingConfig(scheme="ss_ring", p=0.5, h_max=1000, seed=9))
    lines = capsys.readouterr().err.splitlines()
    assert any(line.startswith("ss_ring p=0.5 hop 500/1000") and "ETA" in line for line in lines), lines
    assert lines[-1].startswith("ss_ring p=0.5 hop 1000/1000, elapsed"), lines
    monkeypatch.setenv("DPDL_PROGRESS", "0")
    run_token_ring(split_runs(housing, 2, seed=5), TokenRingConfig(scheme="ss_ring", p=0.5, h_max=1000, seed=9))
    assert capsys.readouterr().err == ""


def test_noiseless_no_skip_is_incremental_gradient_descent(housing):
    """p = 0, σ = 0: SS-Ring is plain projected incremental GD over the nodes in order."""
    splits = split_runs(housing, 2, seed=5)
    cfg = TokenRingConfig(scheme="ss_ring", p=0.0, sigma=0.0, h_max=35, seed=9)
    res = run_token_ring(splits, cfg)
    n = splits.n_nodes
    for r in range(2):
        tau = np.zeros(housing.d)
        for h in range(cfg.h_max):
            z = splits.z[r, h % n][splits.mask[r, h % n]]
            grad = -(z * expit(-z @ tau)[:, None]).mean(axis=0)
            tau = tau - cfg.zeta / math.sqrt(h + 1) * grad
            tau *= min(1.0, cfg.radius / np.linalg.norm(tau))
        np.testing.assert_allclose(res.tau[r], tau, rtol=1e-12, atol=1e-14)
    assert (res.updates == cfg.h_max).all()


def test_rand_ring_permutations_uniform_chi2():
    """SS-Rand-Ring: each round's order is uniform over the n! permutations (χ² test, fixed seed)."""
    n, R = 4, 4800
    sampler = HopSampler(TokenRingConfig(scheme="ss_rand_ring", seed=123), R, n, 2, 1)
    first = [sampler.nodes(h) for h in range(n)]  # one round
    orders = np.stack(first, axis=1)
    assert (np.sort(orders, axis=1) == np.arange(n)).all()  # each row a permutation
    codes = np.array([int("".join(map(str, o))) for o in orders])
    counts = np.unique(codes, return_counts=True)[1]
    assert len(counts) == math.factorial(n)
    assert stats.chisquare(counts).pvalue > 1e-3
    fixed = HopSampler(TokenRingConfig(scheme="ss_ring"), 3, n, 2, 1)
    assert [fixed.nodes(h)[0] for h in range(2 * n)] == list(range(n)) * 2


def test_noise_std_of_one_update():
    """With zero gradients and no skip, τ₁ = −ζN: its std estimates σ (3 SE of a std estimate)."""
    R, d = 4000, 8
    splits = RunSplits(np.zeros((R, 2, 1, d)), np.ones((R, 2, 1), bool), np.ones((R, 1, d)), np.ones((R, 1)))
    cfg = TokenRingConfig(scheme="ss_ring", p=0.0, h_max=1, radius=1e9, seed=4)
    res = run_token_ring(splits, cfg)
    noise = (-res.tau / cfg.zeta).ravel()
    se_std = cfg.sigma / math.sqrt(2 * noise.size)
    assert abs(noise.std(ddof=1) - cfg.sigma) < 3 * se_std
    assert abs(noise.mean()) < 3 * cfg.sigma / math.sqrt(noise.size)
    assert stats.kstest(noise / cfg.sigma, "norm").pvalue > 1e-3


def test_skips_and_realized_latency(models):
    """Skip frequency is p, and the latency ℓ the token ring returns matches Lemma 1 (3 SE)."""
    R, h_max, p = 1000, 40, 0.5
    splits = RunSplits(np.zeros((R, 2, 1, 3)), np.ones((R, 2, 1), bool), np.ones((R, 1, 3)), np.ones((R, 1)))
    m = models["gamma"]
    res = run_token_ring(splits, TokenRingConfig(scheme="ss_rand_ring", p=p, h_max=h_max, seed=2), latency=m)
    n_upd = res.updates.sum()
    assert abs(n_upd - (1 - p) * R * h_max) < 3 * math.sqrt(R * h_max * p * (1 - p))
    se = res.latency.std(ddof=1) / math.sqrt(R)
    assert abs(res.latency.mean() - m.expected_latency(h_max, m.t_ss_for_p(p))) < 3 * se


def test_token_ring_config_validation():
    with pytest.raises(ValueError, match=r"scheme='ring'.*allowed values.*ss_ring"):
        TokenRingConfig(scheme="ring")
    with pytest.raises(ValueError, match="h_max"):
        TokenRingConfig(h_max=0)
    with pytest.raises(ValueError, match="p=1"):
        TokenRingConfig(p=1.0)


# ---------------------------------------------------------------- data
def test_housing_loader(housing):
    assert housing.x.shape == (506, 13)
    assert set(np.unique(housing.y)) == {-1.0, 1.0}
    assert housing.meta["median"] == pytest.approx(21.2)
    assert housing.meta["positives"] == 250  # MEDV > 21.2; ties (MEDV = 21.2) are −1
    np.testing.assert_allclose(np.linalg.norm(housing.x, axis=1), 1.0, rtol=1e-12)
    assert housing.label == "UCI housing (Boston), 506 rows"


def test_prepare_housing_median_rule_and_errors():
    feats = np.array([[1.0, 0.0], [2.0, 1.0], [3.0, 5.0], [4.0, 2.0]])
    data = prepare_housing(feats, np.array([1.0, 2.0, 2.0, 3.0]), "toy")
    assert data.y.tolist() == [-1.0, -1.0, -1.0, 1.0]  # median 2: ties go to −1
    with pytest.raises(ValueError, match="constant"):
        prepare_housing(np.ones((4, 2)), np.arange(4.0), "toy")


def test_housing_missing_file_error(tmp_path, monkeypatch):
    monkeypatch.setenv("DPDL_DATA_MIRROR", str(tmp_path))
    monkeypatch.setenv("DPDL_DATA_DIR", str(tmp_path / "cache"))
    with pytest.raises(DataUnavailableError, match="DATA_MIRROR=../shared/data") as err:
        load_housing()
    assert "DPDL_DATA_MIRROR" in str(err.value) and "housing.data" in str(err.value)
    monkeypatch.delenv("DPDL_DATA_MIRROR")
    with pytest.raises(DataUnavailableError, match="unset"):
        load_housing()
    with pytest.raises(DataUnavailableError, match="DPDL_DATA_MIRROR"):
        load_housing(path=tmp_path / "nope.data")


def test_split_runs(housing):
    s = split_runs(housing, 4, seed=0)
    assert s.z.shape == (4, 10, 41, 13) and s.x_test.shape == (4, 102, 13)
    assert (s.mask.sum(axis=(1, 2)) == 404).all()
    assert sorted(s.mask[0].sum(axis=1)) == [40] * 6 + [41] * 4
    # Train and test rows of a run are the 506 rows, each once (compared up to the sign y).
    train = np.abs(s.z[0][s.mask[0]])
    rows = np.vstack([train, np.abs(s.x_test[0])])
    assert len(np.unique(rows.round(12), axis=0)) == 506
    again = split_runs(housing, 2, seed=1)
    np.testing.assert_array_equal(again.x_test[0], s.x_test[1])  # run r uses seed + r
    assert not np.array_equal(s.x_test[0], s.x_test[1])


_HOPS = np.arange(0, 10_001, 100)


def _saturating(updates):
    """A test accuracy that depends on the updates only, rising from 0.5 towards 0.8."""
    return 0.5 + 0.3 * (1 - np.exp(-updates / 3000))


def _curves(per_update, n_runs=1, noise=0.0, hops=_HOPS, p=0.0, seed=0):
    """Accuracy per hop of a curve that depends on the updates only ((1 - p) per hop)."""
    from types import SimpleNamespace

    rng = np.random.default_rng(seed)
    acc = per_update((1 - p) * hops)[:, None] + rng.normal(0, noise, (len(hops), n_runs))
    return SimpleNamespace(hops=hops, accuracy=acc, mean_accuracy=acc.mean(axis=1))


def test_measured_speedup_recovers_the_horizontal_gap():
    """The speed-up is the latency no skipping needs to the target over the latency skipping
    needs: on noiseless curves (accuracy a function of updates) with a per-hop latency that
    makes skipping k times faster per update, it is k, and the target is TARGET_FRACTION of the
    way from the start to the lower final accuracy."""
    from dpdl_core.papers.straggler.claims import TARGET_FRACTION
    from dpdl_core.papers.straggler.figures import measured_speedup

    base = _curves(_saturating)
    for p, k in ((0.5, 3.0), (0.7, 0.8)):
        skip = _curves(_saturating, p=p)
        sp = measured_speedup(base, 1.0, skip, (1 - p) / k)
        assert sp.factor == pytest.approx(k, rel=0.01)
        assert sp.target == pytest.approx(0.5 + TARGET_FRACTION * (_saturating((1 - p) * 10_000) - 0.5))
        assert sp.log_se == math.inf  # one run: no spread
    flat = _curves(lambda u: 0.5 + 0 * u)
    assert math.isnan(measured_speedup(flat, 1.0, flat, 1.0).factor)  # nothing learnt: no target


def test_measured_speedup_bootstrap_is_paired_and_seeded():
    """The bootstrap resamples run indices jointly: curves that differ from the base only by a
    shift of the latency axis have the same noise in every run, so the factor has no spread;
    independent noise gives one. The same seed gives the same SE; unpaired curves are refused."""
    from dpdl_core.papers.straggler.figures import measured_speedup

    base = _curves(_saturating, n_runs=20, noise=0.02, seed=1)
    same = measured_speedup(base, 1.0, base, 0.5)
    assert same.factor == pytest.approx(2.0) and same.log_se == pytest.approx(0.0, abs=1e-12)
    other = _curves(_saturating, n_runs=20, noise=0.02, seed=2)
    a, b = measured_speedup(base, 1.0, other, 0.5, seed=3), measured_speedup(base, 1.0, other, 0.5, seed=3)
    assert 0 < a.log_se < 1 and a == b and a.low < a.factor < a.high
    with pytest.raises(ValueError, match="paired"):
        measured_speedup(base, 1.0, _curves(_saturating, n_runs=5, noise=0.02), 0.5)


def test_lemma2_gap_is_one_on_curves_that_depend_on_updates_only():
    """Curves that are one function of the token updates give measured / Lemma 2 = 1 and no
    gap at equal updates; a skipping curve that learns half as fast per update gives about
    1/2 (at the target, 90% of the way to its lower final accuracy) and a negative gap. The
    ratio equals the latency factor over Lemma 2's for any latency per hop."""
    from dpdl_core.papers.straggler import study as S
    from dpdl_core.papers.straggler.figures import measured_speedup

    hops = np.arange(0, 20_001, 100)
    runs = {("ss_rand_ring", 1e-4): _curves(_saturating, n_runs=3, hops=hops, p=1e-4),
            ("ss_rand_ring", 0.5): _curves(_saturating, n_runs=3, hops=hops, p=0.5)}
    gap = S.lemma2_gap(runs=runs)
    assert len(gap) == 1 and gap["p"].item() == 0.5
    assert gap["measured / Lemma 2"].item() == pytest.approx(1.0, rel=0.01)
    assert all(abs(float(g)) < 0.05 for g in gap["gap at equal updates (pp)"].item().split(", "))
    slow = {**runs, ("ss_rand_ring", 0.5): _curves(lambda u: _saturating(u / 2), n_runs=3, hops=hops, p=0.5)}
    gap = S.lemma2_gap(runs=slow)
    assert gap["measured / Lemma 2"].item() == pytest.approx(0.5, rel=0.05)
    assert all(float(g) < 0 for g in gap["gap at equal updates (pp)"].item().split(", "))
    base_hop, skip_hop = 1.0, 0.2  # any latency model: factor / Lemma 2 is the same number
    lemma2 = (base_hop / (1 - 1e-4)) / (skip_hop / (1 - 0.5))
    factor = measured_speedup(slow[("ss_rand_ring", 1e-4)], base_hop, slow[("ss_rand_ring", 0.5)], skip_hop).factor
    assert factor / lemma2 == pytest.approx(gap["measured / Lemma 2"].item(), rel=1e-9)


def test_ordering_claims_read_the_figure_at_the_papers_resolution():
    """A reversal the figure cannot show (within ON_TOP, the gap the paper calls "on top of
    each other") does not fail an ordering claim; one beyond it does; an order that shows
    nowhere decides nothing; ``every_pair`` needs the order to show in each pair."""
    from dpdl_core.papers.straggler.claims import ON_TOP
    from dpdl_core.papers.straggler.figures import order_verdict

    shows = np.array([0.5, 0.2, -0.9 * ON_TOP])  # above by 50% early, reversed by 9% at the end
    hidden = np.array([0.05, -0.05])  # within the resolution everywhere
    reversed_ = np.array([0.5, -1.05 * ON_TOP])
    assert order_verdict([shows], every_pair=True) == "holds"
    assert order_verdict([shows, reversed_], every_pair=False) == "fails"
    assert order_verdict([hidden], every_pair=True) == "inconclusive"
    assert order_verdict([shows, hidden], every_pair=True) == "inconclusive"
    assert order_verdict([shows, hidden], every_pair=False) == "holds"
    assert order_verdict([np.array([])], every_pair=True) == "inconclusive"  # no common range
