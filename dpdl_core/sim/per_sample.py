"""Per-unit clipped gradient sums of a ``nn.Sequential`` conv net, one model at a time.

The engine's default kernel (:meth:`dpdl_core.sim.engine.Engine.clipped_sums`) vmaps
``grad`` over samples and models, which turns every weight gradient into a grouped
convolution. :func:`clipped_sums` computes the same sums the way hand-written DP-SGD
libraries do, for networks whose parametrised layers are plain ``Conv2d`` and ``Linear``:

1. One forward and one backward pass of the model on the whole batch (oneDNN convolutions,
   channels-last), keeping each parametrised layer's input a and the gradient g of the
   batch's summed loss with respect to its output. Each sample's loss depends on its own
   output only, so g holds every sample's output gradient.
2. Per-unit weight gradients of a convolution: the unit's im2col patches times g, one
   batched matmul over the units. The patches are copied a block of units at a time, so
   that the matmul reads them from cache; the first layer's input is the batch itself,
   shared by every model of the batch, so its patches are copied once, whole. A linear
   layer's per-unit gradients are never formed: the squared norm of Σ_s g_s a_sᵀ over a
   unit's samples is Σ_{s,s'} (g_s·g_s')(a_s·a_s') (the "ghost norm"), and the clipped sum
   is one matmul of the factor-weighted g with a.
3. The clip factors min{1, C/‖g_u‖} from the per-unit norms, and the clipped sum Σ_u f_u g_u.

The sums equal the default kernel's to float summation order (tested against a
per-sample loop), not bit for bit, so the config field that selects this kernel
(``per_sample_strategy: per_model``) is hashed.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["clipped_sums", "layer_reason", "supports", "unsupported_reason"]


def layer_reason(layer: nn.Module) -> str | None:
    """Why a per-sample kernel that forms convolution gradients from im2col patches cannot run
    ``layer`` (stride 1, one group, zero padding, a bias; Linear with a bias), or None."""
    if isinstance(layer, nn.Conv2d):
        if layer.stride != (1, 1) or layer.dilation != (1, 1) or layer.groups != 1 or layer.bias is None \
                or layer.padding_mode != "zeros" or isinstance(layer.padding, str):
            return f"{layer} is not a plain convolution (stride 1, one group, zero padding, bias)"
    elif isinstance(layer, nn.Linear) and layer.bias is None:
        return f"{layer} has no bias"
    return None


def sequential_reason(module: nn.Module, kernel_reason) -> str | None:
    """Why a hand-written kernel cannot run ``module``: not an ``nn.Sequential``, or the
    first layer that :func:`layer_reason` or the kernel's own ``kernel_reason(layer)``
    refuses (None when every layer passes)."""
    if not isinstance(module, nn.Sequential):
        return f"the model is a {type(module).__name__}, not an nn.Sequential"
    return next((r for layer in module if (r := layer_reason(layer) or kernel_reason(layer))), None)


def _per_model_reason(layer: nn.Module) -> str | None:
    if isinstance(layer, nn.Conv2d) and (layer.kernel_size[0] != layer.kernel_size[1]
                                         or layer.padding[0] != layer.padding[1]):
        return f"{layer} has a kernel or padding that is not square"
    if not isinstance(layer, (nn.Conv2d, nn.Linear)) and any(True for _ in layer.parameters()):
        return f"{layer} has parameters and is neither Conv2d nor Linear"
    return None


def unsupported_reason(module: nn.Module) -> str | None:
    """Why :func:`clipped_sums` cannot run ``module`` (None when it can)."""
    return sequential_reason(module, _per_model_reason)


def supports(module: nn.Module) -> bool:
    """Whether :func:`clipped_sums` can run ``module``."""
    return unsupported_reason(module) is None


def _patches(h: torch.Tensor, k: int, pad: int) -> torch.Tensor:
    """(B, C, H, W) channels-last activations → (B, H′·W′, k·k·C) im2col patches, in
    (dy, dx, c) order."""
    h = h.permute(0, 2, 3, 1)  # NHWC: a view of channels-last memory
    if pad:
        h = F.pad(h, (0, 0, pad, pad, pad, pad))
    B, H, W, C = h.shape
    s = h.stride()
    view = h.as_strided((B, H - k + 1, W - k + 1, k, k, C), (s[0], s[1], s[2], s[1], s[2], s[3]))
    return view.reshape(B, (H - k + 1) * (W - k + 1), k * k * C)


# Floats of im2col patches per block of units: small enough to stay in cache between the
# copy and the matmul that reads it.
BLOCK_FLOATS = 2**18


def _blocked_grads(a: torch.Tensor, gn: torch.Tensor, k: int, pad: int, unit: int) -> torch.Tensor:
    """Per-unit weight gradients (U, k·k·Ci, Co) of a convolution with input ``a`` and
    output gradients ``gn`` (U, m·L, Co), the patches copied a block of units at a time."""
    U, mL, Co = gn.shape
    kkc = k * k * a.shape[1]
    out = torch.empty(U, kkc, Co, dtype=gn.dtype, device=gn.device)
    step = max(1, BLOCK_FLOATS // (mL * kkc))
    for u in range(0, U, step):
        cols = _patches(a[u * unit : (u + step) * unit], k, pad)
        n = cols.shape[0] // unit
        torch.bmm(cols.view(n, mL, kkc).transpose(1, 2), gn[u : u + n], out=out[u : u + n])
    return out


def _gram(t: torch.Tensor) -> torch.Tensor:
    """(U, m, d) → (U, m, m): the inner products of each unit's rows."""
    return torch.bmm(t, t.transpose(1, 2))


def clipped_sums(module: nn.Sequential, params: dict[str, torch.Tensor], xb: torch.Tensor, yb: torch.Tensor,
                 clip: float, unit: int, out: torch.Tensor, losses: torch.Tensor, rows: list[int]) -> None:
    """Write Σ_u clip(g_u) of each model into ``out[rows]`` and its units' mean losses into
    ``losses[rows]``.

    Parameters
    ----------
    module : nn.Sequential
        The architecture (:func:`supports` it); its own parameters are not used.
    params : dict
        ``{name: (len(rows), *shape)}``: the models, stacked (a layout's ``unflatten``).
    xb : (B, C, H, W), yb : (B,)
        The batch all these models use.
    clip : float
        C.
    unit : int
        Samples per clipping unit (B a multiple of it); a unit's gradient is the gradient
        of its samples' mean loss.
    out : (E, P), losses : (E, B/unit)
        Filled at ``rows``; P is the layers' parameters in ``module.named_parameters``
        order, each flattened in its own (logical) order.
    rows : list of int
    """
    B = yb.shape[0]
    U = B // unit
    x = xb.contiguous(memory_format=torch.channels_last)
    layers = list(module)
    shared_patches = {}  # the first convolution's patches: its input is the batch, every model's
    for m, row in enumerate(rows):
        h, taps, outputs = x, [], []
        for idx, layer in enumerate(layers):
            if isinstance(layer, nn.Conv2d):
                w = params[f"{idx}.weight"][m].contiguous(memory_format=torch.channels_last)
                z = F.conv2d(h, w, params[f"{idx}.bias"][m], padding=layer.padding)
            elif isinstance(layer, nn.Linear):
                if h.dim() != 2:  # a per-sample gradient would then sum over the extra dims
                    raise ValueError(f"{layer} gets a {h.dim()}-D input; the per-model kernel needs (batch, "
                                     "features): use per_sample_strategy: vmap")
                z = F.linear(h, params[f"{idx}.weight"][m], params[f"{idx}.bias"][m])
            else:
                h = layer(h)
                continue
            if not outputs:
                z.requires_grad_(True)  # the graph starts at the first layer's output
            taps.append((idx, layer, h))
            outputs.append(z)
            h = z
        with torch.enable_grad():
            per_sample = F.cross_entropy(h, yb, reduction="none")
            grads = torch.autograd.grad(per_sample.sum() / unit, outputs)
        losses[row] = per_sample.detach().view(U, unit).mean(1)
        pieces, sq = [], torch.zeros(U, device=x.device)
        for (idx, layer, a), g in zip(taps, grads):
            a = a.detach()
            if isinstance(layer, nn.Conv2d):
                k, pad = layer.kernel_size[0], layer.padding[0]
                L = g.shape[2] * g.shape[3]
                gn = g.permute(0, 2, 3, 1).reshape(U, unit * L, layer.out_channels)  # (U, m·L, Co)
                if idx == taps[0][0]:
                    cols = shared_patches.setdefault(idx, _patches(a, k, pad))
                    gw = torch.bmm(cols.view(U, unit * L, -1).transpose(1, 2), gn)  # (U, k·k·Ci, Co)
                else:
                    gw = _blocked_grads(a, gn, k, pad, unit)
                gb = gn.sum(1)
                sq += gw.flatten(1).pow(2).sum(1) + gb.pow(2).sum(1)
                pieces.append((layer, gw, gb))
            else:
                if unit == 1:
                    sq += g.pow(2).sum(1) * (a.pow(2).sum(1) + 1.0)  # + 1: the bias
                else:
                    ga, aa = _gram(g.view(U, unit, -1)), _gram(a.view(U, unit, -1))
                    sq += (ga * (aa + 1.0)).sum((1, 2))
                pieces.append((layer, g, a))
        f = torch.clamp(clip / (sq.sqrt() + 1e-12), max=1.0)  # (U,)
        flat = []
        for layer, u, v in pieces:
            if isinstance(layer, nn.Conv2d):
                k, ci, co = layer.kernel_size[0], layer.in_channels, layer.out_channels
                flat += [(f @ u.flatten(1)).view(k, k, ci, co).permute(3, 2, 0, 1).reshape(-1), f @ v]
            else:
                fg = u * f.repeat_interleave(unit).unsqueeze(1)  # each sample's g times its unit's factor
                flat += [(fg.T @ v).reshape(-1), fg.sum(0)]
        out[row] = torch.cat(flat)
