"""DPDL (Algorithm 1) against a plain per-agent reference written here, with no engine code."""
import copy
import json
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from dpdl_core.runs.config import ExperimentConfig
from dpdl_core.runs.runner import prepare, run
from dpdl_core.sim.models import build_model


def reference_round(module, X, V, xb, yb, W, C, lr, beta, alpha, noise=None):
    """One DPDL round for every agent, per agent, per neighbour, per sample (eqs 8-22)."""
    N = len(X)

    def clipped_mean(flat, x, y):
        m = copy.deepcopy(module)
        torch.nn.utils.vector_to_parameters(flat.clone(), m.parameters())
        for p in m.parameters():
            p.requires_grad_(True)
        total = torch.zeros_like(flat)
        for b in range(len(y)):
            m.zero_grad()
            F.cross_entropy(m(x[b : b + 1]), y[b : b + 1]).backward()
            g = torch.cat([p.grad.reshape(-1) for p in m.parameters()])
            total += g * min(1.0, C / g.norm().item())
        return total, len(y)

    v_t, x_t = [], []
    for i in range(N):
        s_ii, B = clipped_mean(X[i], xb[i], yb[i])
        g_hat_ii = s_ii / B
        g_i = torch.zeros_like(X[i])
        for j in range(N):
            if W[i, j] <= 0:
                continue
            s_ij, _ = clipped_mean(X[i], xb[j], yb[j])  # computed by j on its data
            z = noise[(i, j)] if noise is not None else 0.0
            g_dd = (s_ij + z) / B
            S = torch.dot(g_dd, g_hat_ii) / (g_dd.norm() * g_hat_ii.norm())
            Cij = 1.0 / (1.0 + math.exp(S.item()))
            g_i += g_dd / (math.sqrt(W[i, j]) * N) + alpha * W[i, j] * Cij * g_hat_ii
        v = beta * V[i] + g_i
        v_t.append(v)
        x_t.append(X[i] - lr * v)
    V_new = torch.stack([sum(W[i, j] * v_t[j] for j in range(N)) for i in range(N)])
    X_new = torch.stack([sum(W[i, j] * x_t[j] for j in range(N)) for i in range(N)])
    return X_new, V_new


@pytest.mark.parametrize("topology, model", [("bipartite", "lenet"), ("ring", "logreg")])
def test_one_round_matches_reference_without_noise(topology, model):
    cfg = ExperimentConfig(
        model=model, topology=topology, n_agents=5 if topology == "ring" else 4, batch_size=6,
        epsilon=None, train_samples=600, rounds=2, momentum=0.7, lr=0.05, clip=1.0,
    )
    prep = prepare(cfg)
    alg = prep.algorithm
    state = alg.init_state(prep.engine.initial_params(cfg.n_agents))
    # Two rounds: the second starts from distinct models and non-zero momentum.
    X, V = state["x"].clone(), state["v"].clone()
    module = build_model(cfg.model, cfg.dataset)
    W = prep.ctx.topology.W
    alpha = 2.0 if topology == "ring" else 1.5
    for _ in range(2):
        xb, yb = prep.sample_batches()
        alg.step(state, xb, yb)
        X, V = reference_round(module, X, V, xb, yb, W, cfg.clip, cfg.lr, cfg.momentum, alpha)
        torch.testing.assert_close(state["x"], X, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(state["v"], V, rtol=1e-5, atol=1e-5)


def test_one_round_matches_reference_with_noise():
    """With σ > 0, the same noise draws fed to the reference give the same round."""
    cfg = ExperimentConfig(n_agents=4, batch_size=4, train_samples=400, sigma_rule="fixed", sigma=0.8, clip=1.0)
    prep = prepare(cfg)
    alg, ctx = prep.algorithm, prep.ctx
    state = alg.init_state(prep.engine.initial_params(4))
    X0, V0 = state["x"].clone(), state["v"].clone()
    xb, yb = prep.sample_batches()
    g_state = ctx.noise_generator.get_state()
    alg.step(state, xb, yb)
    ctx.noise_generator.set_state(g_state)
    Z = ctx.noise(ctx.edge_j, prep.engine.P)  # the draws the step used, in edge order
    noise = {(int(i), int(j)): Z[e] for e, (i, j) in enumerate(zip(ctx.edge_i, ctx.edge_j))}
    assert Z.std().item() == pytest.approx(0.8 * 1.0, rel=0.05)
    X, V = reference_round(build_model("lenet"), X0, V0, xb, yb, ctx.topology.W, 1.0, cfg.lr, cfg.momentum, 1.5, noise)
    torch.testing.assert_close(state["x"], X, rtol=1e-5, atol=1e-5)


def test_authors_code_options_run_and_differ():
    base = dict(n_agents=4, batch_size=8, train_samples=400, epsilon=None, rounds=1)
    outs = {}
    for name, algo in {
        "paper": {},
        "microbatch": {"clip_mode": "microbatch", "n_microbatches": 4},
        "per_tensor": {"cosine": "per_tensor"},
        "wd": {"weight_decay": 0.1},
    }.items():
        prep = prepare(ExperimentConfig(**base, algo=algo))
        state = prep.algorithm.init_state(prep.engine.initial_params(4))
        prep.algorithm.step(state, *prep.sample_batches())
        outs[name] = state["x"]
    for name in ("microbatch", "per_tensor", "wd"):
        assert not torch.allclose(outs[name], outs["paper"]), name
    with pytest.raises(ValueError, match="divisible"):
        prepare(ExperimentConfig(**{**base, "batch_size": 10}, algo={"clip_mode": "microbatch"}))


def test_determinism(store, tmp_path):
    from dpdl_core.runs.results import ResultStore

    cfg = ExperimentConfig(n_agents=4, batch_size=16, train_samples=800, rounds=4, eval_every=2, eval_samples=200,
                           epsilon=1.0)
    a = run(cfg, store=store)
    b = run(cfg, store=ResultStore(tmp_path / "again"))
    assert not a.cached and not b.cached
    assert a.history.equals(b.history)


def test_thirty_rounds_lower_the_training_loss(store):
    cfg = ExperimentConfig(n_agents=10, batch_size=64, rounds=30, eval_every=30, eval_samples=1000, epsilon=None,
                           lr=0.05)
    res = run(cfg, store=store)
    curve = res.curves()["train_loss_mean"]
    assert np.isfinite(curve).all()
    assert curve.iloc[-5:].mean() < curve.iloc[:5].mean() - 0.1
    assert res.meta["dataset_label"] == "MNIST subset, 17,435 train images"


class _Messages:
    """A tap keeping the cross-gradient messages of a round."""

    def observe(self, ctx, channel, messages, models, owners):
        if channel == "CG":
            self.cg = messages.clone()


def test_microbatch_messages_match_the_authors_mechanism():
    """clip_mode=microbatch: M micro-batch mean gradients clipped as clip_grad_norm_ does,
    averaged, plus N(0, σ²C²)/B — the noise divided by the batch size, not by M."""
    from dpdl_core.sim.loop import training_rounds

    B, M, C, sigma = 8, 4, 1.0, 0.8
    cfg = ExperimentConfig(n_agents=4, batch_size=B, train_samples=400, sigma_rule="fixed", sigma=sigma, clip=C,
                           algo={"clip_mode": "microbatch", "n_microbatches": M})
    prep = prepare(cfg)
    ctx = prep.ctx
    state = prep.algorithm.init_state(prep.engine.initial_params(4))
    X0 = state["x"].clone()
    batch_state, noise_state = prep.rngs.batches.get_state(), ctx.noise_generator.get_state()
    tap = _Messages()
    for _ in training_rounds(prep, state, 1, 1, taps=[tap]):
        pass
    prep.rngs.batches.set_state(batch_state)
    xb, yb = prep.sample_batches()
    ctx.noise_generator.set_state(noise_state)
    Z = torch.randn((len(ctx.edge_i), prep.engine.P), generator=ctx.noise_generator) * sigma * C

    module = build_model("lenet")
    expected = []
    for e, (i, j) in enumerate(zip(ctx.edge_i.tolist(), ctx.edge_j.tolist())):
        if i == j:
            continue
        total = torch.zeros(prep.engine.P)
        for m in range(M):
            net = copy.deepcopy(module)
            torch.nn.utils.vector_to_parameters(X0[i].clone(), net.parameters())
            sl = slice(m * B // M, (m + 1) * B // M)
            F.cross_entropy(net(xb[j][sl]), yb[j][sl]).backward()
            torch.nn.utils.clip_grad_norm_(net.parameters(), C)
            total += torch.cat([p.grad.reshape(-1) for p in net.parameters()])
        expected.append(total / M + Z[e] / B)
    torch.testing.assert_close(tap.cg, torch.stack(expected), rtol=1e-4, atol=1e-5)
    # The noise in the messages has std σC/B per coordinate (B/M times less than σC/M).
    cross = ctx.edge_i != ctx.edge_j
    clean = torch.stack(expected) - Z[cross] / B
    assert (tap.cg - clean).std().item() == pytest.approx(sigma * C / B, rel=0.05)


def test_authors_variant_is_one_switch():
    from dpdl_core.papers.dpdl import preset
    from dpdl_core.runs.config import ConfigError

    c = preset("mnist", "ring", variant="authors", n_agents=20)
    assert (c.model, c.batch_size, c.momentum, c.lr_decay, c.lr_decay_every, c.sigma_rule) == (
        "dpdl_lenet_authors", 144, 0.9, 0.995, 30, "authors_code")
    assert c.algo == {"alpha": 1.5, "clip_mode": "microbatch", "n_microbatches": 4, "cosine": "per_tensor",
                      "weight_decay": 5e-4}
    assert preset("cifar10", variant="authors").model == "dpdl_cnn_authors_dropout"
    # the code's command-line defaults --lr 0.1 --ct 1, on both datasets; init stays an option
    for dataset in ("mnist", "cifar10"):
        a = preset(dataset, variant="authors")
        assert (a.lr, a.clip, a.init) == (0.1, 1.0, "shared")
    assert preset("mnist", variant="authors", init="per_agent").init == "per_agent"
    assert preset("mnist", variant="authors", algorithm="dp_dpsgd").algo == {}  # DPDL's options only
    with pytest.raises(ConfigError, match="allowed values"):
        preset("mnist", variant="released")


def test_step_decay_of_the_learning_rate():
    cfg = ExperimentConfig(n_agents=3, batch_size=4, train_samples=120, epsilon=None, lr=0.1, lr_decay=0.5,
                           lr_decay_every=2)
    ctx = prepare(cfg).ctx
    lrs = []
    for t in range(1, 6):
        ctx.begin_round(t)
        lrs.append(ctx.lr)
    assert lrs == pytest.approx([0.1, 0.1, 0.05, 0.05, 0.025])


def test_per_agent_init_gives_each_agent_its_own_seeded_model():
    from dpdl_core.runs.runner import prepare

    cfg = ExperimentConfig(n_agents=4, rounds=1, batch_size=8, train_samples=200, eval_samples=50, init="per_agent")
    X = prepare(cfg).initial_models()
    assert X.shape[0] == 4 and all(not torch.equal(X[0], X[i]) for i in range(1, 4))
    assert torch.equal(X, prepare(cfg).initial_models())  # seeded: the same run is the same
    other = prepare(cfg.replace(seed=1)).initial_models()
    assert not torch.equal(X, other)
    shared = prepare(cfg.replace(init="shared")).initial_models()
    assert all(torch.equal(shared[0], shared[i]) for i in range(4))
    # shared init is the default and leaves the hash of runs stored before the field existed
    assert "init" not in json.loads(ExperimentConfig(n_agents=4).canonical_json())["config"]
    assert json.loads(cfg.canonical_json())["config"]["init"] == "per_agent"


def test_random_sinkhorn_mixing_is_each_agents_row_of_its_own_doubly_stochastic_matrix():
    import networkx as nx

    from dpdl_core.sim.topology import _sinkhorn, make_topology, random_sinkhorn_rows

    topo = make_topology("bipartite", 10, mixing="random_sinkhorn", seed=3)
    W = topo.W
    # rows sum to 1 to the Sinkhorn stopping rule (np.allclose: rtol 1e-5), as in that code
    np.testing.assert_allclose(W.sum(axis=1), 1, rtol=0, atol=2e-5)
    assert not np.allclose(W.sum(axis=0), 1, atol=1e-3)  # gossip does not preserve the average
    assert not np.allclose(W, W.T)
    assert ((W > 0) == (make_topology("bipartite", 10).W > 0)).all()  # the graph's support
    np.testing.assert_array_equal(W, make_topology("bipartite", 10, mixing="random_sinkhorn", seed=3).W)
    assert not np.array_equal(W, make_topology("bipartite", 10, mixing="random_sinkhorn", seed=4).W)
    # row 2 is row 2 of agent 2's own balanced matrix (its generator: (seed, 2))
    g = nx.complete_bipartite_graph(range(0, 10, 2), range(1, 10, 2))
    mask = (nx.to_numpy_array(g, nodelist=range(10)) > 0) | np.eye(10, dtype=bool)
    own = _sinkhorn(np.random.default_rng([3, 2]).random((10, 10)) * mask, mask, 1e-2, 1000)
    np.testing.assert_allclose(own.sum(axis=0), 1, atol=1e-8)
    np.testing.assert_array_equal(random_sinkhorn_rows(g, 3)[2], own[2])
    # a run with it: the σ of the authors' rule differs by agent, the default hash is untouched
    cfg = ExperimentConfig(n_agents=4, rounds=2, batch_size=8, train_samples=200, eval_samples=50, epsilon=0.5,
                           sigma_rule="authors_code", mixing="random_sinkhorn")
    res = run(cfg, save=False, progress=False)
    assert len(set(np.round(res.meta["sigma"], 12))) > 1 and res.meta["topology"]["mixing"] == "random_sinkhorn"
    assert "mixing" not in json.loads(cfg.replace(mixing="metropolis").canonical_json())["config"]
