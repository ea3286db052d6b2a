"""LEASGD phase 1: pools, groups, the elastic operator of eq. (3), the communication count
and the privacy accounting (dpdl_core.papers.leasgd.pools / .privacy)."""
import math

import numpy as np
import pytest
import torch

from dpdl_core.papers.leasgd import pools
from dpdl_core.papers.leasgd.privacy import calibrate_sigma, early_stopping, sampling_rates, total_epsilon
from dpdl_core.sim.topology import make_topology


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _slow_elastic(X, G, follower_of, lr, rho):
    """Eq. (3) worker by worker, every right-hand side at time t (summed over a follower's
    leaders): w^i − ηg^i + ηρ(w^f − w^i) for a leader, w^f − ηg^f + ηρ Σ_i (w^i − w^f)."""
    out = torch.empty_like(X)
    for w in range(X.shape[0]):
        f = int(follower_of[w])
        if f != w:
            out[w] = X[w] - lr * G[w] + lr * rho * (X[f] - X[w])
        else:
            pull = torch.zeros_like(X[w])
            for i in range(X.shape[0]):
                if i != w and int(follower_of[i]) == w:
                    pull += X[i] - X[w]
            out[w] = X[w] - lr * G[w] + lr * rho * pull
    return out


# -- pools ---------------------------------------------------------------------------------


@pytest.mark.parametrize("m, p, n_f", [(5, 4, 1), (15, 4, 3), (7, 4, 2), (3, 2, 1), (10, 1, 5)])
def test_n_followers(m, p, n_f):
    if m - n_f <= n_f:
        with pytest.raises(ValueError, match="leader pool must be larger"):
            pools.n_followers(m, p)
        return
    assert pools.n_followers(m, p) == n_f


def test_n_followers_is_the_fewest_giving_no_follower_more_than_p_leaders():
    # The slow reference: count up from one follower; refused when leaders would not outnumber them.
    for m in range(2, 41):
        for p in range(1, 7):
            fewest = next(k for k in range(1, m + 1) if math.ceil((m - k) / k) <= p)
            if m - fewest <= fewest:
                with pytest.raises(ValueError, match="leader pool must be larger"):
                    pools.n_followers(m, p)
            else:
                assert pools.n_followers(m, p) == fewest, (m, p)


@pytest.mark.parametrize("m, p", [(2, 4), (4, 1)])
def test_n_followers_rejects_too_few_leaders(m, p):
    with pytest.raises(ValueError, match="leader pool must be larger"):
        pools.n_followers(m, p)
    with pytest.raises(ValueError, match="p=0"):
        pools.n_followers(5, 0)


def test_split_pools_lower_loss_leads_and_covers_every_worker():
    loss = torch.tensor([0.9, 0.1, 0.5, 2.0, 0.3, 0.7, 1.1, 0.2, 0.4, 0.6, 0.8, 1.5, 0.05, 1.2, 0.35])
    leaders, followers = pools.split_pools(loss, pools.n_followers(15, 4))
    assert len(leaders) == 12 and len(followers) == 3
    assert sorted(leaders.tolist() + followers.tolist()) == list(range(15))
    assert loss[leaders].max() < loss[followers].min()
    assert followers.tolist() == [3, 11, 13]  # the three highest losses


def test_split_pools_ties_by_index_and_nan_follows():
    leaders, followers = pools.split_pools(torch.full((5,), 0.3), 1)
    assert leaders.tolist() == [0, 1, 2, 3] and followers.tolist() == [4]
    leaders, followers = pools.split_pools(torch.tensor([0.2, float("nan"), 0.2, 0.1, 0.2]), 1)
    assert followers.tolist() == [1]
    leaders, followers = pools.split_pools(torch.tensor([0.5, 0.2, 0.5, 0.1, 0.5]), 1)
    assert followers.tolist() == [4]  # of the tied highest, the highest index follows


def test_groups_partition_leaders_evenly():
    loss = torch.rand(15, generator=_gen(0))
    leaders, followers = pools.split_pools(loss, pools.n_followers(15, 4))
    fo = pools.draw_groups(leaders, followers, _gen(1))
    assert (fo[followers] == followers).all()
    assert set(fo[leaders].tolist()) == set(followers.tolist())
    assert torch.bincount(fo[leaders], minlength=15)[followers].tolist() == [4, 4, 4]
    # 7 workers, p = 4: 2 followers sharing 5 leaders as 3 + 2
    fo7 = pools.draw_groups(torch.tensor([0, 1, 2, 4, 6]), torch.tensor([3, 5]), _gen(2))
    assert sorted(torch.bincount(fo7[[0, 1, 2, 4, 6]], minlength=7)[[3, 5]].tolist()) == [2, 3]


def test_groups_seeded_and_redrawn():
    leaders, followers = torch.arange(3, 15), torch.arange(3)
    a = [pools.draw_groups(leaders, followers, g) for g in [_gen(7)] for _ in range(20)]
    g = _gen(7)
    b = [pools.draw_groups(leaders, followers, g) for _ in range(20)]
    assert all(torch.equal(x, y) for x, y in zip(a, b))  # same seed, same sequence
    c = [pools.draw_groups(leaders, followers, _gen(8)) for _ in range(1)]
    assert not torch.equal(a[0], c[0])
    distinct = {tuple(x.tolist()) for x in a}
    assert len(distinct) > 15  # re-drawn at every step (12!/(4!^3) = 34,650 groupings)
    met = torch.zeros(15, 15, dtype=torch.bool)
    for x in a:
        met[leaders, x[leaders]] = True
    assert met[leaders][:, followers].all()  # every leader meets every follower


# -- elastic operator (eq. 3) ---------------------------------------------------------------


def test_elastic_two_worker_hand_example():
    # Worker 0 leads follower 1; α = ηρ = 0.1 · 2.5 = 0.25.
    X = torch.tensor([[1.0, 0.0], [0.0, 2.0]])
    G = torch.tensor([[1.0, 1.0], [0.0, -2.0]])
    A = pools.elastic_matrix(torch.tensor([1, 1]), 0.25)
    assert torch.allclose(A, torch.tensor([[0.75, 0.25], [0.25, 0.75]]))
    new = A @ X - 0.1 * G
    # leader: [1,0] − 0.1[1,1] + 0.25([0,2] − [1,0]) = [0.65, 0.4]
    # follower: [0,2] − 0.1[0,−2] + 0.25([1,0] − [0,2]) = [0.25, 1.7]
    assert torch.allclose(new, torch.tensor([[0.65, 0.4], [0.25, 1.7]]))


@pytest.mark.parametrize("m, seed", [(5, 0), (15, 1), (7, 2)])
def test_batched_elastic_update_matches_per_worker_eq3(m, seed):
    g = _gen(seed)
    X, G = torch.randn(m, 30, generator=g, dtype=torch.float64), torch.randn(m, 30, generator=g, dtype=torch.float64)
    leaders, followers = pools.split_pools(torch.rand(m, generator=g), pools.n_followers(m, 4))
    fo = pools.draw_groups(leaders, followers, g)
    lr, rho = 0.05, 4.5
    A = pools.elastic_matrix(fo, lr * rho, dtype=torch.float64)
    assert torch.allclose(A @ X - lr * G, _slow_elastic(X, G, fo, lr, rho), atol=1e-12)
    # symmetric, doubly stochastic, non-negative at β = pα = 0.9: the mean model is kept
    assert torch.allclose(A, A.T) and torch.allclose(A.sum(0), torch.ones(m, dtype=torch.float64))
    assert (A >= 0).all()
    assert torch.allclose((A @ X).mean(0), X.mean(0))


def test_rho_zero_is_identity():
    fo = pools.draw_groups(torch.arange(1, 5), torch.tensor([0]), _gen(0))
    assert torch.equal(pools.elastic_matrix(fo, 0.0), torch.eye(5))


# -- communication count --------------------------------------------------------------------


def test_transmitted_vectors_hand_count_m5():
    fo = pools.draw_groups(torch.tensor([0, 1, 3, 4]), torch.tensor([2]), _gen(0))
    # 4 links (leader, follower 2), each carrying both models: 8 vectors.
    assert pools.vectors_per_communication(fo) == 8
    ring = make_topology("ring", 5)
    W = ring.W
    assert int(((W > 0) & ~np.eye(5, dtype=bool)).sum()) == 10  # D-PSGD ring: 2m
    # The operator sends along exactly those links: off-diagonal non-zeros of A.
    A = pools.elastic_matrix(fo, 0.225)
    assert int(((A != 0) & ~torch.eye(5, dtype=torch.bool)).sum()) == 8


def test_transmitted_vectors_m15():
    leaders, followers = pools.split_pools(torch.rand(15, generator=_gen(3)), 3)
    assert pools.vectors_per_communication(pools.draw_groups(leaders, followers, _gen(4))) == 24  # vs ring 30


# -- privacy accounting ---------------------------------------------------------------------


def _direct_rdp(sigma, q, steps, delta):
    import dp_accounting as dpa
    from dp_accounting import rdp

    from dpdl_core.sim.privacy import RDP_ORDERS

    acc = rdp.RdpAccountant(orders=RDP_ORDERS)
    acc.compose(dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(sigma)), steps)
    return acc.get_epsilon(delta)


def _direct_pld(sigma, q, steps, delta):
    import dp_accounting as dpa
    from dp_accounting import pld

    acc = pld.PLDAccountant()
    acc.compose(dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(sigma)), steps)
    return acc.get_epsilon(delta)


def test_total_epsilon_matches_direct_dp_accounting():
    sizes = [3487, 3487, 3487, 3486, 3488]
    eps = total_epsilon(1.1, sizes, 64, 1500, 1e-5)
    assert eps.shape == (5,)
    direct = {n: _direct_rdp(1.1, 64 / n, 1500, 1e-5) for n in set(sizes)}
    for e, n in zip(eps, sizes):
        assert e == pytest.approx(direct[n], rel=1e-12)
    # the RDP bound is an upper bound on the (tighter) PLD ε, and not a loose one
    pld_eps = _direct_pld(1.1, 64 / 3487, 1500, 1e-5)
    assert pld_eps <= eps[0] <= 1.5 * pld_eps
    assert eps[4] < eps[0] < eps[3]  # a larger shard, a smaller q, a smaller ε


def test_epsilon_grows_with_steps_and_is_infinite_without_noise():
    sizes = [1017] * 5
    e = [total_epsilon(1.0, sizes, 32, t, 1e-5)[0] for t in (200, 400, 500)]
    assert e[0] < e[1] < e[2]
    assert math.isinf(total_epsilon(0.0, sizes, 32, 100, 1e-5)[0])


def test_calibrated_sigma_hits_target_at_t_max():
    sizes = [1017, 1017, 1016, 1018, 1017]
    # a target with σ₂ > 1 keeps the accountant calls cheap (its fractional orders are slow at small σ)
    sigma = calibrate_sigma(2.0, sizes, 32, 500, 1e-5)
    assert sigma > 1
    eps = total_epsilon(sigma, sizes, 32, 500, 1e-5)
    assert eps.max() <= 2.0 and eps.max() == pytest.approx(2.0, rel=2e-3)
    assert eps.argmax() == 2  # the smallest shard sets σ₂
    assert (total_epsilon(sigma, sizes, 32, 400, 1e-5) < eps).all()  # stopping early spends less
    with pytest.raises(ValueError, match="batch_size=64 exceeds"):
        sampling_rates([50, 100], 64)


# -- early stopping -------------------------------------------------------------------------


def test_early_stopping_hand_example():
    steps = [50, 100, 150, 200, 250, 300, 350, 400]
    vals = [0.5, 0.7, 0.69, 0.7, 0.65, 0.68, 0.9, 0.95]
    s = early_stopping(steps, vals, patience=200, last_step=400)
    # best 0.7 at 100 (the equal 0.7 at 200 is no improvement); 300 − 100 ≥ 200 → stop at 300
    assert (s.stop_step, s.best_step, s.best_value, s.stopped) == (300, 100, 0.7, True)
    s = early_stopping(steps, vals, patience=250, last_step=400)
    assert (s.stop_step, s.best_step, s.stopped) == (400, 400, False)


def test_early_stopping_post_hoc_equals_online():
    rng = np.random.default_rng(0)
    steps = np.arange(10, 1510, 10)
    vals = np.minimum(0.9, np.cumsum(rng.normal(0.004, 0.02, len(steps))))
    full = early_stopping(steps, vals, 200, 1500)
    assert full.stopped
    # an online run would have seen only the rounds up to its stop: same decision
    keep = steps <= full.stop_step
    assert early_stopping(steps[keep], vals[keep], 200, 1500) == full
    with pytest.raises(ValueError, match="patience"):
        early_stopping(steps, vals, 0, 1500)
