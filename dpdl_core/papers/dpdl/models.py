"""The models of the DPDL authors' released code (the ``authors`` variant), registered by name.

Layer lists and parameter counts are confirmed in ``docs/dpdl_authors_code.md``. The CIFAR-10
CNN comes twice: ``dpdl_cnn_authors_dropout`` as the authors' code has it, with its two
Dropout(0.4) layers (per-sample masks in every gradient pass: ``per_sample_strategy:
bookkeeping``), and ``dpdl_cnn_authors`` without them, which every per-sample kernel runs.
"""
from __future__ import annotations

from torch import nn

from ...sim import register_model

__all__ = ["cnn_authors", "cnn_authors_dropout", "lenet_authors"]


@register_model("dpdl_lenet_authors")
def lenet_authors(in_shape) -> nn.Module:
    """conv 1→6 5×5, pool, conv 6→16 5×5, pool, FC 256→120→84→10, ReLU: 44,426 parameters on MNIST."""
    c, h, _ = in_shape
    side = ((h - 4) // 2 - 4) // 2
    return nn.Sequential(
        nn.Conv2d(c, 6, 5), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(16 * side * side, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10),
    )


@register_model("dpdl_cnn_authors")
def cnn_authors(in_shape) -> nn.Module:
    """conv 3→16 3×3 pad 1, pool, conv 16→32 3×3 pad 1, pool, FC 2048→512→10 (no dropout):
    1,059,306 parameters on CIFAR-10."""
    c, h, _ = in_shape
    return nn.Sequential(
        nn.Conv2d(c, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * (h // 4) ** 2, 512), nn.ReLU(), nn.Linear(512, 10),
    )


@register_model("dpdl_cnn_authors_dropout")
def cnn_authors_dropout(in_shape) -> nn.Module:
    """The authors' ``CNN_cifar``: conv 3→16 3×3 pad 1, pool, conv 16→32 3×3 pad 1, pool,
    Dropout(0.4), FC 2048→512, ReLU, Dropout(0.4), FC 512→10: 1,059,306 parameters on CIFAR-10."""
    c, h, _ = in_shape
    return nn.Sequential(
        nn.Conv2d(c, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Dropout(0.4), nn.Linear(32 * (h // 4) ** 2, 512), nn.ReLU(), nn.Dropout(0.4),
        nn.Linear(512, 10),
    )
