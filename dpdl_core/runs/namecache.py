"""A cache of the registries' names, so that a bad config value is rejected before torch loads.

The allowed values of ``dataset``, ``algorithm``, ``topology`` and the other named fields
come from registries that the papers fill when they import — torch, pandas and scipy
included, seconds of start-up. The command line checks a config against this cache first
and answers a typo at once; the full check, with the registries loaded, still runs before
anything is computed, and it (re)writes the cache.

The cache lives in ``$XDG_CACHE_HOME/dpdl-replication/`` (``~/.cache`` by default) under a
key made of the package version and the size and modification time of every source file
of the package and of ``$DPDL_PAPERS_PATH``: editing or adding a plug-in makes a new key,
so a stale list is never used. It is an optimisation only: a folder that cannot be read or
written means the slow path, never an error.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

from ..home import PACKAGE_DIR, __version__

__all__ = ["CACHE_ENV", "load", "save"]

CACHE_ENV = "XDG_CACHE_HOME"
_SOURCES = (".py", ".yaml")


def _roots() -> list[Path]:
    extra = os.environ.get("DPDL_PAPERS_PATH", "")
    return [PACKAGE_DIR] + [Path(p) for p in extra.split(os.pathsep) if p]


def _key() -> str:
    """Digest of the version and every source file's path, size and mtime (a few ms)."""
    h = hashlib.sha256(__version__.encode())
    for root in _roots():
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(files):
                if name.endswith(_SOURCES):
                    st = os.stat(os.path.join(folder, name))
                    h.update(f"{folder}/{name}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:16]


def _path() -> Path:
    base = os.environ.get(CACHE_ENV) or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "dpdl-replication" / f"choices-{_key()}.json"


def load() -> dict[str, list] | None:
    """The cached ``{field: allowed values}``, or ``None`` when there is none for this source tree."""
    try:
        return json.loads(_path().read_text())
    except (OSError, ValueError):
        return None


def save(choices: dict[str, list]) -> None:
    """Store ``choices`` for this source tree (atomically; any failure is ignored)."""
    try:
        path = _path()
        if path.exists():
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, suffix=".tmp") as f:
            json.dump(choices, f)
        os.replace(f.name, path)
    except OSError:
        pass
