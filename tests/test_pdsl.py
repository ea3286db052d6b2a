"""PDSL phase 1: Shapley values (eqs 16–20, Algorithm 2) and the σ formulas (eq 27)."""
import itertools
import math

import numpy as np
import pytest
import torch
from torch import nn

from dpdl_core.papers.pdsl.privacy import per_message_sigma, theorem1_phi_min, theorem1_sigma
from dpdl_core.papers.pdsl.shapley import (
    ShapleyConfig,
    exact_from_values,
    mc_from_values,
    min_max_normalise,
    permutations,
    prefix_bits,
    shapley_round,
    shapley_weights,
)
from dpdl_core.sim.engine import Engine


class TableGame:
    """Games given by value tables, played through ``shapley_round``.

    Agent a's k-th candidate is the unit vector e_k with a last coordinate a, so the average
    of a coalition's candidates (eq 17) is positive exactly on its members and still names
    the agent; ``__call__`` decodes each model row to (agent, bitmask) and looks it up.
    """

    def __init__(self, tables):
        self.tables = [np.asarray(t, dtype=float) for t in tables]  # (2^n_a,), [0] unused
        self.counts = np.array([int(math.log2(len(t))) for t in self.tables])
        P = self.counts.max() + 1
        rows = []
        for a, n in enumerate(self.counts):
            block = torch.zeros(n, P, dtype=torch.float64)
            block[:, :n] = torch.eye(n, dtype=torch.float64)
            block[:, -1] = a
            rows.append(block)
        self.candidates = torch.cat(rows)
        self.calls = []

    def __call__(self, models):
        self.calls.append(len(models))
        out = []
        for row in models:
            a = int(round(row[-1].item()))
            bits = sum(1 << k for k in range(self.counts[a]) if row[k] > 0)
            out.append(self.tables[a][bits])
        return torch.tensor(out)

    def exact(self, a, empty=0.0):
        t = self.tables[a].copy()
        t[0] = empty
        return exact_from_values(t[None])[0]


def random_table(n, rng):
    t = rng.uniform(0, 1, 2**n)
    t[0] = 0.0
    return t


def test_exact_matches_hand_computed_three_player_game():
    # v(A)=10, v(B)=20, v(C)=30, v(AB)=40, v(AC)=50, v(BC)=60, v(ABC)=90 (bit 0 = A).
    # φ_A = 10/3 + (20+20)/6 + 30/3 = 20; φ_B = 20/3 + (30+30)/6 + 40/3 = 30; φ_C = 40.
    table = [0, 10, 20, 40, 30, 50, 60, 90]
    game = TableGame([table])
    res = shapley_round(game.candidates, game.counts, game, ShapleyConfig(estimator="exact", empty="zero"),
                        torch.Generator().manual_seed(0))
    np.testing.assert_allclose(res.phi.numpy(), [20, 30, 40], atol=1e-12)
    assert res.evaluations == 7


def test_shapley_axioms_exact_and_monte_carlo():
    """Efficiency, symmetry (players 0 and 1) and the null player (player 4)."""
    rng = np.random.default_rng(1)
    f = rng.uniform(0, 1, (3, 2, 2))  # v depends on |S∩{0,1}|, 2∈S, 3∈S only
    f[0, 0, 0] = 0.0  # so that v({4}) = v(∅)
    table = np.zeros(32)
    for bits in range(1, 32):
        table[bits] = f[(bits & 1) + (bits >> 1 & 1), bits >> 2 & 1, bits >> 3 & 1]
    table[0] = 0.0
    game = TableGame([table])
    phi = shapley_round(game.candidates, game.counts, game, ShapleyConfig(estimator="exact", empty="zero"),
                        torch.Generator().manual_seed(0)).phi.numpy()
    assert phi.sum() == pytest.approx(table[31] - table[0], abs=1e-12)
    assert phi[0] == pytest.approx(phi[1], abs=1e-12)
    assert phi[4] == pytest.approx(0.0, abs=1e-12)
    assert abs(phi[0] - phi[2]) > 1e-3  # the game is not trivially symmetric
    for est in ("permutation", "stratified"):
        mc = shapley_round(game.candidates, game.counts, game,
                           ShapleyConfig(estimator=est, permutations=7, empty="zero"),
                           torch.Generator().manual_seed(3)).phi.numpy()
        # Each permutation's marginals telescope to v(N) − v(∅); a null player never gains.
        assert mc.sum() == pytest.approx(table[31], abs=1e-12)
        assert mc[4] == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("estimator", ["permutation", "stratified"])
def test_monte_carlo_converges_to_exact(estimator):
    rng = np.random.default_rng(0)
    table = random_table(6, rng)
    game = TableGame([table])
    exact = game.exact(0)
    errors = []
    for R in (12, 120, 6000):
        cfg = ShapleyConfig(estimator=estimator, permutations=R, empty="zero", chunk=4096)
        phi = shapley_round(game.candidates, game.counts, game, cfg, torch.Generator().manual_seed(7)).phi.numpy()
        errors.append(np.abs(phi - exact).max())
    assert errors[2] < errors[1] < errors[0]
    # Stated tolerance at R = 6000: 0.02 (the marginals lie in [−1, 1]; sd ≲ 1/√R ≈ 0.013).
    assert errors[2] < 0.02


def slow_algorithm2(perms, v, empty):
    """Algorithm 2 as printed: for each permutation and each player j, evaluate
    v(Z_j ∪ {j}) and v(Z_j) separately, one coalition at a time (2n calls per permutation)."""
    R, n = perms.shape
    phi = np.zeros(n)
    calls = 0
    for perm in perms:
        for j in range(n):
            pos = int(np.flatnonzero(perm == j)[0])
            Z = set(perm[:pos].tolist())
            with_j = v(Z | {j})
            without = v(Z) if Z else empty
            calls += 2
            phi[j] += (with_j - without) / R
    return phi, calls


@pytest.mark.parametrize("stratified", [False, True])
def test_prefix_reuse_equals_algorithm2_as_written(stratified):
    rng = np.random.default_rng(2)
    n = 7
    table = random_table(n, rng)
    game = TableGame([table])
    empty = 0.3
    cfg = ShapleyConfig(estimator="stratified" if stratified else "permutation", permutations=9, empty="previous")
    previous = torch.zeros(1, game.candidates.shape[1], dtype=torch.float64)
    table_with_empty = table.copy()
    table_with_empty[0] = empty  # the decoded "previous" model has no members: bitmask 0
    game.tables[0] = table_with_empty
    res = shapley_round(game.candidates, game.counts, game, cfg, torch.Generator().manual_seed(11), previous=previous)
    perms = permutations(1, n, 9, torch.Generator().manual_seed(11), stratified)[0]
    slow, slow_calls = slow_algorithm2(perms, lambda S: table[sum(1 << k for k in S)], empty)
    np.testing.assert_allclose(res.phi.numpy(), slow, atol=1e-12)
    # Prefix reuse: at most n evaluations per permutation (+1 for v(∅)), vs 2n as written.
    assert res.evaluations <= len(perms) * n + 1 < slow_calls


def test_mc_from_values_by_hand():
    perms = np.array([[[1, 0, 2], [2, 1, 0]]])
    v = {0b010: 0.5, 0b011: 0.7, 0b111: 1.0, 0b100: 0.2, 0b110: 0.6}
    prefix_values = np.vectorize(v.get)(prefix_bits(perms))
    phi = mc_from_values(perms, prefix_values, np.array([0.1]))
    # Perm 1: 1 gains 0.4, 0 gains 0.2, 2 gains 0.3. Perm 2: 2 gains 0.1, 1 gains 0.4, 0 gains 0.4.
    np.testing.assert_allclose(phi[0], [0.3, 0.4, 0.2], atol=1e-12)


def test_mixed_game_sizes_and_estimators_in_one_round():
    """Agents with n = 3 (exact) and n = 9 (Monte Carlo) solved in the same batched calls."""
    rng = np.random.default_rng(4)
    tables = [random_table(3, rng), random_table(9, rng), random_table(3, rng)]
    game = TableGame(tables)
    cfg = ShapleyConfig(estimator="auto", exact_max_players=8, permutations=5000, empty="zero", chunk=1 << 16)
    res = shapley_round(game.candidates, game.counts, game, cfg, torch.Generator().manual_seed(0))
    phi = res.phi.numpy()
    np.testing.assert_allclose(phi[:3], game.exact(0), atol=1e-12)
    np.testing.assert_allclose(phi[12:], game.exact(2), atol=1e-12)
    assert np.abs(phi[3:12] - game.exact(1)).max() < 0.03
    assert sum(game.calls) == res.evaluations and len(game.calls) == 1


def test_empty_value_shifts_exact_values_uniformly():
    rng = np.random.default_rng(5)
    game = TableGame([random_table(5, rng)])
    a, b = game.exact(0, empty=0.0), game.exact(0, empty=0.8)
    np.testing.assert_allclose(a - b, np.full(5, 0.8 / 5), atol=1e-12)
    owner = torch.zeros(5, dtype=torch.long)
    na, _ = min_max_normalise(torch.as_tensor(a), owner, 1)
    nb, _ = min_max_normalise(torch.as_tensor(b), owner, 1)
    np.testing.assert_allclose(na.numpy(), nb.numpy(), atol=1e-12)


def tiny_engine():
    torch.manual_seed(0)
    module = nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(4 * 13 * 13, 10))
    return Engine(module)


def test_batched_coalition_evaluation_equals_one_at_a_time():
    eng = tiny_engine()
    g = torch.Generator().manual_seed(0)
    xq, yq = torch.randn(300, 1, 28, 28, generator=g), torch.randint(0, 10, (300,), generator=g)
    counts = np.array([3, 4, 3])
    base = eng.initial_params(1)[0]
    candidates = base + 0.3 * torch.randn(counts.sum(), eng.P, generator=g)
    previous = base + 0.3 * torch.randn(3, eng.P, generator=g)
    calls = []

    def value_fn(X):
        calls.append(X.shape[0])
        return eng.evaluate(X, xq, yq)[1]

    res = shapley_round(candidates, counts, value_fn, ShapleyConfig(estimator="exact", empty="previous", chunk=6),
                        torch.Generator().manual_seed(0), previous=previous)
    assert max(calls) == 6 and sum(calls) == res.evaluations == 7 + 15 + 7 + 3

    # One model and one coalition at a time: eqs (17), (16), (18) literally.
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    slow = []
    for a, n in enumerate(counts):
        cand = candidates[starts[a] : starts[a] + n]
        v_empty = eng.evaluate(previous[a : a + 1], xq, yq)[1].item()

        def v(S, cand=cand, v_empty=v_empty):
            if not S:
                return v_empty
            return eng.evaluate(cand[list(S)].mean(0, keepdim=True), xq, yq)[1].item()

        for j in range(n):
            others = [k for k in range(n) if k != j]
            slow.append(
                sum(
                    (v(set(S) | {j}) - v(set(S))) / (n * math.comb(n - 1, len(S)))
                    for s in range(n)
                    for S in itertools.combinations(others, s)
                )
            )
    np.testing.assert_allclose(res.phi.numpy(), slow, atol=1e-9)
    np.testing.assert_allclose(res.empty_values.numpy(), eng.evaluate(previous, xq, yq)[1].numpy(), atol=1e-7)


def test_min_max_normalisation_eq19_and_ties():
    phi = torch.tensor([0.2, -0.1, 0.5, 0.3, 0.3, 0.3, 0.7, 0.4], dtype=torch.float64)
    owner = torch.tensor([0, 0, 0, 1, 1, 1, 2, 2])
    hat, tied = min_max_normalise(phi, owner, 3)
    np.testing.assert_allclose(hat.numpy(), [0.5, 0.0, 1.0, 1, 1, 1, 1.0, 0.0], atol=1e-12)
    assert tied.tolist() == [False, True, False]


@pytest.mark.parametrize("floor", [0.0, 0.5])
def test_weights_eq20_sum(floor):
    g = torch.Generator().manual_seed(0)
    owner = torch.tensor([0] * 3 + [1] * 5 + [2] * 2)
    omega = torch.rand(10, generator=g, dtype=torch.float64) + 0.05
    hat, _ = min_max_normalise(torch.rand(10, generator=g, dtype=torch.float64), owner, 3)
    pi = shapley_weights(hat, omega, owner, 3, floor=floor)
    # Σ_j ω_ij π_ij = 1 for every agent (eq 20 divides by ω).
    np.testing.assert_allclose(torch.zeros(3, dtype=torch.float64).index_add_(0, owner, omega * pi).numpy(), 1.0)
    share = (omega * pi).numpy()
    n = np.bincount(owner.numpy())[owner.numpy()]
    assert share.min() >= floor / n.max() - 1e-15
    if floor == 0.0:
        assert share.min() == 0.0  # eq (19) always gives the worst player weight 0
        # Uniform ω = 1/n: the weights sum to n (a step of ≈ nγ).
        uni = shapley_weights(hat, 1.0 / torch.as_tensor(n, dtype=torch.float64), owner, 3)
        np.testing.assert_allclose(torch.zeros(3, dtype=torch.float64).index_add_(0, owner, uni).numpy(), [3, 5, 2])


def uniform_W(kind, M):
    if kind == "fc":
        return np.full((M, M), 1.0 / M)
    W = np.zeros((M, M))
    for i in range(M):
        for d in (-1, 0, 1):
            W[i, (i + d) % M] = 1 / 3
    return W


@pytest.mark.parametrize(
    "kind, M, eps, expected",
    [("fc", 10, 0.08, 4213), ("fc", 20, 0.08, 11375), ("fc", 10, 0.5, 674), ("ring", 10, 0.5, 134.26)],
)
def test_theorem1_sigma_regression(kind, M, eps, expected):
    """Spec §2 sizes (C = 1, δ = 1e-5, best case φ̂_min = 1/n)."""
    W = uniform_W(kind, M)
    n = int((W[0] > 0).sum())
    assert theorem1_sigma(eps, 1e-5, W, 1.0, 1.0 / n) == pytest.approx(expected, rel=1e-3)


def test_theorem1_sigma_by_hand_on_a_path():
    # Metropolis weights on the path 0-1-2, C = 2, δ = 1e-5, ε = 0.5, φ̂_min = 0.25.
    W = np.array([[2, 1, 0], [1, 1, 1], [0, 1, 2]]) / 3
    g = math.sqrt(2 * math.log(1.25e5))
    agent0 = 2 * 2 * (3 + 1.5 + 3) * g / (0.25 * 0.5 * math.sqrt(1.5**2 + 3**2))
    agent1 = 2 * 2 * (3 + 9) * g / (0.25 * 0.5 * math.sqrt(27))
    assert agent1 > agent0
    assert theorem1_sigma(0.5, 1e-5, W, 2.0, 0.25) == pytest.approx(agent1, rel=1e-12)


def test_theorem1_infinite_without_floor():
    W = uniform_W("fc", 10)
    counts = np.full(10, 10)
    assert theorem1_phi_min(counts, 0.0) == 0.0
    assert theorem1_sigma(0.3, 1e-5, W, 2.0, theorem1_phi_min(counts, 0.0)) == math.inf
    # Spec §5.2's floor ½ gives φ̂_min = 1/(2n), i.e. twice the best-case σ.
    assert theorem1_sigma(0.3, 1e-5, W, 2.0, theorem1_phi_min(counts, 0.5)) == pytest.approx(
        2 * theorem1_sigma(0.3, 1e-5, W, 2.0, 0.1), rel=1e-12
    )
    with pytest.raises(ValueError, match="epsilon"):
        theorem1_sigma(1.0, 1e-5, W, 2.0, 0.1)


def test_per_message_sigma_regression():
    # 2·C·√(2 ln(1.25/δ))/ε with C = 2, δ = 1e-5, ε = 0.3: 4·4.84481/0.3.
    assert per_message_sigma(0.3, 1e-5, 2.0) == pytest.approx(64.5974, rel=1e-5)
    assert per_message_sigma(1.0, 1e-5, 3.0) == pytest.approx(29.0688, rel=1e-5)
    with pytest.raises(ValueError, match="delta"):
        per_message_sigma(0.3, 1.5, 2.0)


@pytest.mark.parametrize(
    "field, value",
    [("estimator", "greedy"), ("empty", "one"), ("permutations", 0), ("mc_sampling", "exact"),
     ("exact_max_players", 30)],
)
def test_config_validation_names_the_field(field, value):
    with pytest.raises(ValueError, match=field):
        ShapleyConfig(**{field: value})
