"""Where a stored result was made: the package commit and the machine.

Recorded in every run's metadata so that a committed result can be traced to the code and
hardware that produced it (a GPU-made run is replayed on the CPU only to a tolerance).
"""
from __future__ import annotations

import functools
import platform
import subprocess
import sys
from pathlib import Path

from ..home import REPO_ROOT

__all__ = ["commit", "machine", "provenance"]

_REPO = REPO_ROOT


@functools.lru_cache(maxsize=1)
def commit() -> str:
    """``git rev-parse HEAD`` of the checkout the package runs from, ``+dirty`` when the
    package's own files have uncommitted changes; ``unknown`` outside a git checkout."""
    try:
        head = subprocess.run(["git", "-C", str(_REPO), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(_REPO), "status", "--porcelain", "--", "dpdl_core"],
                               capture_output=True, text=True, timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


@functools.lru_cache(maxsize=1)
def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine(device: str = "cpu") -> str:
    """The hardware a run used: the GPU's name on CUDA, else the CPU model."""
    if device.startswith("cuda"):
        import torch

        return torch.cuda.get_device_name(torch.device(device))
    return _cpu_model()


def provenance(device: str = "cpu") -> dict:
    """``commit``, ``machine``, ``python`` and, once torch is loaded, its intra-op ``threads``
    and ``cpu_capability`` (the instruction set its CPU kernels use: AVX2, AVX512, ...) for a
    run's metadata. Both change float rounding, so a bit-for-bit replay needs the same: two
    "AMD EPYC" machines, one with AVX-512 and one without, differ in the last bit of a loss."""
    out = {"commit": commit(), "machine": machine(device), "python": platform.python_version()}
    if "torch" in sys.modules:
        torch = sys.modules["torch"]
        out["threads"] = torch.get_num_threads()
        out["cpu_capability"] = torch.backends.cpu.get_cpu_capability()
    return out
