"""What every benchmark script writes: its rows plus the environment they were measured in."""
from __future__ import annotations

import json
import platform
from pathlib import Path

import torch

__all__ = ["write_results"]


def write_results(out: Path | None, rows: list[dict]) -> None:
    """Write ``{"environment": ..., "results": rows}`` as JSON to ``out`` (nothing if None)."""
    if out is None:
        return
    env = {
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "cpu": platform.processor() or platform.machine(),
        "python": platform.python_version(),
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"environment": env, "results": rows}, indent=2))
    print(f"wrote {out}")
