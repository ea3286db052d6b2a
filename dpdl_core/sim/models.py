"""Model registry: models by name. ReLU everywhere, no BatchNorm (per-sample DP needs per-sample
independence), no dropout (a deterministic functional forward for vmap).

Exact widths (where a paper leaves them open, the choice and reason are given):

``lenet`` (DPDL, MNIST)
    conv 1→6 5×5, ReLU, max-pool 2 (28→24→12); conv 6→16 5×5, ReLU, max-pool 2 (12→8→4);
    FC 256→10. 5,142 parameters. The paper names exactly these kernels and one FC layer.
``dpdl_cnn`` (DPDL, CIFAR-10)
    conv 3→16 3×3, ReLU, pool (32→30→15); conv 16→32 3×3, ReLU, pool (15→13→6); FC 1152→10.
    16,618 parameters. The paper gives kernels 3×3×3 and 16×3×3, so conv1 has 16 outputs;
    conv2's output width is unstated: 32 doubles the channels as the pooling halves the
    resolution, the usual CNN convention. No padding, as in the LeNet above.
``logreg``
    Multinomial logistic regression: flatten, FC d→10.

A paper's own models live in its package (``papers/<paper>/models.py``), registered by
name with :func:`register_model` (``conv_block`` and ``two_block_side`` are the shared
pieces); the two above stay here as the defaults of ``model: auto`` for MNIST and CIFAR-10,
which every baseline uses. :func:`build_model` loads the papers before it reports a name
unknown.
"""
from __future__ import annotations

import math
from typing import Callable

import torch
from torch import nn

from .data import input_shape
from .registry import load_plugins

__all__ = ["MODELS", "build_model", "conv_block", "count_parameters", "default_model", "register_model",
           "two_block_side"]


def conv_block(cin: int, cout: int, k: int, pad: int = 0) -> list[nn.Module]:
    return [nn.Conv2d(cin, cout, k, padding=pad), nn.ReLU(), nn.MaxPool2d(2)]


def two_block_side(h: int, k: int, pad: int = 0) -> int:
    """Spatial size after two (conv k×k, max-pool 2) blocks."""
    return ((h - k + 1 + 2 * pad) // 2 - k + 1 + 2 * pad) // 2


MODELS: dict[str, Callable[[tuple], nn.Module]] = {}
DEFAULT_MODELS: dict[str, str] = {}


def register_model(name: str, default_for: tuple[str, ...] = ()):
    """Function decorator: ``@register_model("name")`` on ``builder(in_shape) -> nn.Module``.

    ``default_for`` lists datasets whose ``model: auto`` means this model.
    """

    def deco(builder):
        if MODELS.get(name, builder) is not builder:
            raise ValueError(f"two models are named {name!r}")
        MODELS[name] = builder
        for dataset in default_for:
            DEFAULT_MODELS[dataset] = name
        return builder

    return deco


@register_model("lenet", default_for=("mnist",))
def lenet(in_shape) -> nn.Module:
    c, h, _ = in_shape
    side = two_block_side(h, 5)
    return nn.Sequential(*conv_block(c, 6, 5), *conv_block(6, 16, 5), nn.Flatten(), nn.Linear(16 * side * side, 10))


@register_model("dpdl_cnn", default_for=("cifar10",))
def cnn_3x3(in_shape) -> nn.Module:
    """Two 3×3 conv blocks (16, 32 channels) and one FC layer (DPDL's CIFAR-10 CNN, PDSL's
    MNIST CNN)."""
    c, h, _ = in_shape
    side = two_block_side(h, 3)
    return nn.Sequential(*conv_block(c, 16, 3), *conv_block(16, 32, 3), nn.Flatten(), nn.Linear(32 * side * side, 10))


@register_model("logreg")
def logreg(in_shape) -> nn.Module:
    return nn.Sequential(nn.Flatten(), nn.Linear(math.prod(in_shape), 10))


def default_model(dataset: str) -> str:
    """The model ``model: auto`` means for ``dataset``."""
    if dataset not in DEFAULT_MODELS:
        raise ValueError(f"dataset={dataset!r} has no default model; set model to one of {sorted(MODELS)}")
    return DEFAULT_MODELS[dataset]


def build_model(name: str, dataset: str = "mnist", *, seed: int | None = None) -> nn.Module:
    """Instantiate model ``name`` for ``dataset``'s input shape.

    Parameters
    ----------
    seed : int, optional
        Seeds the initialization through a private generator (global RNG untouched).
    """
    if name not in MODELS:
        load_plugins()  # papers register their own models
    if name not in MODELS:
        raise ValueError(f"model={name!r} is not known; allowed values: {sorted(MODELS)}")
    shape = input_shape(dataset)  # raises for an unknown dataset, naming the known ones
    if seed is None:
        return MODELS[name](shape)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return MODELS[name](shape)


def count_parameters(model: nn.Module) -> int:
    """Number of trainable scalars."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)
