"""PDSL's CNNs (§VI-A), registered by name. The paper gives kernels and layer counts, not
widths; we double channels per pooling stage (16, 32; FC 128), as for DPDL's CIFAR CNN.

``pdsl_mnist`` (MNIST)
    The same architecture as ``dpdl_cnn`` on 28×28 inputs: conv 1→16 3×3, ReLU, pool
    (28→26→13); conv 16→32 3×3, ReLU, pool (13→11→5); FC 800→10.
``pdsl_cifar`` (CIFAR-10)
    conv 3→16 5×5, ReLU, pool (32→28→14); conv 16→32 5×5, ReLU, pool (14→10→5);
    FC 800→128, ReLU; FC 128→10.
"""
from __future__ import annotations

from torch import nn

from ...sim import MODELS, conv_block, register_model, two_block_side

__all__ = ["pdsl_cifar"]

# "Two 3×3 convolutional layers ... followed by a fully connected layer": DPDL's CIFAR CNN.
register_model("pdsl_mnist")(MODELS["dpdl_cnn"])


@register_model("pdsl_cifar")
def pdsl_cifar(in_shape) -> nn.Module:
    c, h, _ = in_shape
    side = two_block_side(h, 5)
    return nn.Sequential(
        *conv_block(c, 16, 5),
        *conv_block(16, 32, 5),
        nn.Flatten(),
        nn.Linear(32 * side * side, 128),
        nn.ReLU(),
        nn.Linear(128, 10),
    )
