"""Reconstruction quality: MSE, PSNR and SSIM per image.

Two spaces, both reported:

* the normalised input space the model sees ((x − μ)/s per channel) — MSE and PSNR with
  the peak taken as the width of the valid normalised pixel range
  (max_c (1 − μ_c)/s_c − min_c (−μ_c/s_c): 3.25 for MNIST, 4.12 for CIFAR-10). The DPDL
  paper's MSE values above 1 can only come from this space;
* pixels denormalised and clamped to [0, 1] — MSE, PSNR and SSIM with ``data_range=1``.

SSIM is torchmetrics' ``structural_similarity_index_measure`` with the Gaussian window of
Wang et al. (11×11, σ = 1.5, K1 = 0.01, K2 = 0.03), averaged over channels and pixels.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import torch
from torchmetrics.functional.image import structural_similarity_index_measure

from .data import DatasetSpec

__all__ = ["mse", "psnr", "ssim", "normalised_peak", "reconstruction_metrics", "SSIM_SETTINGS", "METRIC_NOTE"]

SSIM_SETTINGS = {"gaussian_kernel": True, "kernel_size": 11, "sigma": 1.5, "k1": 0.01, "k2": 0.03}
METRIC_NOTE = (
    "MSE/PSNR in the normalised input space (PSNR peak = normalised pixel range) and, marked [0,1], "
    "on denormalised pixels clamped to [0, 1]; SSIM by torchmetrics 1.x (Gaussian 11x11, sigma 1.5, "
    "data_range 1) on [0, 1] pixels"
)


def mse(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Mean squared error per image of ``(n, C, H, W)`` tensors."""
    return (a - b).pow(2).flatten(1).mean(1)


def psnr(mse_values: torch.Tensor, peak: float) -> torch.Tensor:
    """10·log10(peak²/MSE) in dB (inf for a perfect match)."""
    return 10 * torch.log10(peak**2 / mse_values)


def ssim(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """SSIM per image of ``(n, C, H, W)`` tensors in [0, 1]."""
    return structural_similarity_index_measure(a, b, data_range=1.0, reduction="none", **SSIM_SETTINGS)


def normalised_peak(spec: DatasetSpec) -> float:
    """Width of the valid pixel range in normalised space."""
    m, s = np.asarray(spec.mean), np.asarray(spec.std)
    return float(((1 - m) / s).max() - (-m / s).min())


def reconstruction_metrics(recon: torch.Tensor, truth: torch.Tensor, spec: DatasetSpec) -> pd.DataFrame:
    """Per-image metrics of reconstructions against ground truth, both normalised.

    Parameters
    ----------
    recon, truth : (n, C, H, W)
        Images in the normalised input space.
    spec : DatasetSpec
        Normalisation constants of the dataset.

    Returns
    -------
    DataFrame with columns ``MSE, PSNR`` (normalised space) and ``MSE_01, PSNR_01, SSIM``
    (pixels in [0, 1]), one row per image.
    """
    m = torch.as_tensor(spec.mean, dtype=recon.dtype).view(1, -1, 1, 1)
    s = torch.as_tensor(spec.std, dtype=recon.dtype).view(1, -1, 1, 1)
    recon, truth = recon.detach().cpu().float(), truth.detach().cpu().float()
    r01 = (recon * s + m).clamp(0, 1)
    t01 = (truth * s + m).clamp(0, 1)
    e_norm, e01 = mse(recon, truth), mse(r01, t01)
    return pd.DataFrame(
        {
            "MSE": e_norm.numpy(),
            "PSNR": psnr(e_norm, normalised_peak(spec)).numpy(),
            "MSE_01": e01.numpy(),
            "PSNR_01": psnr(e01, 1.0).numpy(),
            "SSIM": ssim(r01, t01).numpy(),
        }
    )
