"""Timing helpers shared by the benchmark scripts."""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch

__all__ = ["interleaved", "parse_common", "sync"]


def sync(device) -> None:
    """Wait for the device's queued work, so a host clock read after it times the work
    (GPU kernels run asynchronously; a no-op on the CPU)."""
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


def interleaved(fns: dict, repeats: int, device="cpu") -> dict:
    """Minimum time of each function over ``repeats`` rounds, the functions taking turns
    within each round so that drift in machine load hits all of them alike (each called once
    first, to warm up)."""
    for fn in fns.values():
        fn()
    times = {k: [] for k in fns}
    for _ in range(repeats):
        for k, fn in fns.items():
            sync(device)
            t0 = time.perf_counter()
            fn()
            sync(device)
            times[k].append(time.perf_counter() - t0)
    return {k: min(v) for k, v in times.items()}


def parse_common(parser: argparse.ArgumentParser, argv=None) -> argparse.Namespace:
    """Add the options every interleaved benchmark takes (``--repeats``, ``--threads``,
    ``--device``, ``--out``), parse ``argv`` and set torch's thread count."""
    parser.add_argument("--repeats", type=int, default=3, help="interleaved repetitions; the minimum is kept")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1, as `study run`)")
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--out", type=Path, help="write the rows as JSON here")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    return args
