"""Top-1 accuracy of many stacked models on one fixed image set (PDSL's v, eq 16).

The Shapley step evaluates hundreds of coalition models per round on the same Q. The
engine's :meth:`~dpdl_core.engine.Engine.evaluate` pushes them through ``vmap`` of the
module, where every later convolution becomes a grouped convolution, which runs far below
the machine's matmul speed on CPU. :class:`StackedEvaluator` runs the
``nn.Sequential`` conv nets of the package (Conv2d, ReLU, MaxPool2d, Flatten, Linear)
as GEMMs instead:

- activations of K models are stored channels-last, (K, b, H, W, C);
- a convolution is an im2col (a strided view, copied once) and one batched matmul over
  the K models, (K, b·H′·W′, k²·C_in) @ (K, k²·C_in, C_out); the first layer's input is
  shared, so its im2col is one plain matmul against all K models' filters side by side;
- max-pooling is a reshape and ``amax``; a linear layer is one ``baddbmm``.

Any other module falls back to ``engine.evaluate``. The result equals ``engine.evaluate``'s
accuracy up to floating-point summation order (tested).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["StackedEvaluator", "supports"]

_LAYERS = (nn.Conv2d, nn.ReLU, nn.MaxPool2d, nn.Flatten, nn.Linear)


def _plain_pool(m: nn.MaxPool2d) -> bool:
    k, s = m.kernel_size, m.stride if m.stride is not None else m.kernel_size
    return k == s and isinstance(k, int) and m.padding == 0 and m.dilation == 1 and not m.ceil_mode


def _plain_conv(m: nn.Conv2d) -> bool:
    return m.stride == (1, 1) and m.dilation == (1, 1) and m.groups == 1 and m.kernel_size[0] == m.kernel_size[1] \
        and m.padding[0] == m.padding[1] and m.padding_mode == "zeros" and m.bias is not None


def supports(module: nn.Module) -> bool:
    """Whether ``module`` is a Sequential of the layers the GEMM path implements."""
    if not isinstance(module, nn.Sequential):
        return False
    for m in module:
        if not isinstance(m, _LAYERS):
            return False
        if isinstance(m, nn.Conv2d) and not _plain_conv(m):
            return False
        if isinstance(m, nn.MaxPool2d) and not _plain_pool(m):
            return False
        if isinstance(m, nn.Linear) and m.bias is None:
            return False
    return True


def _im2col(h: torch.Tensor, k: int, pad: int) -> torch.Tensor:
    """(..., H, W, C) → (..., H′, W′, k·k·C) patches in (dy, dx, c) order (one copy)."""
    if pad:
        h = F.pad(h, (0, 0, pad, pad, pad, pad))
    *lead, H, W, C = h.shape
    Ho, Wo = H - k + 1, W - k + 1
    st = h.stride()
    view = h.as_strided((*lead, Ho, Wo, k, k, C), (*st[:-3], st[-3], st[-2], st[-3], st[-2], st[-1]))
    return view.reshape(*lead, Ho, Wo, k * k * C)


class StackedEvaluator:
    """Accuracy of (K, P) stacked models on fixed images (x, y).

    Parameters
    ----------
    engine : dpdl_core.engine.Engine
        Gives the module and the flat parameter layout.
    x : (Q, C, H, W), y : (Q,)
        The evaluation set (PDSL's Q).
    image_batch : int
        Images per pass; memory is about K·image_batch·(largest activation).
    """

    def __init__(self, engine, x: torch.Tensor, y: torch.Tensor, image_batch: int = 500):
        self.engine = engine
        self.fast = supports(engine.module)
        self.x = x.to(engine.device)
        self.y = y.to(engine.device)
        self.image_batch = image_batch
        # Channels-last images, shared by every model.
        self.x_nhwc = self.x.permute(0, 2, 3, 1).contiguous()
        # ReLU then max-pool equals max-pool then ReLU (both monotone): rectify the 4×
        # smaller pooled tensor.
        ops = list(enumerate(engine.module))
        for a in range(len(ops) - 1):
            if isinstance(ops[a][1], nn.ReLU) and isinstance(ops[a + 1][1], nn.MaxPool2d):
                ops[a], ops[a + 1] = ops[a + 1], ops[a]
        self.ops = ops

    @torch.no_grad()
    def __call__(self, X: torch.Tensor) -> torch.Tensor:
        """(K,) top-1 accuracy of each model in ``X`` (K, P)."""
        if not self.fast:
            return self.engine.evaluate(X, self.x, self.y, batch=self.image_batch)[1]
        params = self.engine.layout.unflatten(X)
        correct = torch.zeros(X.shape[0], device=X.device)
        for s in range(0, len(self.y), self.image_batch):
            logits = self._forward(params, X.shape[0], self.x_nhwc[s : s + self.image_batch])
            correct += (logits.argmax(-1) == self.y[s : s + self.image_batch]).sum(1)
        return correct / len(self.y)

    def _forward(self, params: dict, K: int, h: torch.Tensor) -> torch.Tensor:
        """Logits (K, b, classes).

        Layouts: the images are shared, (b, H, W, C); the first parametrised layer produces
        every model's activations side by side, (b, H, W, K·C) — pooled and rectified in
        that layout, 4× smaller — and the next layer moves them to (K, b, H, W, C).
        """
        layout = "shared"
        for idx, m in self.ops:
            if isinstance(m, nn.Conv2d):
                w, bias = params[f"{idx}.weight"], params[f"{idx}.bias"]  # (K, Co, Ci, k, k), (K, Co)
                k, Co = m.kernel_size[0], m.out_channels
                wmat = w.permute(0, 3, 4, 2, 1).reshape(K, -1, Co)  # (K, k·k·Ci, Co), (dy, dx, c) order
                h = self._per_model(h, K) if layout == "side_by_side" else h
                cols = _im2col(h, k, m.padding[0])
                if layout == "shared":  # one GEMM against all K models' filters side by side
                    b, Ho, Wo, kkc = cols.shape
                    wcat = wmat.permute(1, 0, 2).reshape(kkc, K * Co)
                    h = torch.addmm(bias.reshape(-1), cols.reshape(-1, kkc), wcat).view(b, Ho, Wo, K * Co)
                    layout = "side_by_side"
                else:
                    _, b, Ho, Wo, kkc = cols.shape
                    h = torch.baddbmm(bias.unsqueeze(1), cols.reshape(K, -1, kkc), wmat).view(K, b, Ho, Wo, Co)
                    layout = "per_model"
            elif isinstance(m, nn.ReLU):
                h = torch.relu(h) if layout == "shared" else torch.relu_(h)
            elif isinstance(m, nn.MaxPool2d):
                h = _max_pool(h, m.kernel_size)
            elif isinstance(m, nn.Flatten):
                h = self._per_model(h, K) if layout == "side_by_side" else h
                layout = "per_model" if layout != "shared" else layout
                # nn.Flatten of an NCHW tensor orders the features (C, H, W).
                h = h.permute(*range(h.dim() - 3), -1, -3, -2).flatten(-3)
            else:  # nn.Linear
                w, bias = params[f"{idx}.weight"], params[f"{idx}.bias"]  # (K, out, in), (K, out)
                if layout == "shared":
                    h = torch.addmm(bias.reshape(-1), h.reshape(-1, h.shape[-1]), w.reshape(-1, w.shape[-1]).T)
                    h = h.view(-1, K, w.shape[1]).transpose(0, 1)
                else:
                    h = torch.baddbmm(bias.unsqueeze(1), h, w.transpose(1, 2))
                layout = "per_model"
        return h

    @staticmethod
    def _per_model(h: torch.Tensor, K: int) -> torch.Tensor:
        """(b, H, W, K·C) → (K, b, H, W, C)."""
        b, H, W, KC = h.shape
        return h.view(b, H, W, K, KC // K).permute(3, 0, 1, 2, 4).contiguous()


def _max_pool(h: torch.Tensor, p: int) -> torch.Tensor:
    """p×p max-pooling, stride p, of (..., H, W, C): two passes of pairwise maxima over
    contiguous blocks (``amax`` over two non-adjacent dims is many times slower)."""
    *lead, H, W, C = h.shape
    Ho, Wo = H // p, W // p
    h = h[..., : Ho * p, : Wo * p, :].reshape(*lead, Ho * p, Wo, p * C)
    out = h[..., :C]
    for r in range(1, p):
        out = torch.maximum(out, h[..., r * C : (r + 1) * C])
    out = out.reshape(*lead, Ho, p, Wo, C)
    rows = out[..., 0, :, :]
    for r in range(1, p):
        rows = torch.maximum(rows, out[..., r, :, :])
    return rows
