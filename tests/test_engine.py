"""Oracle tests: the engine's batched primitives against slow per-sample loops."""
import copy

import pytest
import torch
import torch.nn.functional as F

from dpdl_core.sim.engine import Engine, consensus_distance, gaussian_noise, gossip
from dpdl_core.sim.models import build_model


def slow_clipped_sum(module, flat, x, y, clip, unit=1):
    """Per-unit loss.backward() on a module holding ``flat``; clip; sum."""
    m = copy.deepcopy(module)
    torch.nn.utils.vector_to_parameters(flat.clone(), m.parameters())
    for p in m.parameters():
        p.requires_grad_(True)
    total = torch.zeros_like(flat)
    for s in range(0, len(y), unit):
        m.zero_grad()
        F.cross_entropy(m(x[s : s + unit]), y[s : s + unit]).backward()
        g = torch.cat([p.grad.reshape(-1) for p in m.parameters()])
        total += g * min(1.0, clip / g.norm().item())
    return total


@pytest.mark.parametrize("strategy", ["auto", "per_model"])
@pytest.mark.parametrize("model, dataset", [("lenet", "mnist"), ("dpdl_cnn", "cifar10"), ("logreg", "mnist"),
                                            ("pdsl_cifar", "cifar10"), ("leasgd_cnn", "cifar10")])
@pytest.mark.parametrize("unit", [1, 4])
def test_clipped_sums_match_per_sample_loop(mnist, cifar, model, dataset, unit, strategy):
    """Both kernels (vmap's, and the per-model one of dpdl_core.sim.per_sample: shared first-layer
    patches, padding, two linear layers, micro-batch units) against a loop over the units."""
    import dpdl_core.papers  # noqa: F401  (registers the papers' models)

    ds = mnist if dataset == "mnist" else cifar
    torch.manual_seed(0)
    module = build_model(model, dataset, seed=0)
    eng = Engine(module, memory_mb=0.02, strategy=strategy)  # tiny budget: several chunks per batch
    A, B = 3, 8
    data_index = torch.tensor([2, 0, 0, 1, 2, 2, 0])  # unequal groups, unsorted
    E = len(data_index)
    X = eng.initial_params(E) + 0.05 * torch.randn(E, eng.P)  # distinct models
    idx = torch.randint(0, len(ds.y_train), (A, B))
    xb, yb = ds.x_train[idx], ds.y_train[idx]
    clip = 0.5  # small enough that most samples are clipped, large enough that some are not
    sums, losses = eng.clipped_sums(X, data_index, xb, yb, clip, unit=unit)
    for e in range(E):
        a = data_index[e]
        ref = slow_clipped_sum(module, X[e], xb[a], yb[a], clip, unit)
        torch.testing.assert_close(sums[e], ref, rtol=1e-4, atol=1e-5)
        m = copy.deepcopy(module)
        torch.nn.utils.vector_to_parameters(X[e].clone(), m.parameters())
        with torch.no_grad():
            first = F.cross_entropy(m(xb[a, :unit]), yb[a, :unit])
        torch.testing.assert_close(losses[e, 0], first, rtol=1e-5, atol=1e-6)
    assert losses.shape == (E, B // unit)


@pytest.mark.parametrize("model, dataset", [("lenet", "mnist"), ("dpdl_cnn", "cifar10")])
@pytest.mark.parametrize("unit", [1, 4])
def test_strategies_agree(mnist, cifar, model, dataset, unit):
    """shared_batch (models vmapped on a shared batch) and per_edge (vmap(grad) over one
    model's batch) give the same clipped sums and losses to float rounding."""
    ds = mnist if dataset == "mnist" else cifar
    module = build_model(model, dataset, seed=0)
    engines = {s: Engine(module, strategy=s, memory_mb=0.5) for s in ("shared_batch", "per_edge")}
    eng = engines["shared_batch"]
    A, B = 3, 12
    data_index = torch.tensor([1, 0, 2, 0, 1, 1, 0])  # 3, 3 and 1 models per batch, unsorted
    g = torch.Generator().manual_seed(1)
    X = eng.initial_params(len(data_index)) + 0.05 * torch.randn(len(data_index), eng.P, generator=g)
    idx = torch.randint(0, len(ds.y_train), (A, B), generator=g)
    xb, yb = ds.x_train[idx], ds.y_train[idx]
    out = {s: e.clipped_sums(X, data_index, xb, yb, clip=0.5, unit=unit) for s, e in engines.items()}
    torch.testing.assert_close(out["per_edge"][0], out["shared_batch"][0], rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(out["per_edge"][1], out["shared_batch"][1], rtol=1e-5, atol=1e-6)
    assert engines["per_edge"].choose_strategy(B, 3) == "per_edge"
    assert engines["shared_batch"].choose_strategy(216, 1) == "shared_batch"


def test_auto_strategy_is_a_rule_of_the_shapes():
    """auto is deterministic and keeps shared_batch wherever the pinned histories were
    made (B = 16 on LeNet-MNIST and the CIFAR-10 CNN, any number of models per batch)."""
    for model, dataset in [("lenet", "mnist"), ("dpdl_cnn", "cifar10"), ("logreg", "mnist")]:
        eng = Engine(build_model(model, dataset, seed=0))
        for k in (1, 3, 4, 6, 20):
            assert eng.choose_strategy(16, k) == "shared_batch"
    with pytest.raises(ValueError, match="strategy"):
        Engine(build_model("logreg", seed=0), strategy="fastest")


def test_clipping_bounds_each_unit(mnist):
    eng = Engine(build_model("lenet", seed=1))
    X = eng.initial_params(2)
    xb, yb = mnist.x_train[:16].view(2, 8, 1, 28, 28), mnist.y_train[:16].view(2, 8)
    sums, _ = eng.clipped_sums(X, torch.tensor([0, 1]), xb, yb, clip=1e-3)
    # With a tiny C every sample is clipped: the sum's norm is at most B·C.
    assert (sums.norm(dim=1) <= 8 * 1e-3 + 1e-7).all()


@pytest.mark.parametrize("batch_grad_strategy", Engine.BATCH_GRAD_STRATEGIES)
@pytest.mark.parametrize("model, dataset", [("lenet", "mnist"), ("pdsl_cifar", "cifar"), ("leasgd_mlp", "mnist")])
def test_batch_gradients_match_autograd(request, model, dataset, batch_grad_strategy):
    """Both strategies give each (model, batch) pair's mean-loss gradient as autograd on the
    module itself does (the per-model one channels-last), pairs out of batch order."""
    import dpdl_core.papers  # noqa: F401  (registers the papers' models)

    data = request.getfixturevalue(dataset)
    module = build_model(model, "cifar10" if dataset == "cifar" else dataset, seed=2)
    eng = Engine(module, batch_grad_strategy=batch_grad_strategy)
    X = eng.initial_params(4) + 0.01 * torch.randn(4, eng.P, generator=torch.Generator().manual_seed(0))
    data_index = torch.tensor([1, 0, 1, 1])
    xb, yb = data.x_train[:16].view(2, 8, *data.x_train.shape[1:]), data.y_train[:16].view(2, 8)
    g, loss = eng.batch_gradients(X, data_index, xb, yb)
    for e in range(4):
        a = data_index[e]
        m = copy.deepcopy(module)
        torch.nn.utils.vector_to_parameters(X[e].clone(), m.parameters())
        for p in m.parameters():
            p.requires_grad_(True)
        ref_loss = F.cross_entropy(m(xb[a]), yb[a])
        ref_loss.backward()
        torch.testing.assert_close(g[e], torch.cat([p.grad.reshape(-1) for p in m.parameters()]), rtol=1e-4, atol=1e-6)
        torch.testing.assert_close(loss[e], ref_loss.detach())


@pytest.mark.parametrize("eval_strategy", Engine.EVAL_STRATEGIES)
@pytest.mark.parametrize("model, dataset", [("lenet", "mnist"), ("leasgd_mlp", "mnist"), ("leasgd_cnn", "cifar")])
def test_evaluate_matches_module(request, model, dataset, eval_strategy):
    """Both evaluation strategies give each model's loss and accuracy as the module itself
    does (the per-model one in channels-last layout, on chunks that do not divide the set)."""
    import dpdl_core.papers  # noqa: F401  (registers the papers' models)

    data = request.getfixturevalue(dataset)
    x, y = data.x_test[:300], data.y_test[:300]
    module = build_model(model, "cifar10" if dataset == "cifar" else dataset, seed=3)
    eng = Engine(module, eval_strategy=eval_strategy)
    X = eng.initial_params(3)
    X[1] += 0.1
    X[2] -= 0.05
    loss, acc = eng.evaluate(X, x, y, batch=128)
    for a in range(3):
        m = copy.deepcopy(module)
        torch.nn.utils.vector_to_parameters(X[a].clone(), m.parameters())
        with torch.no_grad():
            out = m(x)
        torch.testing.assert_close(loss[a], F.cross_entropy(out, y), rtol=1e-5, atol=1e-6)
        assert acc[a].item() == pytest.approx((out.argmax(1) == y).float().mean().item())


def test_per_model_kernel_refuses_a_model_it_cannot_run():
    """A model whose parametrised layers are not plain Conv2d / Linear gets an error that
    names the layer and the way out, not a wrong gradient."""
    strided = torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3, stride=2), torch.nn.Flatten(),
                                  torch.nn.Linear(4 * 13 * 13, 10))
    with pytest.raises(ValueError, match=r"Conv2d.*not a plain convolution.*per_sample_strategy: vmap"):
        Engine(strided, strategy="per_model")
    normed = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.LayerNorm(784), torch.nn.Linear(784, 10))
    with pytest.raises(ValueError, match=r"LayerNorm.*has parameters"):
        Engine(normed, strategy="per_model")


def test_unknown_eval_strategy_names_the_allowed_values():
    with pytest.raises(ValueError, match=r"eval_strategy='fast'.*\['vmap', 'per_model'\]"):
        Engine(build_model("lenet", seed=0), eval_strategy="fast")
    with pytest.raises(ValueError, match=r"batch_grad_strategy='fast'.*\['vmap', 'per_model'\]"):
        Engine(build_model("lenet", seed=0), batch_grad_strategy="fast")
    with pytest.raises(ValueError, match=r"strategy='fast'.*\['vmap', 'per_model'\]"):
        Engine(build_model("lenet", seed=0)).evaluate(torch.zeros(1, 5142), torch.zeros(1, 1, 28, 28),
                                                      torch.zeros(1, dtype=torch.long), strategy="fast")


def test_noise_statistics():
    """Message noise z/B: mean 0 and variance (σC/B)² per coordinate (fixed seed)."""
    sigma, C, B = 1.7, 2.0, 216
    g = torch.Generator().manual_seed(123)
    z = gaussian_noise((4, 250_000), torch.full((4,), sigma * C), g) / B
    n = z.numel()
    var = (sigma * C / B) ** 2
    assert abs(z.mean().item()) < 5 * (var / n) ** 0.5
    # The sample variance has std var·√(2/n); allow 5 of those.
    assert abs(z.var().item() - var) < 5 * var * (2 / n) ** 0.5
    # Rows with different σ get different scales.
    z2 = gaussian_noise((2, 100_000), torch.tensor([1.0, 3.0]), g)
    assert z2[1].std() / z2[0].std() == pytest.approx(3.0, rel=0.02)


def test_noise_is_drawn_on_the_generators_device():
    """A run's generators live on the CPU whatever its device, and the noise they draw is
    moved to where σ lives, so a seed gives a GPU run the CPU run's noise (tests/test_gpu.py
    checks whole runs). The meta device stands in for a GPU: a draw made there would leave
    the CPU generator's stream where it was."""
    from dpdl_core.sim.seeding import make_rngs

    rngs = make_rngs(7)
    assert {g.device.type for g in (rngs.batches, rngs.noise, rngs.algorithm)} == {"cpu"}
    std = torch.tensor([1.0, 2.0])
    g_cpu, g_moved = torch.Generator().manual_seed(1), torch.Generator().manual_seed(1)
    cpu = gaussian_noise((2, 5), std, g_cpu)
    moved = gaussian_noise((2, 5), std.to("meta"), g_moved)
    assert moved.device.type == "meta" and moved.shape == cpu.shape
    # The CPU generator made the draw (its stream advanced exactly as for the CPU run).
    assert torch.equal(g_moved.get_state(), g_cpu.get_state())


def test_gossip_and_consensus():
    W = torch.tensor([[0.5, 0.5, 0.0], [0.5, 0.25, 0.25], [0.0, 0.25, 0.75]])
    X = torch.randn(3, 4)
    torch.testing.assert_close(gossip(W, X), torch.stack([sum(W[i, j] * X[j] for j in range(3)) for i in range(3)]))
    torch.testing.assert_close(gossip(W, X).mean(0), X.mean(0))  # doubly stochastic keeps the mean
    assert consensus_distance(X.mean(0, keepdim=True).repeat(3, 1)).item() == pytest.approx(0.0, abs=1e-12)


@pytest.mark.slow
def test_compiled_kernel_agrees_with_eager():
    """torch.compile of the shared-batch kernel (Engine(compile=True)) gives the eager
    clipped sums and losses to float rounding; the config flag changes the run's hash only
    when set."""
    from dpdl_core.runs.config import ExperimentConfig

    g = torch.Generator().manual_seed(0)
    eager = Engine(build_model("lenet", "mnist", seed=0))
    compiled = Engine(build_model("lenet", "mnist", seed=0), compile=True)
    X = eager.initial_params(3) + 0.01 * torch.randn(3, eager.P, generator=g)
    xb, yb = torch.randn(2, 8, 1, 28, 28, generator=g), torch.randint(0, 10, (2, 8), generator=g)
    idx = torch.tensor([0, 1, 1])
    (s0, l0), (s1, l1) = eager.clipped_sums(X, idx, xb, yb, 1.0), compiled.clipped_sums(X, idx, xb, yb, 1.0)
    torch.testing.assert_close(s1, s0, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(l1, l0, rtol=1e-5, atol=1e-6)
    base = ExperimentConfig()
    assert base.replace(compile=False).hash == base.hash != base.replace(compile=True).hash


def test_microbatch_kernel_equals_a_per_client_microbatch_loop():
    """The engine's micro-batch clipping (``unit`` = B/4) against the benchmark's per-client
    loop in the DPDL authors' style: one loss.backward() and clip_grad_norm_ per micro-batch."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from bench_engine import _microbatch_loop_sums

    from dpdl_core.papers.dpdl import preset
    from dpdl_core.runs.runner import prepare

    cfg = preset("mnist", "bipartite", n_agents=4, batch_size=32, train_samples=500, model="dpdl_lenet_authors",
                 epsilon=None).replace(sigma_rule="fixed", sigma=1.0, epsilon=None)
    prep = prepare(cfg)
    eng, ctx = prep.engine, prep.ctx
    xb, yb = prep.sample_batches()
    Xe, j = prep.initial_models()[ctx.edge_i], ctx.edge_j
    for clip in (0.05, 100.0):  # clipping active, and inactive
        got = eng.clipped_sums(Xe, j, xb, yb, clip, unit=8)[0]
        torch.testing.assert_close(got, _microbatch_loop_sums(eng.module, Xe, xb[j], yb[j], clip), rtol=1e-4, atol=1e-6)
