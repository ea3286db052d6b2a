"""LEASGD's models (§4: "three-layer" networks; widths unstated), registered by name.

``leasgd_mlp`` (MNIST)
    FC 784→256, ReLU; FC 256→128, ReLU; FC 128→10.
``leasgd_cnn`` (CIFAR-10)
    conv 3→32 5×5 pad 2, ReLU, pool (32→16); conv 32→64 5×5 pad 2, ReLU, pool (16→8);
    FC 4096→10.
"""
from __future__ import annotations

import math

from torch import nn

from ...sim import conv_block, register_model

__all__ = ["leasgd_cnn", "leasgd_mlp"]


@register_model("leasgd_mlp")
def leasgd_mlp(in_shape) -> nn.Module:
    d = math.prod(in_shape)
    return nn.Sequential(nn.Flatten(), nn.Linear(d, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10))


@register_model("leasgd_cnn")
def leasgd_cnn(in_shape) -> nn.Module:
    c, h, _ = in_shape
    return nn.Sequential(
        *conv_block(c, 32, 5, pad=2), *conv_block(32, 64, 5, pad=2), nn.Flatten(), nn.Linear(64 * (h // 4) ** 2, 10)
    )
