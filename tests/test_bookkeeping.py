"""The book-keeping kernel (``per_sample_strategy: bookkeeping``) against two oracles, in float64:
the engine's ``vmap`` kernel and a plain per-sample ``backward()`` loop, for every model of the
four papers, per-sample and micro-batch clipping, with cross-gradients (several models on one
batch); dropout against the loop with the same masks; float32 to a tolerance."""
from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch.func import functional_call

from dpdl_core import papers
from dpdl_core.sim import bookkeeping
from dpdl_core.sim.data import input_shape
from dpdl_core.sim.engine import Engine
from dpdl_core.sim.models import MODELS, build_model

papers.load_all()
# Every model of the four papers (and the core's), with the dataset it is built for.
MODEL_DATASETS = [("lenet", "mnist"), ("dpdl_cnn", "cifar10"), ("logreg", "mnist"), ("dpdl_lenet_authors", "mnist"),
                  ("dpdl_cnn_authors", "cifar10"), ("pdsl_mnist", "mnist"), ("pdsl_cifar", "cifar10"),
                  ("leasgd_mlp", "mnist"), ("leasgd_cnn", "mnist")]
DROPOUT_MODELS = [("dpdl_cnn_authors_dropout", "cifar10")]


@pytest.fixture
def float64():
    """The engine allocates its outputs in the default dtype."""
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(old)


def test_every_registered_model_is_covered():
    """A model added to a paper without a line above fails here."""
    covered = {m for m, _ in MODEL_DATASETS + DROPOUT_MODELS}
    assert {m for m in MODELS if not m.startswith("toy")} <= covered


def _case(name, dataset, k=3, B=8, seed=0):
    torch.manual_seed(seed)
    module = build_model(name, dataset, seed=seed).double()
    shape = input_shape(dataset)
    xb = torch.randn(2, B, *shape, dtype=torch.float64)
    yb = torch.randint(0, 10, (2, B))
    return module, xb, yb


def _loop(module, layout, X, index, xb, yb, clip, unit, masks=None):
    """Σ_u clip(g_u) by one ``backward()`` per unit: the slowest and plainest reference.
    ``masks[e]``: the pair's dropout keep-masks per layer, (B, *features) each."""
    E, U = X.shape[0], yb.shape[1] // unit
    sums, losses = torch.zeros_like(X), torch.zeros(E, U, dtype=X.dtype)
    for e in range(E):
        a = int(index[e])
        for u in range(U):
            params = {n: t.clone().requires_grad_(True) for n, t in layout.unflatten(X[e]).items()}
            h, drop = xb[a, u * unit:(u + 1) * unit], 0
            for i, layer in enumerate(module):
                if isinstance(layer, torch.nn.Dropout):
                    h = h * masks[e][drop][u * unit:(u + 1) * unit]
                    drop += 1
                elif any(True for _ in layer.parameters()):
                    h = functional_call(layer, {p: params[f"{i}.{p}"] for p, _ in layer.named_parameters()}, (h,))
                else:
                    h = layer(h)
            loss = F.cross_entropy(h, yb[a, u * unit:(u + 1) * unit])
            grads = torch.autograd.grad(loss, [params[n] for n in layout.names])
            g = torch.cat([t.reshape(-1) for t in grads])
            sums[e] += g * min(1.0, clip / (float(g.norm()) + 1e-12))
            losses[e, u] = loss.detach()
    return sums, losses


@pytest.mark.parametrize("name,dataset", MODEL_DATASETS)
@pytest.mark.parametrize("unit", [1, 4])
def test_bookkeeping_equals_vmap_and_a_backward_loop_in_float64(name, dataset, unit, float64):
    module, xb, yb = _case(name, dataset)
    vmap = Engine(module, strategy="shared_batch")
    fast = Engine(module, strategy="bookkeeping")
    # Five models on two batches, batch 1 read by three of them (cross-gradients).
    index = torch.tensor([0, 1, 1, 0, 1])
    X = vmap.initial_params(5) + 0.05 * torch.randn(5, vmap.P, dtype=torch.float64)
    for clip in (0.05, 1e9):  # clipping active on every unit; and never
        ref, ref_loss = vmap.clipped_sums(X, index, xb, yb, clip, unit)
        got, got_loss = fast.clipped_sums(X, index, xb, yb, clip, unit)
        assert torch.allclose(got, ref, rtol=0, atol=1e-12 * float(ref.abs().max()))
        assert torch.allclose(got_loss, ref_loss, rtol=0, atol=1e-12)
    loop, loop_loss = _loop(module, vmap.layout, X, index, xb, yb, 0.05, unit)
    got, got_loss = fast.clipped_sums(X, index, xb, yb, 0.05, unit)
    assert torch.allclose(got, loop, rtol=0, atol=1e-12 * float(loop.abs().max()))
    assert torch.allclose(got_loss, loop_loss, rtol=0, atol=1e-12)


def test_clipping_is_active_on_every_sample_at_a_small_threshold(float64):
    """At C = 0.05 each unit's clipped gradient has norm C exactly: the sum of one unit is C long."""
    module, xb, yb = _case("lenet", "mnist", B=1)
    fast = Engine(module, strategy="bookkeeping")
    X = fast.initial_params(2)
    sums, _ = fast.clipped_sums(X, torch.tensor([0, 1]), xb, yb, 0.05)
    assert torch.allclose(sums.norm(dim=1), torch.full((2,), 0.05, dtype=torch.float64), atol=1e-12)


@pytest.mark.parametrize("unit", [1, 4])
def test_dropout_masks_equal_a_backward_loop_with_the_same_masks(unit, float64):
    name, dataset = DROPOUT_MODELS[0]
    module, xb, yb = _case(name, dataset)
    fast = Engine(module, strategy="bookkeeping")
    index = torch.tensor([0, 1, 1])
    X = fast.initial_params(3) + 0.05 * torch.randn(3, fast.P, dtype=torch.float64)
    fast.dropout_generator = torch.Generator().manual_seed(7)
    got, got_loss = fast.clipped_sums(X, index, xb, yb, 0.05, unit)
    # The masks the engine drew: batch by batch in order, (k, B, *features) per Dropout layer.
    gen = torch.Generator().manual_seed(7)
    masks = [None] * 3
    for a in (0, 1):
        rows = (index == a).nonzero().flatten().tolist()
        drawn = bookkeeping.dropout_masks(module, tuple(xb.shape[2:]), len(rows), yb.shape[1], gen)
        for j, e in enumerate(rows):
            masks[e] = [m[j].double() for m in drawn]
    loop, loop_loss = _loop(module, fast.layout, X, index, xb, yb, 0.05, unit, masks)
    assert torch.allclose(got, loop, rtol=0, atol=1e-12 * float(loop.abs().max()))
    assert torch.allclose(got_loss, loop_loss, rtol=0, atol=1e-12)
    # The masks drop about p = 0.4 of the features, and each pass draws its own.
    first = masks[1][0]
    assert 0.3 < float((first == 0).double().mean()) < 0.5 and not torch.equal(masks[1][0], masks[2][0])


def test_a_dropout_model_is_refused_by_the_kernels_that_cannot_draw_its_masks():
    module = build_model("dpdl_cnn_authors_dropout", "cifar10")
    for strategy in ("auto", "per_model"):
        with pytest.raises(ValueError, match="per_sample_strategy: bookkeeping"):
            Engine(module, strategy=strategy)


def test_dropout_batch_gradients_are_the_unclipped_mean_gradient(float64):
    """A dropout model's whole-batch gradient (DP-CGA's batch clipping, PDSL) is the book-keeping
    kernel's one unclipped unit: the mean gradient under fresh masks."""
    module, xb, yb = _case("dpdl_cnn_authors_dropout", "cifar10")
    fast = Engine(module, strategy="bookkeeping")
    X = fast.initial_params(2)
    fast.dropout_generator = torch.Generator().manual_seed(3)
    grads, losses = fast.batch_gradients(X, torch.tensor([0, 1]), xb, yb)
    fast.dropout_generator = torch.Generator().manual_seed(3)
    sums, unit_losses = fast.clipped_sums(X, torch.tensor([0, 1]), xb, yb, math.inf, unit=yb.shape[1])
    assert torch.equal(grads, sums) and torch.equal(losses, unit_losses[:, 0])


def test_an_unsupported_model_gets_the_reason():
    module = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(784, 10, bias=False))
    with pytest.raises(ValueError, match="has no bias.*per_sample_strategy: vmap"):
        Engine(module, strategy="bookkeeping")
    assert "BatchNorm" in bookkeeping.unsupported_reason(torch.nn.Sequential(torch.nn.BatchNorm2d(3)))


@pytest.mark.parametrize("name,dataset", [("lenet", "mnist"), ("dpdl_cnn_authors", "cifar10")])
def test_float32_agrees_with_vmap_to_a_tolerance(name, dataset):
    torch.manual_seed(1)
    module = build_model(name, dataset, seed=1)
    xb = torch.randn(1, 32, *input_shape(dataset))
    yb = torch.randint(0, 10, (1, 32))
    vmap, fast = Engine(module, strategy="shared_batch"), Engine(module, strategy="bookkeeping")
    X = vmap.initial_params(4) + 0.01 * torch.randn(4, vmap.P)
    ref, ref_loss = vmap.clipped_sums(X, torch.zeros(4, dtype=torch.long), xb, yb, 1.0)
    got, got_loss = fast.clipped_sums(X, torch.zeros(4, dtype=torch.long), xb, yb, 1.0)
    assert float((got - ref).abs().max()) <= 1e-4 * float(ref.abs().max())
    assert torch.allclose(got_loss, ref_loss, rtol=1e-5)


@pytest.mark.parametrize("name,dataset", [("lenet", "mnist"), ("dpdl_cnn_authors", "cifar10"), ("logreg", "mnist"),
                                          ("leasgd_mlp", "mnist")])
@pytest.mark.parametrize("unit", [1, 4])
def test_chunks_of_units_equal_one_pass_in_float64(name, dataset, unit, float64, monkeypatch):
    """The kernel runs a batch in chunks of whole units (3 samples, or one unit of 4) and forms a
    convolution's per-unit gradients one unit at a time: the sums and losses are those of vmap."""
    module, xb, yb = _case(name, dataset)
    vmap = Engine(module, strategy="shared_batch")
    fast = Engine(module, strategy="bookkeeping")
    monkeypatch.setattr(bookkeeping, "_samples_per_chunk", lambda *args: 3)
    monkeypatch.setattr(bookkeeping, "_CHUNK_BYTES", 1)
    index = torch.tensor([0, 1, 1, 0, 1])
    X = vmap.initial_params(5) + 0.05 * torch.randn(5, vmap.P, dtype=torch.float64)
    ref, ref_loss = vmap.clipped_sums(X, index, xb, yb, 0.05, unit)
    got, got_loss = fast.clipped_sums(X, index, xb, yb, 0.05, unit)
    assert torch.allclose(got, ref, rtol=0, atol=1e-12 * float(ref.abs().max()))
    assert torch.allclose(got_loss, ref_loss, rtol=0, atol=1e-12)


def test_chunks_slice_the_dropout_masks(float64, monkeypatch):
    """Chunked, a dropout model reads each chunk's rows of the masks drawn for the whole batch."""
    module, xb, yb = _case("dpdl_cnn_authors_dropout", "cifar10")
    fast = Engine(module, strategy="bookkeeping")
    X = fast.initial_params(2) + 0.05 * torch.randn(2, fast.P, dtype=torch.float64)
    fast.dropout_generator = torch.Generator().manual_seed(5)
    whole, whole_loss = fast.clipped_sums(X, torch.tensor([0, 0]), xb, yb, 0.05)
    monkeypatch.setattr(bookkeeping, "_samples_per_chunk", lambda *args: 3)
    monkeypatch.setattr(bookkeeping, "_CHUNK_BYTES", 1)
    fast.dropout_generator = torch.Generator().manual_seed(5)
    got, got_loss = fast.clipped_sums(X, torch.tensor([0, 0]), xb, yb, 0.05)
    assert torch.allclose(got, whole, rtol=0, atol=1e-12 * float(whole.abs().max()))
    assert torch.allclose(got_loss, whole_loss, rtol=0, atol=1e-12)
