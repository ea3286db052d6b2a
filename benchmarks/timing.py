"""Timing helpers shared by the benchmark scripts."""
from __future__ import annotations

import torch

__all__ = ["sync"]


def sync(device) -> None:
    """Wait for the device's queued work, so a host clock read after it times the work
    (GPU kernels run asynchronously; a no-op on the CPU)."""
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)
