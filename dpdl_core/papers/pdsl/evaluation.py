"""Top-1 accuracy of many stacked models on one fixed image set (PDSL's v, eq 16).

The Shapley step evaluates hundreds of coalition models per round on the same Q. The
engine's :meth:`~dpdl_core.sim.engine.Engine.evaluate` pushes them through ``vmap`` of the
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


class StackedEvaluator:
    """Accuracy of (K, P) stacked models on fixed images (x, y).

    Parameters
    ----------
    engine : dpdl_core.sim.engine.Engine
        Gives the module and the flat parameter layout.
    x : (Q, C, H, W), y : (Q,)
        The evaluation set (PDSL's Q).
    image_batch : int
        At most this many images per pass.
    workspace_mb : float
        Target size of one pass's largest activation over all K models; the images per
        pass are cut so that it holds (at least one image per pass). Every intermediate
        tensor lives in a buffer allocated once per shape and reused by later passes:
        fresh multi-megabyte tensors would be page-faulted in on every pass, which costs
        more than the copies themselves (``docs/benchmarks.md``, "PDSL Shapley
        benchmark").
    """

    def __init__(self, engine, x: torch.Tensor, y: torch.Tensor, image_batch: int = 500, workspace_mb: float = 32.0):
        self.engine = engine
        self.fast = supports(engine.module)
        self.x = x.to(engine.device)
        self.y = y.to(engine.device)
        self.image_batch = image_batch
        self.workspace_mb = workspace_mb
        # Channels-last images, shared by every model.
        self.x_nhwc = self.x.permute(0, 2, 3, 1).contiguous()
        # ReLU then max-pool equals max-pool then ReLU (both monotone): rectify the 4×
        # smaller pooled tensor.
        ops = list(enumerate(engine.module))
        for a in range(len(ops) - 1):
            if isinstance(ops[a][1], nn.ReLU) and isinstance(ops[a + 1][1], nn.MaxPool2d):
                ops[a], ops[a + 1] = ops[a + 1], ops[a]
        self.ops = ops
        self._buffers: dict = {}
        if self.fast:
            with torch.no_grad():
                sizes = []
                h = self.x[:1]
                for m in engine.module:
                    h = m(h)
                    sizes.append(h.numel())
            self._floats_per_image = max(sizes)

    def images_per_pass(self, K: int) -> int:
        """Images per forward pass for K models (see ``workspace_mb``)."""
        fit = int(self.workspace_mb * 2**20 / 4 // (K * self._floats_per_image))
        return max(1, min(self.image_batch, fit))

    @torch.no_grad()
    def __call__(self, X: torch.Tensor) -> torch.Tensor:
        """(K,) top-1 accuracy of each model in ``X`` (K, P)."""
        if not self.fast:
            return self.engine.evaluate(X, self.x, self.y, batch=self.image_batch)[1]
        K = X.shape[0]
        params = self._weights(self.engine.layout.unflatten(X), K)
        b = self.images_per_pass(K)
        correct = torch.zeros(K, dtype=torch.long, device=X.device)
        for s in range(0, len(self.y), b):
            logits = self._forward(params, K, self.x_nhwc[s : s + b])
            correct += (logits.argmax(-1) == self.y[s : s + b]).sum(1)
        return correct.to(X.dtype) / len(self.y)

    def _buf(self, tag, shape, device) -> torch.Tensor:
        """A reusable buffer for the intermediate ``tag`` of this shape."""
        key = (tag, tuple(shape))
        buf = self._buffers.get(key)
        if buf is None or buf.device != device:
            buf = self._buffers[key] = torch.empty(shape, device=device)
        return buf

    def _weights(self, params: dict, K: int) -> dict:
        """Each layer's weights as GEMM operands, prepared once per call."""
        out = {}
        shared = True
        for idx, m in self.ops:
            if isinstance(m, nn.Conv2d):
                w = params[f"{idx}.weight"]  # (K, Co, Ci, k, k)
                wmat = w.permute(0, 3, 4, 2, 1).reshape(K, -1, m.out_channels)  # (K, k·k·Ci, Co), (dy, dx, c)
                if shared:  # all K models' filters side by side: (k·k·Ci, K·Co)
                    wmat = wmat.permute(1, 0, 2).reshape(wmat.shape[1], -1)
                out[idx] = (wmat.contiguous(), params[f"{idx}.bias"])
                shared = False
            elif isinstance(m, nn.Linear):
                w = params[f"{idx}.weight"]  # (K, out, in)
                wt = w.reshape(-1, w.shape[-1]).T if shared else w.transpose(1, 2)
                out[idx] = (wt.contiguous(), params[f"{idx}.bias"])
                shared = False
        return out

    def _forward(self, params: dict, K: int, h: torch.Tensor) -> torch.Tensor:
        """Logits (K, b, classes).

        Layouts: the images are shared, (b, H, W, C); the first parametrised layer produces
        every model's activations side by side, (b, H, W, K·C) — pooled and rectified in
        that layout, 4× smaller — and the next layer moves them to (K, b, H, W, C).
        """
        layout = "shared"
        dev = h.device
        for idx, m in self.ops:
            if isinstance(m, nn.Conv2d):
                wmat, bias = params[idx]
                k, Co = m.kernel_size[0], m.out_channels
                if layout == "side_by_side":
                    h = self._per_model(h, K, idx)
                cols = self._im2col(h, k, m.padding[0], idx)
                if layout == "shared":  # one GEMM against all K models' filters side by side
                    b, Ho, Wo, kkc = cols.shape
                    out = self._buf(("conv", idx), (b * Ho * Wo, K * Co), dev)
                    h = torch.addmm(bias.reshape(-1), cols.view(-1, kkc), wmat, out=out).view(b, Ho, Wo, K * Co)
                    layout = "side_by_side"
                else:
                    _, b, Ho, Wo, kkc = cols.shape
                    out = self._buf(("conv", idx), (K, b * Ho * Wo, Co), dev)
                    h = torch.baddbmm(bias.unsqueeze(1), cols.view(K, -1, kkc), wmat, out=out).view(K, b, Ho, Wo, Co)
                    layout = "per_model"
            elif isinstance(m, nn.ReLU):
                h = torch.relu(h) if layout == "shared" else torch.relu_(h)
            elif isinstance(m, nn.MaxPool2d):
                h = self._max_pool(h, m.kernel_size, idx)
            elif isinstance(m, nn.Flatten):
                if layout == "side_by_side":
                    h = self._per_model(h, K, idx)
                    layout = "per_model"
                # nn.Flatten of an NCHW tensor orders the features (C, H, W).
                h = h.permute(*range(h.dim() - 3), -1, -3, -2).flatten(-3)
            else:  # nn.Linear
                wt, bias = params[idx]
                if layout == "shared":
                    h = torch.addmm(bias.reshape(-1), h.reshape(-1, h.shape[-1]), wt)
                    h = h.view(-1, K, bias.shape[1]).transpose(0, 1)
                else:
                    out = self._buf(("linear", idx), (K, h.shape[1], bias.shape[1]), dev)
                    h = torch.baddbmm(bias.unsqueeze(1), h, wt, out=out)
                layout = "per_model"
        return h

    def _per_model(self, h: torch.Tensor, K: int, tag) -> torch.Tensor:
        """(b, H, W, K·C) → (K, b, H, W, C), into a reused buffer."""
        b, H, W, KC = h.shape
        out = self._buf(("per_model", tag), (K, b, H, W, KC // K), h.device)
        return out.copy_(h.view(b, H, W, K, KC // K).permute(3, 0, 1, 2, 4))

    def _im2col(self, h: torch.Tensor, k: int, pad: int, tag) -> torch.Tensor:
        """(..., H, W, C) → (..., H′, W′, k·k·C) patches in (dy, dx, c) order, into a
        reused buffer."""
        view = _patches(F.pad(h, (0, 0, pad, pad, pad, pad)) if pad else h, k)
        out = self._buf(("im2col", tag), view.shape, h.device)
        return out.copy_(view).flatten(-3)

    def _max_pool(self, h: torch.Tensor, p: int, tag) -> torch.Tensor:
        """p×p max-pooling, stride p, of (..., H, W, C) into reused buffers: pairwise maxima
        over contiguous blocks, first along W, then along H (``amax`` over two non-adjacent
        dims is many times slower)."""
        *lead, H, W, C = h.shape
        Ho, Wo = H // p, W // p
        h = h[..., : Ho * p, : Wo * p, :].reshape(*lead, Ho * p, Wo, p * C)
        cols = self._buf(("pool_w", tag), (*lead, Ho * p, Wo, C), h.device)
        torch.maximum(h[..., :C], h[..., C : 2 * C], out=cols)
        for r in range(2, p):
            torch.maximum(cols, h[..., r * C : (r + 1) * C], out=cols)
        cols = cols.view(*lead, Ho, p, Wo, C)
        out = self._buf(("pool", tag), (*lead, Ho, Wo, C), h.device)
        torch.maximum(cols[..., 0, :, :], cols[..., 1, :, :], out=out)
        for r in range(2, p):
            torch.maximum(out, cols[..., r, :, :], out=out)
        return out


def _patches(h: torch.Tensor, k: int) -> torch.Tensor:
    """(..., H, W, C) → strided view (..., H′, W′, k, k, C) of the k×k patches (no copy)."""
    *lead, H, W, C = h.shape
    st = h.stride()
    return h.as_strided((*lead, H - k + 1, W - k + 1, k, k, C), (*st[:-3], st[-3], st[-2], st[-3], st[-2], st[-1]))
