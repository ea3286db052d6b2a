"""Gradient inversion: reconstruct training images from an intercepted gradient message.

Two attacks, both run for many targets at once (each target may sit at its own model):

``method="geiping"`` (default) — *Inverting Gradients* (Geiping et al., NeurIPS 2020):
minimise over dummy images x'

    R(x') = 1 − cos(∇_θ ℓ(θ; x', y), g)  +  λ_TV · TV(x')

with the cosine over the whole flattened parameter vector, Adam on the *signed* gradient
(lr 0.1), the learning rate divided by 10 at 3/8, 5/8 and 7/8 of the iterations, the
images projected onto the valid pixel box after each step, and several random restarts of
which the one with the lowest R is kept.

``method="dlg"`` — *Deep Leakage from Gradients* (Zhu et al., NeurIPS 2019): L-BFGS on
‖∇_θ ℓ(θ; x', y) − g‖², no prior, no box.

Labels: with one image per message the label is read off the message (iDLG, Zhao et al.
2020): for cross-entropy the last layer's bias gradient is p − onehot(y), negative only at
the true class, and without bias the row sums of the weight gradient, (p_c − y_c)·Σh with
h ≥ 0 after a ReLU, carry the same sign. With several images per message the labels are
taken as known, as in Geiping et al.'s experiments.

Cosine matching is invariant to the scale of g, so clipping (eq. 9) does not hinder the
attack; the Gaussian noise of eq. (10) does.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call, grad, vmap

from .engine import ParamLayout
from .progress import Progress
from .validation import check_choice, check_int

__all__ = ["InversionConfig", "InversionResult", "invert", "infer_labels", "total_variation", "pixel_box"]

METHODS = ("geiping", "dlg")


@dataclass(frozen=True)
class InversionConfig:
    """Hyper-parameters of the attack.

    Attributes
    ----------
    method : {"geiping", "dlg"}
    iterations : int
        Adam steps (``geiping``) or objective evaluations (``dlg``; L-BFGS takes 20 per
        step). Geiping et al. use 4,800–24,000 on ImageNet-size models; 1,000–2,000 suffice
        for the package's 5k–17k-parameter models (the loss has flattened by then).
    lr : float
        0.1 for Adam as in Geiping et al.; 1.0 for L-BFGS as in DLG.
    tv : float
        Weight λ_TV of the total-variation prior (``geiping`` only). Geiping et al. use
        1e-4 to 1e-1 depending on the model; 1e-1 (normalised-pixel units) gave the lowest
        MSE of {1e-4, 1e-2, 1e-1} on clean messages of LeNet (MNIST) and of the DPDL
        CIFAR-10 CNN at initialisation.
    restarts : int
        Independent random initialisations per target; the lowest objective wins.
    signed : bool
        Adam on sign(∇R) as in Geiping et al.
    boxed : bool
        Project onto the valid pixel range after each step.
    decay : bool
        lr × 0.1 at 3/8, 5/8 and 7/8 of the iterations.
    seed : int
        Seed of the random initialisations.
    """

    method: str = "geiping"
    iterations: int = 1500
    lr: float = 0.1
    tv: float = 1e-1
    restarts: int = 2
    signed: bool = True
    boxed: bool = True
    decay: bool = True
    seed: int = 0

    def __post_init__(self):
        check_choice(self, "method", METHODS)
        check_int(self, "iterations")
        check_int(self, "restarts")
        if not self.lr > 0:
            raise ValueError(f"lr={self.lr!r} must be > 0")
        if not self.tv >= 0:
            raise ValueError(f"tv={self.tv!r} must be >= 0")

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class InversionResult:
    """Best reconstruction per target.

    Attributes
    ----------
    images : (K, b, C, H, W)
        In the normalised input space.
    objective : (K,)
        Final attack objective of the kept restart.
    cosine : (K,)
        Cosine similarity between the reconstruction's gradient and the message.
    """

    images: torch.Tensor
    objective: torch.Tensor
    cosine: torch.Tensor


def pixel_box(mean, std, device=None) -> tuple[torch.Tensor, torch.Tensor]:
    """Lower and upper bounds ``(1, 1, C, 1, 1)`` of valid pixels in normalised space."""
    m = torch.as_tensor(mean, dtype=torch.float32, device=device).view(1, 1, -1, 1, 1)
    s = torch.as_tensor(std, dtype=torch.float32, device=device).view(1, 1, -1, 1, 1)
    return (0 - m) / s, (1 - m) / s


def total_variation(x: torch.Tensor) -> torch.Tensor:
    """Anisotropic TV of images ``(K, b, C, H, W)``: mean |Δ_h| + mean |Δ_w|, per target."""
    dh = (x[..., 1:, :] - x[..., :-1, :]).abs().mean(dim=(1, 2, 3, 4))
    dw = (x[..., :, 1:] - x[..., :, :-1]).abs().mean(dim=(1, 2, 3, 4))
    return dh + dw


def infer_labels(message: torch.Tensor, module: nn.Module, layout: ParamLayout) -> torch.Tensor:
    """iDLG: the label of a single-image gradient message, per row of ``message`` (K, P).

    Uses the bias gradient of the last Linear layer when it has one (argmin of p − onehot),
    else the row sums of its weight gradient (valid when that layer's input is ≥ 0, as
    after a ReLU).
    """
    linears = [(n, m) for n, m in module.named_modules() if isinstance(m, nn.Linear)]
    if not linears:
        raise ValueError("infer_labels needs a model whose last layer is nn.Linear")
    name, last = linears[-1]
    parts = layout.unflatten(message)
    if last.bias is not None:
        return parts[f"{name}.bias"].argmin(dim=-1)
    return parts[f"{name}.weight"].sum(dim=-1).argmin(dim=-1)


def _gradient_fn(module: nn.Module, layout: ParamLayout):
    """``(θ (K, P), x (K, b, C, H, W), y (K, b)) -> (K, P)`` batch-mean gradients, one per
    target, differentiable in x (autograd through ``vmap(grad)``)."""

    def loss(theta, x, y):
        return F.cross_entropy(functional_call(module, layout.unflatten(theta), (x,)), y)

    return vmap(grad(loss))


def _cosine(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return (a * b).sum(-1) / (a.norm(dim=-1) * b.norm(dim=-1) + 1e-12)


def invert(
    module: nn.Module,
    models: torch.Tensor,
    messages: torch.Tensor,
    labels: torch.Tensor,
    image_shape: tuple[int, ...],
    box: tuple[torch.Tensor, torch.Tensor],
    config: InversionConfig = InversionConfig(),
    progress: bool | None = False,
) -> InversionResult:
    """Reconstruct the batch behind each of K messages.

    Parameters
    ----------
    module : nn.Module
        The architecture (its own parameter values are ignored).
    models : (K, P)
        Parameters each message was computed at.
    messages : (K, P)
        Intercepted gradient messages.
    labels : (K, b) long
        Labels of the b images behind each message (from :func:`infer_labels` or known).
    image_shape : (C, H, W)
    box : (lo, hi)
        Valid pixel range in normalised space, from :func:`pixel_box`.
    config : InversionConfig
    progress : bool or None
        Progress over the iterations (:class:`~dpdl_core.sim.progress.Progress`: a bar, or log
        lines where stderr is not a terminal); ``None`` leaves it to ``$DPDL_PROGRESS``.
    """
    for p in module.parameters():
        p.requires_grad_(False)
    layout = ParamLayout.from_module(module)
    K, b = labels.shape
    R = config.restarts
    dev = models.device
    grads_of = _gradient_fn(module, layout)
    theta = models.repeat_interleave(R, 0)
    target = messages.repeat_interleave(R, 0)
    y = labels.repeat_interleave(R, 0)
    lo, hi = (t.to(dev) for t in box)
    # Drawn on the CPU and moved: the same start on every device.
    gen = torch.Generator().manual_seed(config.seed)
    x = torch.randn((K * R, b, *image_shape), generator=gen).to(dev).requires_grad_(True)

    def objective():
        g = grads_of(theta, x, y)
        if config.method == "dlg":
            return (g - target).pow(2).sum(-1), g
        return 1 - _cosine(g, target) + config.tv * total_variation(x), g

    # L-BFGS evaluates the objective up to 20 times per step.
    steps = range(config.iterations if config.method == "geiping" else max(1, config.iterations // 20))
    bar = Progress(len(steps), f"inversion ({config.method}, {K} messages x {R} restarts)", "iteration",
                   progress=progress)
    if config.method == "geiping":
        opt = torch.optim.Adam([x], lr=config.lr)
        milestones = [int(config.iterations * f) for f in (3 / 8, 5 / 8, 7 / 8)] if config.decay else []
        sched = torch.optim.lr_scheduler.MultiStepLR(opt, milestones=milestones, gamma=0.1)
        for _ in steps:
            opt.zero_grad(set_to_none=True)
            obj, _ = objective()
            (gx,) = torch.autograd.grad(obj.sum(), x)
            x.grad = gx.sign() if config.signed else gx
            opt.step()
            sched.step()
            if config.boxed:
                with torch.no_grad():
                    x.copy_(torch.maximum(torch.minimum(x, hi), lo))
            bar.update(1)
    else:
        opt = torch.optim.LBFGS([x], lr=config.lr, max_iter=20, history_size=100, line_search_fn="strong_wolfe")

        def closure():
            opt.zero_grad(set_to_none=True)
            obj, _ = objective()
            total = obj.sum()
            total.backward()
            return total

        for _ in steps:
            opt.step(closure)
            bar.update(1)
    bar.close()
    with torch.no_grad():  # torch.func.grad still differentiates inside
        obj, g = objective()
    obj = torch.nan_to_num(obj.view(K, R), nan=float("inf"))
    best = obj.argmin(dim=1)
    pick = torch.arange(K, device=dev) * R + best
    return InversionResult(
        images=x.detach()[pick], objective=obj[torch.arange(K, device=dev), best], cosine=_cosine(g, target)[pick]
    )
