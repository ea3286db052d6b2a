"""Whether long work shows a tqdm progress bar."""
from __future__ import annotations

import os
import sys

__all__ = ["PROGRESS_ENV", "progress_enabled"]

PROGRESS_ENV = "DPDL_PROGRESS"


def progress_enabled(progress: bool | None = None) -> bool:
    """``progress`` if given, else ``$DPDL_PROGRESS`` (0, false or no disable bars: tests and
    CI), else whether stderr is a terminal."""
    if progress is not None:
        return progress
    env = os.environ.get(PROGRESS_ENV)
    if env is not None:
        return env not in ("0", "false", "no", "")
    return sys.stderr.isatty()
