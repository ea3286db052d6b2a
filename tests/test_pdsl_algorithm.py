"""PDSL phase 2: one round of Algorithm 1 against a slow per-agent reference, the noise
of its messages, its σ rules, the fast coalition evaluator and the options' validation."""
import itertools
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch.func import functional_call

from dpdl_core.papers.pdsl.algorithm import PDSLParams
from dpdl_core.papers.pdsl.evaluation import StackedEvaluator, supports
from dpdl_core.papers.pdsl.presets import preset
from dpdl_core.papers.pdsl.privacy import per_message_sigma, theorem1_sigma
from dpdl_core.papers.pdsl.shapley import permutations
from dpdl_core.runs.config import ExperimentConfig
from dpdl_core.runs.runner import prepare
from dpdl_core.sim.engine import Engine
from dpdl_core.sim.models import build_model
from dpdl_core.sim.privacy import PrivacyError, rdp_epsilon


def small(topology="ring", n_agents=4, **changes):
    base = dict(n_agents=n_agents, rounds=2, batch_size=8, train_samples=400, validation_samples=60,
                eval_samples=100, epsilon=None, lr=0.3, momentum=0.5)
    base.update(changes)
    return preset("mnist", "pdsl", topology, **base)


def perturbed_state(prep, seed=0):
    g = torch.Generator().manual_seed(seed)
    X0 = prep.engine.initial_params(prep.config.n_agents)
    state = prep.algorithm.init_state(X0 + 0.05 * torch.randn(X0.shape, generator=g))
    state["u"] = 0.1 * torch.randn(X0.shape, generator=g)
    return state


class Reference:
    """Algorithm 1 for one agent at a time, with plain autograd and one model at a time."""

    def __init__(self, prep):
        self.prep = prep
        self.module = prep.engine.module
        self.layout = prep.engine.layout
        self.xq, self.yq = prep.ctx.validation

    def grad(self, x, xb, yb):
        params = {k: v.clone().requires_grad_(True) for k, v in self.layout.unflatten(x).items()}
        loss = F.cross_entropy(functional_call(self.module, params, (xb,)), yb)
        g = torch.autograd.grad(loss, list(params.values()))
        return torch.cat([t.reshape(-1) for t in g]), loss.item()

    def acc(self, x):
        with torch.no_grad():
            logits = functional_call(self.module, self.layout.unflatten(x), (self.xq,))
        return (logits.argmax(1) == self.yq).float().mean().item()

    def shapley_exact(self, cands, v_empty):
        n = len(cands)

        def v(S):
            return v_empty if not S else self.acc(torch.stack([cands[k] for k in S]).mean(0))

        return [sum((v(set(S) | {j}) - v(set(S))) / (n * math.comb(n - 1, len(S)))
                    for s in range(n) for S in itertools.combinations([k for k in range(n) if k != j], s))
                for j in range(n)]

    def shapley_mc(self, cands, v_empty, perms):
        # Algorithm 2 as printed: 2 evaluations per player per permutation.
        n, R = len(cands), len(perms)

        def v(S):
            return v_empty if not S else self.acc(torch.stack([cands[k] for k in S]).mean(0))

        phi = [0.0] * n
        for perm in perms:
            for j in range(n):
                Z = set(perm[: int(np.flatnonzero(perm == j)[0])].tolist())
                phi[j] += (v(Z | {j}) - v(Z)) / R
        return phi

    def round(self, X, U, xb, yb, perms=None):
        ctx, W = self.prep.ctx, self.prep.ctx.topology.W
        C, lr, alpha, floor = ctx.clip, ctx.lr, ctx.momentum, self.prep.algorithm.params.floor
        N = X.shape[0]
        u_hat, x_hat, losses, weights = torch.empty_like(U), torch.empty_like(X), [], []
        for i in range(N):
            nbrs = [j for j in range(N) if W[i, j] > 0]
            msgs = []
            for j in nbrs:  # ĝ_{j,i}: j's gradient of x_i on j's batch, clipped as a whole (σ = 0)
                g, loss = self.grad(X[i], xb[j], yb[j])
                msgs.append(g / max(1.0, g.norm().item() / C))
                if j == i:
                    losses.append(loss)
            cands = [X[i] - lr * m for m in msgs]
            v_empty = self.acc(X[i])
            phi = self.shapley_exact(cands, v_empty) if perms is None else self.shapley_mc(cands, v_empty, perms[i])
            lo, hi = min(phi), max(phi)
            hat = [1.0] * len(phi) if hi - lo <= 1e-12 else [(p - lo) / (hi - lo) for p in phi]
            share = [(1 - floor) * h / sum(hat) + floor / len(hat) for h in hat]
            pi = [s / W[i, j] for s, j in zip(share, nbrs)]
            weights.append(pi)
            g_bar = sum(p * m for p, m in zip(pi, msgs))
            u_hat[i] = alpha * U[i] + g_bar
            x_hat[i] = X[i] - lr * u_hat[i]
        Wt = torch.as_tensor(W, dtype=X.dtype)
        return Wt @ x_hat, Wt @ u_hat, torch.tensor(losses), weights


@pytest.mark.parametrize("topology, n_agents, algo, changes", [
    ("ring", 4, {"floor": 0.0}, {}),
    ("fully_connected", 4, {"floor": 0.3, "empty": "zero"}, {}),
    ("bipartite", 4, {"estimator": "permutation", "permutations": 3}, {}),
    # the study's CIFAR-10 way of computing the same round: one model at a time
    ("fully_connected", 4, {"value_strategy": "per_model"}, {"batch_grad_strategy": "per_model"}),
])
def test_round_matches_per_agent_reference(topology, n_agents, algo, changes):
    prep = prepare(small(topology, n_agents, algo=algo, **changes))
    # the round below is computed the way the config names
    assert isinstance(prep.algorithm.value, StackedEvaluator) == (algo.get("value_strategy", "stacked") == "stacked")
    assert prep.engine.batch_grad_strategy == changes.get("batch_grad_strategy", "vmap")
    state = perturbed_state(prep)
    X, U = state["x"].clone(), state["u"].clone()
    prep.ctx.begin_round(1)
    xb, yb = prep.sample_batches()
    perms = None
    if algo.get("estimator") == "permutation":
        rng = torch.Generator().set_state(prep.ctx.rng.get_state())
        perms = permutations(n_agents, int(prep.ctx.topology.degrees[0]), algo["permutations"], rng, stratified=False)
    losses = prep.algorithm.step(state, xb, yb)
    x_ref, u_ref, loss_ref, weights = Reference(prep).round(X, U, xb, yb, perms)
    torch.testing.assert_close(state["x"], x_ref, atol=2e-5, rtol=1e-4)
    torch.testing.assert_close(state["u"], u_ref, atol=2e-5, rtol=1e-4)
    torch.testing.assert_close(losses, loss_ref.to(losses.dtype), atol=1e-5, rtol=1e-5)
    # The round exercised the Shapley weighting (not only eq 19's tie rule).
    assert any(max(w) - min(w) > 1e-6 for w in weights)
    d = prep.algorithm.diagnostics()
    assert d["shapley_evaluations_per_round"] > 0 and 0 <= d["shapley_tie_fraction"] <= 1


@pytest.mark.parametrize("clipping, per_row_std",
                         [("batch", lambda s, C, B: s * C), ("per_sample", lambda s, C, B: s * C / B)])
def test_message_noise_statistics(clipping, per_row_std):
    sigma = 0.7
    prep = prepare(small("ring", 4, epsilon=0.5, sigma_rule="fixed", sigma=sigma, algo={"clipping": clipping}))
    alg, ctx, eng = prep.algorithm, prep.ctx, prep.engine
    X = perturbed_state(prep)["x"]
    ctx.begin_round(1)
    xb, yb = prep.sample_batches()
    noisy, _ = alg.messages(X, xb, yb)
    clean_ctx_sigma = ctx.sigma
    ctx.sigma = torch.zeros_like(clean_ctx_sigma)
    clean, _ = alg.messages(X, xb, yb)
    ctx.sigma = clean_ctx_sigma
    z = (noisy - clean).double()
    expected = per_row_std(sigma, ctx.clip, ctx.batch_size)
    P = eng.P
    # Per message: mean 0 and std σC (σC/B) within 4 standard errors.
    assert z.mean(1).abs().max() < 4 * expected / math.sqrt(P)
    assert (z.std(1) / expected - 1).abs().max() < 4 / math.sqrt(2 * P)
    # Fresh noise per message: the messages' noises are uncorrelated.
    corr = torch.corrcoef(z)
    off = corr[~torch.eye(len(z), dtype=torch.bool)]
    assert off.abs().max() < 5 / math.sqrt(P)
    if clipping == "batch":
        assert clean.norm(dim=1).max() <= ctx.clip * (1 + 1e-5)  # eqs (10), (13)


def test_sigma_rules_and_accountant():
    cfg = small("fully_connected", 4, epsilon=0.3, sigma_rule="per_message")
    prep = prepare(cfg)
    rep = prep.sigma_report
    np.testing.assert_allclose(rep.sigma, per_message_sigma(0.3, 1e-5, 1.0), rtol=1e-12)
    assert rep.noise_scale == 0.5  # batch-clipped message: std σC over sensitivity 2C
    assert rep.k.tolist() == [4, 4, 4, 4]
    q = rep.q[0]
    assert rep.epsilon_rdp[0] == pytest.approx(rdp_epsilon(rep.sigma[0] * 0.5, q, 4, cfg.rounds, cfg.delta), rel=1e-9)
    # Theorem 1: infinite for Algorithm 1 as written, finite with a floor.
    with pytest.raises(PrivacyError, match="infinity"):
        prepare(small("fully_connected", 4, epsilon=0.3, sigma_rule="pdsl_theorem1"))
    floored = prepare(small("fully_connected", 4, epsilon=0.3, sigma_rule="pdsl_theorem1", algo={"floor": 0.5}))
    W = floored.ctx.topology.W
    np.testing.assert_allclose(floored.sigma_report.sigma, theorem1_sigma(0.3, 1e-5, W, 1.0, 0.5 / 4), rtol=1e-12)
    with pytest.raises(PrivacyError, match="epsilon"):
        prepare(small("ring", 4, epsilon=1.0, sigma_rule="pdsl_theorem1", algo={"floor": 0.5}))
    with pytest.raises(PrivacyError, match="pdsl"):
        prepare(small("ring", 4, epsilon=0.3, sigma_rule="pdsl_theorem1").replace(algorithm="dp_dpsgd", algo={}))


def test_pdsl_needs_a_validation_set():
    with pytest.raises(ValueError, match="validation_samples"):
        prepare(small(validation_samples=None))


@pytest.mark.parametrize("field, value", [("clipping", "none"), ("floor", 1.5), ("eval_batch", 0), ("permutations", 0),
                                          ("empty", "one"), ("value_strategy", "fast")])
def test_params_validation_names_the_field(field, value):
    with pytest.raises(ValueError, match=field):
        PDSLParams(**{field: value})
    with pytest.raises(ValueError, match=field):
        ExperimentConfig.from_dict({**small().to_dict(), "algo": {field: value}})


@pytest.mark.parametrize("model, dataset, shape", [("pdsl_mnist", "mnist", (1, 28, 28)),
                                                   ("pdsl_cifar", "cifar10", (3, 32, 32)),
                                                   ("lenet", "mnist", (1, 28, 28)), ("logreg", "mnist", (1, 28, 28))])
def test_stacked_evaluator_equals_engine(model, dataset, shape):
    eng = Engine(build_model(model, dataset, seed=0))
    assert supports(eng.module)
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(70, *shape, generator=g), torch.randint(0, 10, (70,), generator=g)
    X = eng.initial_params(5) + 0.1 * torch.randn(5, eng.P, generator=g)
    ref = eng.evaluate(X, x, y)[1]
    torch.testing.assert_close(StackedEvaluator(eng, x, y, image_batch=32)(X), ref)
    # One image per pass (a tiny workspace), and buffers reused across calls of other K.
    tiny = StackedEvaluator(eng, x, y, workspace_mb=1e-6)
    assert tiny.images_per_pass(5) == 1
    torch.testing.assert_close(tiny(X[:2]), ref[:2])
    torch.testing.assert_close(tiny(X), ref)


def test_the_weighted_average_reading_of_eq_20_sums_to_one_and_the_printed_one_to_n():
    """Eq (20) as printed divides each share by omega (uniform omega = 1/n: the weights sum to
    n); the "weighted average" reading keeps the shares (they sum to 1). Both keep the order
    of the Shapley values."""
    from dpdl_core.papers.pdsl.shapley import shapley_weights

    phi_hat = torch.tensor([0.0, 0.5, 1.0, 0.2, 0.8], dtype=torch.float64)
    owner = torch.tensor([0, 0, 0, 1, 1])
    omega = torch.tensor([1 / 3, 1 / 3, 1 / 3, 1 / 2, 1 / 2], dtype=torch.float64)
    printed = shapley_weights(phi_hat, omega, owner, 2)
    average = shapley_weights(phi_hat, omega, owner, 2, weighting="average")
    sums = lambda w: torch.zeros(2, dtype=w.dtype).index_add_(0, owner, w)  # noqa: E731 - a test's shorthand
    assert torch.allclose(sums(printed), torch.tensor([3.0, 2.0], dtype=torch.float64))
    assert torch.allclose(sums(average), torch.ones(2, dtype=torch.float64))
    assert torch.allclose(printed, average / omega)
    with pytest.raises(ValueError, match="weighting='sum' is not known"):
        shapley_weights(phi_hat, omega, owner, 2, weighting="sum")


def test_the_default_weighting_leaves_the_stored_runs_hashes_alone():
    """The option came after PDSL's runs were stored: at its default it is not hashed."""
    base = preset("mnist", algorithm="pdsl")
    assert base.replace(algo={**base.algo, "weighting": "omega"}).hash == base.hash
    assert base.replace(algo={**base.algo, "weighting": "average"}).hash != base.hash


def test_the_code_base_sigma_convention():
    """The group's add_dp helper: std 2 * 4.2 * C / (8 B eps); about 2,300 times less noise
    than the per-message sigma_b at MNIST's eps 0.3, C 2, B 250."""
    from dpdl_core.papers.pdsl.privacy import code_base_multiplier

    assert code_base_multiplier(0.3, 250) == pytest.approx(8.4 / (8 * 250 * 0.3))
    ratio = per_message_sigma(0.3, 1e-5, 2.0) / (2.0 * code_base_multiplier(0.3, 250))
    assert 2200 < ratio < 2400
    with pytest.raises(ValueError, match="epsilon"):
        code_base_multiplier(0.0, 250)
