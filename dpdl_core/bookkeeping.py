"""Per-unit clipped gradient sums by book-keeping: every model that reads one batch in one pass.

The kernel behind ``per_sample_strategy: bookkeeping``, in the style of Bu et al.'s
book-keeping ("Differentially private optimization on large model at small cost", 2023)
for the networks of the four papers: ``nn.Sequential`` stacks of ``Conv2d`` (stride 1,
zero padding), ``ReLU``, ``MaxPool2d``, ``Dropout``, ``Flatten`` and ``Linear``. For the
k models that read one batch:

1. **One forward and one backward pass for all k models.** The first layer reads the batch
   itself, so its k weight sets are one layer with k·C_out outputs (one GEMM over shared
   patches); later convolutions are grouped convolutions with k groups, later linear
   layers a batched matmul over the models. Autograd gives each parametrised layer's
   output gradient g of the summed unit losses; each sample's loss depends on its own
   outputs only, so g holds every sample's output gradient. The weights are detached, so
   the backward pass forms input gradients only.
2. **Per-unit squared norms from what the pass kept** (the book-keeping). A convolution's
   per-unit weight gradients are materialised from its im2col patches and g by one
   batched matmul (for these small convolutions cheaper than the ghost norm: Bu et al.'s
   rule takes the ghost norm only where 2T² < p·d, T the positions per unit, and every
   convolution here has 2T² > p·d). A linear layer's are never formed: ‖Σ_s g_s a_sᵀ‖²
   over a unit's samples is Σ_{s,s'} (g_s·g_{s'})(a_s·a_{s'}) (the "ghost norm",
   ‖g‖²‖a‖² for one sample; the bias adds the a·a' = 1 term), unless the unit has so
   many samples T that T(d + p) > d·p, where the direct gradient is cheaper.
3. **The clipped sum without a second backward pass**: with f_u = min{1, C/‖g_u‖}, a
   convolution's Σ_u f_u G_u from the kept per-unit gradients, a linear layer's as one
   weighted GEMM (f·g)ᵀa.

Dropout draws one mask per (model, sample) from the generator it is given (the authors'
code runs every gradient pass, cross-gradients included, in training mode), so the
kernel's sums are reproducible from a run's seed. Max-pooling keeps torch's rule for ties
(the first index), the same as every other kernel's.

The sums equal the ``vmap`` kernel's to float summation order (tested in float64 against it
and against a per-sample ``backward()`` loop), not bit for bit, so the config field that
selects this kernel is hashed.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from .per_sample import layer_reason

__all__ = ["Step", "clipped_sums", "dropout_masks", "has_dropout", "plan", "supports", "unsupported_reason"]


@dataclass(frozen=True)
class Step:
    """One layer of the plan: ``kind`` in {"conv", "linear", "relu", "pool", "dropout",
    "flatten"}, the module's index (the parameters' name prefix) and the layer."""

    kind: str
    index: int
    layer: nn.Module


def unsupported_reason(module: nn.Module) -> str | None:
    """Why the kernel cannot run ``module`` (None when it can)."""
    if not isinstance(module, nn.Sequential):
        return f"the model is a {type(module).__name__}, not an nn.Sequential"
    for layer in module:
        reason = layer_reason(layer)
        if reason:
            return reason
        if isinstance(layer, nn.MaxPool2d):
            if layer.padding not in (0, (0, 0)) or layer.dilation not in (1, (1, 1)) or layer.ceil_mode:
                return f"{layer} has padding, dilation or ceil_mode"
        elif isinstance(layer, nn.Flatten):
            if layer.start_dim != 1 or layer.end_dim != -1:
                return f"{layer} does not flatten all but the batch dimension"
        elif not isinstance(layer, (nn.Conv2d, nn.Linear, nn.ReLU, nn.Dropout)):
            return f"{layer} is not one of Conv2d, ReLU, MaxPool2d, Dropout, Flatten, Linear"
    return None


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


def _stack_weight(w: torch.Tensor) -> torch.Tensor:
    """(k, C_out, ...) → (k·C_out, ...): the k models' filters as one layer's."""
    return w.reshape(-1, *w.shape[2:])


def _forward(steps, params, x, masks):
    """The k models' forward pass; returns the logits (k, B, classes) and, per parametrised
    layer, (step, its input, its output, whether the input is shared by every model)."""
    k = next(iter(params.values())).shape[0]
    B = x.shape[0]
    h, shared, image, taps, masks = x, True, True, [], list(masks)
    for step in steps:
        layer = step.layer
        if step.kind == "conv":
            w, b = params[f"{step.index}.weight"], params[f"{step.index}.bias"]
            z = F.conv2d(h, _stack_weight(w), b.reshape(-1), padding=layer.padding, groups=1 if shared else k)
        elif step.kind == "linear":
            w, b = params[f"{step.index}.weight"], params[f"{step.index}.bias"]
            if shared:  # (B, d) → (k, B, o): one GEMM over every model's outputs
                z = (h @ _stack_weight(w).T + b.reshape(-1)).view(B, k, -1).transpose(0, 1)
            else:
                z = torch.baddbmm(b.unsqueeze(1), h, w.transpose(1, 2))
        else:
            if step.kind == "relu":
                h = F.relu(h)
            elif step.kind == "pool":
                h = F.max_pool2d(h, layer.kernel_size, layer.stride)
            elif step.kind == "flatten":
                h = h.flatten(1) if shared else h.reshape(B, k, -1).transpose(0, 1)
                image = False
            elif step.kind == "dropout" and layer.p > 0:
                m = masks.pop(0).to(h.device, h.dtype)  # (k, B, *features)
                if image:
                    h = (h.unsqueeze(1) if shared else h.reshape(B, k, *m.shape[2:])) * m.transpose(0, 1)
                    h = h.reshape(B, -1, *h.shape[3:])
                else:
                    h = (h.unsqueeze(0) if shared else h) * m
                shared = False
            continue
        if not taps:
            z.requires_grad_(True)  # the graph starts at the first layer's output
        taps.append((step, h.detach(), z, shared))
        h, shared = z, False
    return h, taps


def _conv_unit_grads(a, g, layer, k, U, unit, shared):
    """Per-unit weight and bias gradients ((k, U, C_in·kh·kw, C_out), (k, U, C_out)) of a
    convolution with input ``a`` and output gradient ``g`` (B, k·C_out, H′, W′)."""
    B = g.shape[0]
    Co = layer.out_channels
    L = g.shape[2] * g.shape[3]
    cols = F.unfold(a, layer.kernel_size, padding=layer.padding)  # (B, [k·]C_in·kh·kw, L): (c, dy, dx) order
    gn = g.reshape(B, k, Co, L)
    if shared:  # one copy of the patches serves every model
        gw = torch.einsum("bpl,bkol->kbpo", cols, gn)
    else:
        cols = cols.view(B, k, -1, L).transpose(0, 1).reshape(k * B, -1, L)
        gw = torch.bmm(cols, gn.transpose(0, 1).reshape(k * B, Co, L).transpose(1, 2)).view(k, B, -1, Co)
    gb = gn.sum(3).transpose(0, 1)  # (k, B, Co)
    if unit > 1:
        gw = gw.view(k, U, unit, *gw.shape[2:]).sum(2)
        gb = gb.view(k, U, unit, Co).sum(2)
    return gw, gb


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
        The batch every model reads.
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
    U = B // unit
    k = next(iter(params.values())).shape[0]
    with torch.enable_grad():
        logits, taps = _forward(steps, params, xb, masks)
        per_sample = F.cross_entropy(logits.reshape(k * B, -1), yb.repeat(k), reduction="none").view(k, B)
        grads = torch.autograd.grad(per_sample.sum() / unit, [z for _, _, z, _ in taps])
    losses = per_sample.detach().view(k, U, unit).mean(2)
    sq = torch.zeros(k, U, dtype=logits.dtype, device=logits.device)
    kept = []
    for (step, a, _, shared), g in zip(taps, grads):
        if step.kind == "conv":
            gw, gb = _conv_unit_grads(a, g, step.layer, k, U, unit, shared)
            sq += gw.pow(2).sum((2, 3)) + gb.pow(2).sum(2)
        else:
            a = a.unsqueeze(0).expand(k, *a.shape) if shared else a
            sq += _linear_unit_norms(a, g, U, unit)
            gw, gb = g, a
        kept.append((step, gw, gb))
    f = torch.clamp(clip / (sq.sqrt() + 1e-12), max=1.0)  # (k, U)
    flat = []
    for step, u, v in kept:
        if step.kind == "conv":
            flat += [torch.einsum("ku,kupo->kop", f, u).reshape(k, -1), torch.einsum("ku,kuo->ko", f, v)]
        else:  # u: output gradients (k, B, p), v: inputs (k, B, d)
            fg = u * f.repeat_interleave(unit, dim=1).unsqueeze(2)
            flat += [torch.bmm(fg.transpose(1, 2), v).reshape(k, -1), fg.sum(1)]
    return torch.cat(flat, dim=1), losses
