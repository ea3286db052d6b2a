"""The four baselines: references, convergence with σ = 0, gossip and QP properties."""
import copy
import functools
import math

import numpy as np
import pytest
import scipy.optimize
import torch
import torch.nn.functional as F

from dpdl_core.runs.config import ExperimentConfig
from dpdl_core.runs.runner import prepare, run
from dpdl_core.sim.algorithms.dp_cga import DPCGA, project_to_cone
from dpdl_core.sim.algorithms.muffliato import chebyshev_gamma, chebyshev_gossip, default_gossip_steps
from dpdl_core.sim.data import DATASETS, Dataset
from dpdl_core.sim.models import build_model
from dpdl_core.sim.topology import make_topology

ALL = ["dpdl", "dp_dpsgd", "muffliato", "dp_netfleet", "dp_cga"]


# ---------------------------------------------------------------- slow references
def _module_at(module, flat):
    m = copy.deepcopy(module)
    torch.nn.utils.vector_to_parameters(flat.clone(), m.parameters())
    for p in m.parameters():
        p.requires_grad_(True)
    return m


def _grad(m, x, y):
    m.zero_grad()
    F.cross_entropy(m(x), y).backward()
    return torch.cat([p.grad.reshape(-1) for p in m.parameters()])


def clipped_mean(module, flat, x, y, C):
    m = _module_at(module, flat)
    total = torch.zeros_like(flat)
    for b in range(len(y)):
        g = _grad(m, x[b : b + 1], y[b : b + 1])
        total += g * min(1.0, C / g.norm().item())
    return total / len(y)


def mix(W, vecs):
    return torch.stack([sum(W[i, j] * vecs[j] for j in range(len(vecs))) for i in range(len(vecs))])


def ref_dp_dpsgd(module, state, xb, yb, W, C, lr, beta, **_):
    g = [clipped_mean(module, state["x"][i], xb[i], yb[i], C) for i in range(len(W))]
    v = [beta * state["v"][i] + g[i] for i in range(len(W))]
    return {"x": mix(W, state["x"]) - lr * torch.stack(v), "v": torch.stack(v)}


def ref_muffliato(module, state, xb, yb, W, C, lr, topo, **_):
    half = [state["x"][i] - lr * clipped_mean(module, state["x"][i], xb[i], yb[i], C) for i in range(len(W))]
    lam = 1 - np.sort(np.linalg.eigvalsh(W))[::-1][1]
    gamma = 2 * (1 - math.sqrt(lam * (1 - lam / 4))) / (1 - lam / 2) ** 2
    K = max(1, math.ceil(math.log(len(W)) / math.sqrt(lam)))
    prev, cur = torch.stack(half), torch.stack(half)
    for _ in range(K):
        prev, cur = cur, gamma * mix(W, cur) + (1 - gamma) * prev
    return {"x": cur}


def ref_dp_netfleet(module, state, xb, yb, W, C, lr, **_):
    N = len(W)
    x_loc = []
    for i in range(N):  # Q = 2 local steps
        x1 = state["x"][i] - lr * state["y"][i]
        h1 = clipped_mean(module, x1, xb[i], yb[i], C)
        d1 = state["y"][i] + h1 - state["g"][i]
        x_loc.append(x1 - lr * d1)
    x = mix(W, x_loc)
    g_new = torch.stack([clipped_mean(module, x[i], xb[i], yb[i], C) for i in range(N)])
    return {"x": x, "y": mix(W, state["y"]) + g_new - state["g"], "g": g_new}


def _qp_reference(M, g, margin, eps):
    """The same QP by L-BFGS-B with bounds (an independent solver)."""
    Q = M @ M.T + eps * np.eye(len(M))
    c = M @ g
    res = scipy.optimize.minimize(lambda v: 0.5 * v @ Q @ v + c @ v, np.full(len(M), margin + 1.0),
                                  jac=lambda v: Q @ v + c, bounds=[(margin, None)] * len(M), method="L-BFGS-B",
                                  options={"ftol": 1e-15, "gtol": 1e-12, "maxiter": 10000})
    return M.T @ res.x + g


def ref_dp_cga(module, state, xb, yb, W, C, lr, beta, layout, clip="per_sample", **_):
    N = len(W)
    msg = {}
    for i in range(N):
        for j in range(N):
            if W[i, j] > 0:
                if clip == "per_sample":
                    m = clipped_mean(module, state["x"][i], xb[j], yb[j], C)
                else:
                    g = _grad(_module_at(module, state["x"][i]), xb[j], yb[j])
                    m = g * min(1.0, C / g.norm().item())
                msg[(i, j)] = m.double().numpy()
    out = []
    for i in range(N):
        own = msg[(i, i)]
        others = np.stack([msg[(i, j)] for j in range(N) if j != i and W[i, j] > 0])
        parts = [_qp_reference(others[:, o : o + n], own[o : o + n], 0.5, 1e-3)
                 for o, n in zip(layout.offsets, layout.numels)]
        out.append(torch.as_tensor(np.concatenate(parts), dtype=torch.float32))
    g_t = torch.stack(out)
    b = beta * state["b"] + g_t
    return {"x": mix(W, state["x"]) - lr * (g_t + beta * b), "b": b}


REFERENCES = {"dp_dpsgd": ref_dp_dpsgd, "muffliato": ref_muffliato, "dp_netfleet": ref_dp_netfleet,
              "dp_cga": ref_dp_cga, "dp_cga/batch": functools.partial(ref_dp_cga, clip="batch")}


@pytest.mark.parametrize("algorithm", list(REFERENCES))
def test_two_rounds_match_slow_reference(algorithm):
    name, _, clip = algorithm.partition("/")
    cfg = ExperimentConfig(algorithm=name, n_agents=4, topology="ring", batch_size=5, train_samples=400,
                           epsilon=None, lr=0.1, momentum=0.6, clip=1.0, algo={"clip": clip} if clip else {})
    prep = prepare(cfg)
    alg, ctx = prep.algorithm, prep.ctx
    state = alg.init_state(prep.engine.initial_params(4))
    module = build_model(cfg.model, cfg.dataset)
    ref = {k: v.clone() for k, v in state.items()}
    for _ in range(2):
        xb, yb = prep.sample_batches()
        alg.step(state, xb, yb)
        ref = REFERENCES[algorithm](module, ref, xb, yb, ctx.topology.W, C=cfg.clip, lr=cfg.lr, beta=cfg.momentum,
                                    topo=ctx.topology, layout=prep.engine.layout)
        for k in ref:
            torch.testing.assert_close(state[k], ref[k], rtol=1e-4, atol=2e-5, msg=f"{algorithm}: {k}")


# ---------------------------------------------------------------- convex problem, σ = 0
def _synthetic(n=480, d_informative=5, seed=0) -> Dataset:
    """Logistic regression data: 5 informative pixels, noisy labels (non-separable)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.zeros(n, 1, 28, 28)
    feats = torch.randn(n, d_informative, generator=g)
    x.view(n, -1)[:, :d_informative] = feats
    teacher = torch.randn(d_informative, 10, generator=g)
    y = torch.multinomial(torch.softmax(0.5 * feats @ teacher, dim=1), 1, generator=g).squeeze(1)
    meta = {"name": "mnist", "subset": True, "n_train": n, "n_test": n, "note": "synthetic"}
    return Dataset(DATASETS["mnist"], x, y, x.clone(), y.clone(), meta)


def _centralised_optimum(data):
    model = build_model("logreg", "mnist", seed=0)
    opt = torch.optim.LBFGS(model.parameters(), lr=1, max_iter=500, tolerance_grad=1e-10, tolerance_change=1e-14,
                            line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = F.cross_entropy(model(data.x_train), data.y_train)
        loss.backward()
        return loss

    opt.step(closure)
    return closure().item()


# Stated tolerances on f(x̄) − f* after 400 rounds (measured gap in brackets): gradient
# tracking (DP-NETFLEET, ~0) and MUFFLIATO's near-exact averaging (2e-5) are exact up to
# convergence; DPDL (5e-6) is slightly biased by its unequal similarity weights C^ij;
# DP-DPSGD keeps the constant-step heterogeneity bias of D-PSGD (2e-4); DP-CGA's dual
# margin (v ≥ 0.5) biases its direction (1.1e-3; the bias depends on the data, which is
# why the data are drawn from a seeded generator only).
TOLERANCE = {"dp_netfleet": 1e-4, "muffliato": 1e-4, "dpdl": 2e-4, "dp_dpsgd": 2e-3, "dp_cga": 5e-3}


@pytest.mark.parametrize("algorithm", ALL)
def test_sigma_zero_reaches_centralised_optimum(algorithm, store):
    data = _synthetic()
    f_star = _centralised_optimum(data)
    cfg = ExperimentConfig(algorithm=algorithm, model="logreg", n_agents=4, topology="bipartite", alpha_d=0.5,
                           batch_size=120, epsilon=None, clip=1e6, lr=0.3, momentum=0.5, rounds=400)
    prep = prepare(cfg, data=data)
    state = prep.algorithm.init_state(prep.engine.initial_params(4))
    for _ in range(cfg.rounds):
        prep.algorithm.step(state, *prep.sample_batches())
    xbar = prep.algorithm.models(state).mean(0, keepdim=True)
    loss, _ = prep.engine.evaluate(xbar, data.x_train, data.y_train)
    gap = loss.item() - f_star
    assert -1e-4 < gap < TOLERANCE[algorithm], f"{algorithm}: f(x̄) − f* = {gap:.2e}"


# ---------------------------------------------------------------- MUFFLIATO gossip
def test_chebyshev_gossip_keeps_mean_and_contracts():
    topo = make_topology("ring", 10)
    W = torch.as_tensor(topo.W, dtype=torch.float64)
    gamma = chebyshev_gamma(topo.spectral_gap)
    X = torch.randn(10, 7, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    mean = X.mean(0)
    e0 = (X - mean).norm()
    for K in range(1, 16):
        out = chebyshev_gossip(lambda Z: W @ Z, X, K, gamma)
        torch.testing.assert_close(out.mean(0), mean, rtol=0, atol=1e-12)
        # Second-order stationary iteration with optimal γ: ‖e_K‖ ≤ (K+1)·(γ−1)^{K/2}·‖e_0‖.
        assert (out - mean).norm() <= (K + 1) * (gamma - 1) ** (K / 2) * e0 + 1e-12
    plain = torch.linalg.matrix_power(W, 15) @ X
    assert (chebyshev_gossip(lambda Z: W @ Z, X, 15, gamma) - mean).norm() < 0.5 * (plain - mean).norm()
    # The authors' code starts from x^{-1} = 0, which moves the mean; ours does not.
    assert not torch.allclose(chebyshev_gossip(lambda Z: W @ Z, X, 3, gamma, start="zero").mean(0), mean)


def test_default_gossip_steps():
    gap = make_topology("ring", 10).spectral_gap
    assert default_gossip_steps(10, gap) == math.ceil(math.log(10) / math.sqrt(0.12732200375))
    assert default_gossip_steps(10, 1.0) == 3


# ---------------------------------------------------------------- DP-CGA projection
@pytest.mark.parametrize("seed", range(5))
def test_cone_projection_satisfies_kkt(seed):
    rng = np.random.default_rng(seed)
    M, g = rng.normal(size=(6, 40)), rng.normal(size=40)
    margin, eps = 0.5, 1e-3
    out, v = project_to_cone(M, g, margin, eps)
    Q = M @ M.T + eps * np.eye(6)
    r = Q @ v + M @ g  # gradient of the QP objective = multipliers of v ≥ margin
    assert np.all(v >= margin - 1e-10)
    active = v <= margin + 1e-8
    assert np.all(r[active] >= -1e-7) and np.allclose(r[~active], 0, atol=1e-7)
    np.testing.assert_allclose(out, M.T @ v + g)
    np.testing.assert_allclose(out, _qp_reference(M, g, margin, eps), atol=1e-5)


@pytest.mark.parametrize("case", ["zero", "identical", "zero_self"])
def test_cone_projection_degenerate_inputs(case):
    rng = np.random.default_rng(0)
    if case == "zero":
        M, g = np.zeros((4, 10)), np.zeros(10)
    elif case == "identical":
        row = rng.normal(size=10)
        M, g = np.tile(row, (4, 1)), rng.normal(size=10)
    else:
        M, g = rng.normal(size=(4, 10)), np.zeros(10)
    out, v = project_to_cone(M, g, 0.5, 1e-3)
    assert np.all(np.isfinite(out)) and np.all(np.isfinite(v))


def test_cga_falls_back_to_average_and_counts(monkeypatch):
    import dpdl_core.sim.algorithms.dp_cga as cga

    def broken(*a, **k):
        raise RuntimeError("solver failed")

    monkeypatch.setattr(cga.scipy.optimize, "nnls", broken)
    prep = prepare(ExperimentConfig(algorithm="dp_cga", n_agents=4, batch_size=4, train_samples=200, epsilon=None))
    state = prep.algorithm.init_state(prep.engine.initial_params(4))
    with pytest.warns(RuntimeWarning, match="QP failed"):
        prep.algorithm.step(state, *prep.sample_batches())
    assert prep.algorithm.diagnostics()["qp_fallbacks"] == prep.algorithm.diagnostics()["qp_solves"] > 0
    assert torch.isfinite(state["x"]).all()
    assert isinstance(prep.algorithm, DPCGA)


# ---------------------------------------------------------------- MNIST smoke
@pytest.mark.parametrize("algorithm", ALL)
def test_thirty_private_rounds_on_mnist(algorithm, store):
    cfg = ExperimentConfig(algorithm=algorithm, n_agents=6, batch_size=32, rounds=30, eval_every=30, eval_samples=500,
                           epsilon=1.0, lr=0.05, train_samples=6000)
    res = run(cfg, store=store)
    curve = res.curves()["train_loss_mean"]
    assert np.isfinite(curve).all() and not res.meta["diverged"]
    assert curve.iloc[-5:].mean() < curve.iloc[:5].mean(), f"{algorithm} did not lower the loss"
    assert res.meta["epsilon_rdp_max"] <= 1.0 + 1e-9
