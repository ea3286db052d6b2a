"""Per-unit clipped gradient sums by book-keeping: every model that reads one batch in one pass.

The kernel behind ``per_sample_strategy: bookkeeping``, in the style of Bu et al.'s
book-keeping ("Differentially private optimization on large model at small cost", 2023)
for the networks of the four papers: ``nn.Sequential`` stacks of ``Conv2d`` (stride 1,
zero padding), ``ReLU``, ``MaxPool2d``, ``Dropout``, ``Flatten`` and ``Linear``. For the
k models that read one batch:

1. **One forward and one backward pass for all k models**, written out (no autograd), on
   channels-last arrays. The first layer reads the batch itself, so its k weight sets are
   one layer with k·C_out outputs: one GEMM over the shared im2col patches (a strided
   gather of C-contiguous runs). A later convolution runs each model's slice of a
   model-major copy through oneDNN; its input gradients come from one grouped
   ``convolution_backward`` (k groups) on the batch-major arrays. Linear layers after the
   first are batched matmuls over the models. Max-pooling runs on channels-last arrays, and
   a ReLU before a max-pool runs after it, on the pooled array (the two commute, forward and
   backward, the first-index tie rule included). Each sample's loss depends on its own
   outputs only, so the output gradient g of the summed unit losses holds every sample's.
2. **Per-unit squared norms from what the pass kept** (the book-keeping). A convolution's
   per-unit weight gradients are materialised by batched matmuls of its im2col patches
   and g; after the first layer the patches are gathered from the model-major copy a few
   units at a time (for these small convolutions this is cheaper than the ghost norm: Bu
   et al.'s rule takes the ghost norm only where 2T² < p·d, T the positions per unit, and
   every convolution here has 2T² > p·d). A linear layer's are never formed: ‖Σ_s g_s a_sᵀ‖²
   over a unit's samples is Σ_{s,s'} (g_s·g_{s'})(a_s·a_{s'}) (the "ghost norm",
   ‖g‖²‖a‖² for one sample; the bias adds the a·a' = 1 term), unless the unit has so
   many samples T that T(d + p) > d·p, where the direct gradient is cheaper.
3. **The clipped sum without a second backward pass**: with f_u = min{1, C/‖g_u‖}, a
   convolution's Σ_u f_u G_u from the kept per-unit gradients, a linear layer's as one
   weighted GEMM (f·g)ᵀa over the whole batch.

On the CPU the batch runs in chunks of whole units (every step but the linear layers'
weighted GEMM is per sample) of a few MiB per array, and the first layer's arrays are kept
from call to call, so that the arrays stay in the cache and in the allocator's heap rather
than being mapped and page-faulted afresh on every call, which cost as much as the
arithmetic. On a GPU the batch runs in one piece.

Dropout draws one mask per (model, sample) from the generator it is given (the authors'
code runs every gradient pass, cross-gradients included, in training mode), so the
kernel's sums are reproducible from a run's seed. Max-pooling keeps torch's rule for ties
(the first index), the same as every other kernel's.

The sums equal the ``vmap`` kernel's to float summation order (tested in float64 against it
and against a per-sample ``backward()`` loop), not bit for bit, so the config field that
selects this kernel is hashed.
"""
from __future__ import annotations

import math
import threading
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.modules.utils import _pair

from .per_sample import sequential_reason

# The largest array of one chunk of samples. Small chunks keep a chunk's arrays in the allocator's
# heap (glibc maps, and page-faults, every array above its mmap threshold afresh, and returns a
# large freed heap top to the system) and in the cache.
_CHUNK_BYTES = 4 << 20

__all__ = ["Step", "clipped_sums", "dropout_masks", "has_dropout", "plan", "supports", "unsupported_reason"]


@dataclass(frozen=True)
class Step:
    """One layer of the plan: ``kind`` in {"conv", "linear", "relu", "pool", "dropout",
    "flatten"}, the module's index (the parameters' name prefix) and the layer."""

    kind: str
    index: int
    layer: nn.Module


def _layer_reason(layer: nn.Module) -> str | None:
    if isinstance(layer, nn.MaxPool2d):
        if layer.padding not in (0, (0, 0)) or layer.dilation not in (1, (1, 1)) or layer.ceil_mode:
            return f"{layer} has padding, dilation or ceil_mode"
    elif isinstance(layer, nn.Flatten):
        if layer.start_dim != 1 or layer.end_dim != -1:
            return f"{layer} does not flatten all but the batch dimension"
    elif not isinstance(layer, (nn.Conv2d, nn.Linear, nn.ReLU, nn.Dropout)):
        return f"{layer} is not one of Conv2d, ReLU, MaxPool2d, Dropout, Flatten, Linear"
    return None


def unsupported_reason(module: nn.Module) -> str | None:
    """Why the kernel cannot run ``module`` (None when it can)."""
    return sequential_reason(module, _layer_reason)


def supports(module: nn.Module) -> bool:
    """Whether :func:`clipped_sums` can run ``module``."""
    return unsupported_reason(module) is None


def has_dropout(module: nn.Module) -> bool:
    """Whether ``module`` has a Dropout layer that drops anything (p > 0)."""
    return any(isinstance(m, nn.Dropout) and m.p > 0 for m in module.modules())


_KINDS = ((nn.Conv2d, "conv"), (nn.Linear, "linear"), (nn.ReLU, "relu"), (nn.MaxPool2d, "pool"),
          (nn.Dropout, "dropout"), (nn.Flatten, "flatten"))


def plan(module: nn.Sequential) -> tuple[Step, ...]:
    """The module's layers as :class:`Step` s (``module`` must be :func:`supports` ed)."""
    reason = unsupported_reason(module)
    if reason:
        raise ValueError(f"the book-keeping kernel cannot run this model: {reason}; use per_sample_strategy: vmap")
    return tuple(Step(next(k for t, k in _KINDS if isinstance(layer, t)), i, layer) for i, layer in enumerate(module))


def dropout_masks(module: nn.Sequential, in_shape: tuple[int, ...], k: int, batch: int,
                  generator: torch.Generator | None) -> list[torch.Tensor]:
    """Keep-masks (k, B, *features) of each Dropout layer with p > 0, scaled by 1/(1 − p).

    Drawn on ``generator`` (a CPU generator gives the same masks to a CPU and a GPU run),
    in the order of the layers; a layer's features are the shape of its input for one sample.
    """
    masks, shape = [], tuple(in_shape)
    with torch.no_grad():
        probe = torch.zeros(1, *shape, device=next(module.parameters()).device)
        for layer in module:
            if isinstance(layer, nn.Dropout) and layer.p > 0:
                if generator is None:
                    raise ValueError("the model has dropout: the kernel needs a generator for its masks")
                keep = torch.rand((k, batch, *probe.shape[1:]), generator=generator) >= layer.p
                masks.append(keep.to(torch.get_default_dtype()) / (1.0 - layer.p))
            elif not isinstance(layer, nn.Dropout):
                probe = layer(probe)
    return masks


def _im2col(h: torch.Tensor, kernel: tuple[int, int], padding: tuple[int, int], role=None) -> torch.Tensor:
    """Patches (N·H′·W′, kh·kw·C) of channels-last images ``h`` (N, H, W, C), in (dy, dx, c)
    order: one gather of C-contiguous runs from a strided view (stride 1); into the
    :func:`_workspace` array ``role`` if one is named."""
    (kh, kw), (ph, pw) = kernel, padding
    if ph or pw:
        h = F.pad(h, (0, 0, pw, pw, ph, ph))
    h = h.contiguous()
    N, H, W, C = h.shape
    Ho, Wo = H - kh + 1, W - kw + 1
    s = h.stride()
    patches = h.as_strided((N, Ho, Wo, kh, kw, C), (s[0], s[1], s[2], s[1], s[2], 1))
    if role is None:
        return patches.reshape(N * Ho * Wo, kh * kw * C)
    return _workspace(role, patches.shape, h).copy_(patches).view(N * Ho * Wo, kh * kw * C)


_WORKSPACE = threading.local()


def _workspace(role, shape, like: torch.Tensor) -> torch.Tensor:
    """A contiguous array of ``shape`` kept from call to call for one role (an array of the
    first layer's size, written afresh each time), so that it is not mapped and
    page-faulted anew by the allocator on every chunk. Its contents are undefined."""
    arrays = _WORKSPACE.__dict__.setdefault("arrays", {})
    key, n = (role, like.dtype, like.device), math.prod(shape)
    buffer = arrays.get(key)
    if buffer is None or buffer.numel() < n:
        buffer = arrays[key] = torch.empty(n, dtype=like.dtype, device=like.device)
    return buffer[:n].view(shape)


def _nchw(h: torch.Tensor) -> torch.Tensor:
    """A channels-last array (N, H, W, C) as the NCHW tensor it stores (channels-last memory)."""
    return h.permute(0, 3, 1, 2)


def _nhwc(t: torch.Tensor) -> torch.Tensor:
    """An NCHW tensor as a contiguous channels-last array (N, H, W, C) (a view when it is one)."""
    return t.permute(0, 2, 3, 1).contiguous()


def _to_model(h: torch.Tensor, k: int) -> torch.Tensor:
    """(B, H, W, k·C) → (k, B, H, W, C), contiguous."""
    B, H, W, _ = h.shape
    return h.view(B, H, W, k, -1).permute(3, 0, 1, 2, 4).contiguous()


def _to_batch(h: torch.Tensor) -> torch.Tensor:
    """(k, B, H, W, C) → (B, H, W, k·C), contiguous."""
    return h.permute(1, 2, 3, 0, 4).reshape(*h.shape[1:4], -1)


class _Pass:
    """The k models' forward pass in channels-last arrays, with the tape its backward pass reads.

    Images are held in one of three forms: ``shared`` (B, H, W, C), the batch itself;
    ``batch`` (B, H, W, k·C), the first convolution's output, every model's channels side by
    side; ``model`` (k, B, H, W, C), model-major. Vectors are ``shared`` (B, d) or ``model``
    (k, B, d). Elementwise layers and pooling run on any form; a convolution after the first
    reads the model-major form (its patches a gather of C-contiguous runs).
    """

    def __init__(self, params, k, B):
        self.params, self.k, self.B = params, k, B
        self.tape = []  # backward functions of the layers after the first parametrised one
        self.taps = []  # (step, kept input or patches, form of the input) per parametrised layer
        self.marks = []  # the tape's length after each parametrised layer

    def record(self, backward):
        if self.taps:  # nothing before the first parametrised layer needs a gradient
            self.tape.append(backward)

    def to_model(self, h, form):
        if form != "batch":
            return h
        self.record(_to_batch)
        return _to_model(h, self.k)

    def conv(self, step, h, form):
        layer, k, B = step.layer, self.k, self.B
        w, b = self.params[f"{step.index}.weight"], self.params[f"{step.index}.bias"]
        Co, kh, kw = layer.out_channels, *layer.kernel_size
        ph, pw = layer.padding
        if form == "shared":  # one GEMM: the shared patches against every model's filters
            _, H, W, C = h.shape
            cols = _im2col(h, (kh, kw), (ph, pw), ("patches", step.index))
            Ho, Wo = H + 2 * ph - kh + 1, W + 2 * pw - kw + 1
            z = torch.addmm(b.reshape(-1), cols, w.permute(3, 4, 2, 0, 1).reshape(kh * kw * C, k * Co),
                            out=_workspace(("outputs", step.index), (cols.shape[0], k * Co), cols))
            self.taps.append((step, cols, form))
            return z.view(B, Ho, Wo, k * Co), "batch"
        hb = h if form == "batch" else _to_batch(h)
        hm = _to_model(h, k) if form == "batch" else h
        # Each model's convolution by oneDNN on its channels-last slice; the patches are formed
        # later, a few units at a time, for the per-unit weight gradients.
        z = torch.stack([_nhwc(F.conv2d(_nchw(hm[m]), w[m], b[m], padding=(ph, pw))) for m in range(k)])

        def backward(g):  # input gradients: one grouped convolution_backward, channels-last
            gi = _nhwc(torch.ops.aten.convolution_backward(
                _nchw(_to_batch(g)), _nchw(hb), w.reshape(k * Co, *w.shape[2:]), None, [1, 1], [ph, pw], [1, 1],
                False, [0, 0], k, [True, False, False])[0])
            return gi if form == "batch" else _to_model(gi, k)

        self.record(backward)
        self.taps.append((step, hm, "model"))
        return z, "model"

    def linear(self, step, h, form):
        k, B = self.k, self.B
        w, b = self.params[f"{step.index}.weight"], self.params[f"{step.index}.bias"]
        if form == "shared":  # (B, d) → (k, B, p): one GEMM over every model's outputs
            z = torch.addmm(b.reshape(-1), h, w.reshape(-1, w.shape[2]).T).view(B, k, -1).transpose(0, 1).contiguous()
        else:
            z = torch.baddbmm(b.unsqueeze(1), h, w.transpose(1, 2))
            self.record(lambda g: torch.bmm(g, w))
        self.taps.append((step, h, form))
        return z, "model"

    def relu(self, h):
        h = F.relu(h) if not self.taps else h.clamp_min_(0)  # in place on the pass's own arrays
        self.record(lambda g: g * (h > 0))
        return h

    def pool(self, step, h, form):
        layer, lead = step.layer, h.shape[:-3]
        t = _nchw(h.reshape(-1, *h.shape[-3:]))
        out, idx = F.max_pool2d(t, layer.kernel_size, layer.stride, return_indices=True)

        def backward(g):
            gi = _workspace(("pooled", step.index), h.shape, g)
            torch.ops.aten.max_pool2d_with_indices_backward.grad_input(
                _nchw(g.reshape(-1, *g.shape[-3:])), t, layer.kernel_size, layer.stride, 0, 1, False, idx,
                grad_input=_nchw(gi.view(-1, *h.shape[-3:])))
            return gi

        self.record(backward)
        return _nhwc(out).view(*lead, *out.shape[2:], out.shape[1])

    def flatten(self, h, form):
        """Images → vectors in the logical (C, H, W) order of every feature."""
        if form == "shared":
            return _nchw(h).reshape(self.B, -1), "shared"
        h = self.to_model(h, form)
        shape = h.shape
        self.record(lambda g: g.view(shape[0], shape[1], shape[4], shape[2], shape[3]).permute(0, 1, 3, 4, 2)
                    .contiguous())
        return h.permute(0, 1, 4, 2, 3).reshape(shape[0], shape[1], -1), "model"

    def dropout(self, m, h, form, image):
        m = m.to(h.device, h.dtype)  # (k, B, *features), features in logical order
        if image:
            h = self.to_model(h, form)
            m = m.permute(0, 1, 3, 4, 2)
        h = h * m
        self.record(lambda g: g * m)
        return h, "model"

    def backward(self, g):
        """Output gradients of every parametrised layer, from the logits' gradient."""
        grads, tape = [None] * len(self.taps), list(self.tape)
        for i in range(len(self.taps) - 1, -1, -1):
            while len(tape) > self.marks[i]:
                g = tape.pop()(g)
            grads[i] = g
        return grads


def _conv_unit_grads(a, g, layer, k, U, form):
    """Per-unit weight and bias gradients of a convolution, ((k, U, kh·kw·C_in, C_out), (k, U, C_out)),
    the weight in (dy, dx, c) order: batched matmuls of the patches and the output gradients.
    ``form`` "shared": ``a`` the patches (B·L, q) of the shared input, ``g`` (B, H′, W′, k·C_out);
    "model": ``a`` the input (k, B, H, W, C_in), ``g`` (k, B, H′, W′, C_out), its patches gathered
    a few units at a time (model-major, C_in-contiguous runs)."""
    if form == "shared":
        gw = torch.bmm(a.view(U, -1, a.shape[1]).transpose(1, 2), g.reshape(U, -1, g.shape[3]))
        gw = gw.view(U, gw.shape[1], k, -1).permute(2, 0, 1, 3)
        gb = g.reshape(U, -1, k, gw.shape[3]).sum(1).transpose(0, 1)
        return gw, gb
    _, B, H, W, C = a.shape
    unit, Co = B // U, g.shape[4]
    q = layer.kernel_size[0] * layer.kernel_size[1] * C
    L = g.shape[2] * g.shape[3]
    # units whose patches fit the budget (on the CPU; at once on a GPU)
    step = k * U if g.device.type != "cpu" else max(1, _CHUNK_BYTES // (L * q * unit * g.element_size()))
    if step >= k * U:  # every model's patches at once
        cols = _im2col(a.view(-1, H, W, C), layer.kernel_size, layer.padding).view(k * U, unit * L, q)
        gw = torch.bmm(cols.transpose(1, 2), g.reshape(k * U, unit * L, Co)).view(k, U, q, Co)
        return gw, g.reshape(k, U, -1, Co).sum(2)
    gw = torch.empty(k, U, q, Co, dtype=g.dtype, device=g.device)
    for m in range(k):
        for u in range(0, U, step):
            s, e = u * unit, min(U, u + step) * unit
            cols = _im2col(a[m, s:e], layer.kernel_size, layer.padding).view(-1, unit * L, q)
            torch.bmm(cols.transpose(1, 2), g[m, s:e].reshape(-1, unit * L, Co), out=gw[m, u:u + step])
    return gw, g.reshape(k, U, -1, Co).sum(2)


def _linear_unit_norms(a, g, U, unit):
    """Squared norms (k, U) of the per-unit weight-and-bias gradients of a linear layer with
    inputs ``a`` (k, B, d) and output gradients ``g`` (k, B, p)."""
    k, _, d = a.shape
    p = g.shape[2]
    if unit == 1:
        return g.pow(2).sum(2) * (a.pow(2).sum(2) + 1.0)
    a, g = a.reshape(k * U, unit, d), g.reshape(k * U, unit, p)
    if unit * (d + p) <= d * p:  # the ghost norm: two unit × unit Gram matrices
        gram = torch.bmm(g, g.transpose(1, 2)) * (torch.bmm(a, a.transpose(1, 2)) + 1.0)
        return gram.sum((1, 2)).view(k, U)
    gw = torch.bmm(g.transpose(1, 2), a)
    return (gw.pow(2).sum((1, 2)) + g.sum(1).pow(2).sum(1)).view(k, U)


def _order(steps):
    """The steps with each ReLU that a MaxPool2d follows moved after it: max-pooling commutes
    with ReLU (a monotone map), forward and backward alike (where the window's maximum is not
    positive both give a zero gradient; where it is, both pick the same first maximal entry),
    and the ReLU then reads the pooled, smaller array."""
    out, i = list(steps), 0
    while i < len(out) - 1:
        if out[i].kind == "relu" and out[i + 1].kind == "pool":
            out[i], out[i + 1] = out[i + 1], out[i]
            i += 1
        i += 1
    return out


def clipped_sums(steps: tuple[Step, ...], params: dict[str, torch.Tensor], xb: torch.Tensor, yb: torch.Tensor,
                 clip: float, unit: int = 1, masks: list[torch.Tensor] = ()) -> tuple[torch.Tensor, torch.Tensor]:
    """Σ_u min{1, C/‖g_u‖} g_u and the units' mean losses of k models on one batch.

    Parameters
    ----------
    steps : tuple of Step
        :func:`plan` of the architecture; its own parameters are not used.
    params : dict
        ``{name: (k, *shape)}``: the k models, stacked (a layout's ``unflatten``).
    xb : (B, C, H, W) or (B, d), yb : (B,)
        The batch every model reads (any memory format; channels-last is read without a copy).
    clip : float
        C (``math.inf``: no clipping, the sum of the units' gradients).
    unit : int
        Samples per clipping unit (B a multiple of it); a unit's gradient is the gradient
        of its samples' mean loss.
    masks : list of (k, B, *features)
        :func:`dropout_masks` for the model's Dropout layers (none without dropout).

    Returns
    -------
    sums : (k, P)
        In the layout's order: each parameter flattened in its own (logical) order.
    losses : (k, B/unit)
    """
    B = yb.shape[0]
    k = next(iter(params.values())).shape[0]
    step = B if xb.device.type != "cpu" else \
        max(1, _samples_per_chunk(steps, tuple(xb.shape[1:]), k, xb.element_size()) // unit) * unit
    chunks = [_chunk_sums(steps, params, xb[s:s + step], yb[s:s + step], clip, unit, [m[:, s:s + step] for m in masks])
              for s in range(0, B, step)]  # chunks of whole units: their arrays stay in the allocator's cache
    flat = []
    for i, (kind, _, _) in enumerate(chunks[0][0]):
        u, v = [c[0][i][1] for c in chunks], [c[0][i][2] for c in chunks]
        if kind == "conv":  # the chunks' sums
            flat += [sum(u[1:], u[0]), sum(v[1:], v[0])]
        else:  # one weighted GEMM (f·g)ᵀa over the batch: u the weighted output gradients, v the inputs
            fg, a = torch.cat(u, dim=1), torch.cat(v, dim=-2)
            flat += [torch.matmul(fg.transpose(1, 2), a).reshape(k, -1), fg.sum(1)]
    return torch.cat(flat, dim=1), torch.cat([c[1] for c in chunks], dim=1)


def _samples_per_chunk(steps, in_shape, k, itemsize):
    """Samples per chunk: as many as keep the largest array (a convolution's shared patches or
    its k models' outputs) within the budget, and at least one per 32Ki weights of the largest
    linear layer (a chunk reads every linear layer's k weight matrices twice: fewer samples and
    those products are bound by reading the weights)."""
    shape, largest, floor = in_shape, 1, 1
    for step in steps:
        layer = step.layer
        if step.kind == "conv":
            (kh, kw), (ph, pw) = layer.kernel_size, layer.padding
            shape = (layer.out_channels, shape[1] + 2 * ph - kh + 1, shape[2] + 2 * pw - kw + 1)
            largest = max(largest, shape[1] * shape[2] * max(kh * kw * layer.in_channels, k * layer.out_channels))
        elif step.kind == "pool":
            ks, st = _pair(layer.kernel_size), _pair(layer.stride or layer.kernel_size)
            shape = (shape[0], (shape[1] - ks[0]) // st[0] + 1, (shape[2] - ks[1]) // st[1] + 1)
        elif step.kind == "linear":
            floor = max(floor, layer.in_features * layer.out_features >> 15)
    return max(floor, _CHUNK_BYTES // (largest * itemsize))


def _chunk_sums(steps, params, xb, yb, clip, unit, masks):
    """One chunk of whole units: per parametrised layer ("conv", the weight's and the bias's
    clipped sums) or ("linear", the clipped output gradients f·g, the inputs); the units' losses."""
    B = yb.shape[0]
    U = B // unit
    k = next(iter(params.values())).shape[0]
    run = _Pass(params, k, B)
    h, form, image, masks = (xb.permute(0, 2, 3, 1) if xb.dim() == 4 else xb), "shared", xb.dim() == 4, list(masks)
    with torch.no_grad():
        for step in _order(steps):
            if step.kind in ("conv", "linear"):
                h, form = getattr(run, step.kind)(step, h, form)
                run.marks.append(len(run.tape))
            elif step.kind == "relu":
                h = run.relu(h)
            elif step.kind == "pool":
                h = run.pool(step, h, form)
            elif step.kind == "flatten":
                h, form = run.flatten(h, form)
                image = False
            elif step.kind == "dropout" and step.layer.p > 0:
                h, form = run.dropout(masks.pop(0), h, form, image)
        logp = torch.log_softmax(h, 2)  # (k, B, classes)
        target = yb.view(1, B, 1).expand(k, B, 1)
        per_sample = -logp.gather(2, target).squeeze(2)
        g = logp.exp_().scatter_add_(2, target, torch.full((k, B, 1), -1.0, dtype=h.dtype, device=h.device))
        grads = run.backward(g / unit)  # gradients of the summed unit losses
        losses = per_sample.view(k, U, unit).mean(2)
        sq = torch.zeros(k, U, dtype=h.dtype, device=h.device)
        kept = []
        for (step, a, form), g in zip(run.taps, grads):
            if step.kind == "conv":
                gw, gb = _conv_unit_grads(a, g, step.layer, k, U, form)
                sq += gw.pow(2).sum((2, 3)) + gb.pow(2).sum(2)
            else:
                sq += _linear_unit_norms(a.expand(k, *a.shape) if form == "shared" else a, g, U, unit)
                gw, gb = g, a
            kept.append((step, gw, gb))
        f = torch.clamp(clip / (sq.sqrt() + 1e-12), max=1.0)  # (k, U)
        parts = []
        for step, u, v in kept:
            if step.kind == "conv":  # Σ_u f_u G_u, back to the (C_out, C_in, kh, kw) order
                kh, kw = step.layer.kernel_size
                w = torch.bmm(f.unsqueeze(1), u.reshape(k, U, -1)).view(k, kh, kw, -1, u.shape[3])
                parts.append(("conv", w.permute(0, 4, 3, 1, 2).reshape(k, -1), torch.bmm(f.unsqueeze(1), v).squeeze(1)))
            else:  # the output gradients weighted by their units' factors, and the inputs
                parts.append(("linear", u * f.repeat_interleave(unit, dim=1).unsqueeze(2), v))
    return parts, losses
