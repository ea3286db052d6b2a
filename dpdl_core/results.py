"""Results store: one gzip CSV per run, named by the config hash.

Each file starts with one ``#``-prefixed JSON line holding the config and run metadata
(σ, achieved ε, dataset provenance, wall time), followed by the history in long format:
``round, agent, metric, value`` (``agent`` is -1 for whole-network metrics such as the
average model's accuracy). Writes are atomic: a temp file in the same folder, then
``os.replace``, so an interrupted run never leaves a half-written result.
"""
from __future__ import annotations

import gzip
import io
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Iterable

import pandas as pd

__all__ = ["ResultStore", "default_results_dir"]

RESULTS_ENV = "DPDL_RESULTS_DIR"
COLUMNS = ["round", "agent", "metric", "value"]


def default_results_dir() -> Path:
    """``$DPDL_RESULTS_DIR`` or ``data/results`` in the repository."""
    env = os.environ.get(RESULTS_ENV)
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[1] / "data" / "results"


def atomic_write_bytes(path: Path, payload: bytes) -> None:
    """Write ``payload`` to ``path`` so readers see the old file or the whole new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(payload)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class ResultStore:
    """Folder of run files keyed by config hash.

    Parameters
    ----------
    root : path, optional
        Defaults to :func:`default_results_dir`.
    """

    def __init__(self, root: str | Path | None = None):
        self.root = Path(root) if root is not None else default_results_dir()

    def path(self, run_hash: str) -> Path:
        return self.root / f"{run_hash}.csv.gz"

    def has(self, run_hash: str) -> bool:
        return self.path(run_hash).exists()

    def save(self, run_hash: str, config: dict, history: pd.DataFrame, meta: dict[str, Any] | None = None) -> Path:
        """Store a run's long-format history with its config and metadata."""
        missing = [c for c in COLUMNS if c not in history.columns]
        if missing:
            raise ValueError(f"history lacks columns {missing}; expected {COLUMNS}")
        header = json.dumps({"hash": run_hash, "config": config, "meta": meta or {}}, sort_keys=True)
        buf = io.StringIO()
        buf.write("# " + header + "\n")
        history[COLUMNS].to_csv(buf, index=False)
        # mtime=0 keeps the bytes identical for identical results.
        payload = gzip.compress(buf.getvalue().encode(), mtime=0)
        path = self.path(run_hash)
        atomic_write_bytes(path, payload)
        return path

    def read_header(self, run_hash: str) -> dict:
        with gzip.open(self.path(run_hash), "rt") as f:
            return json.loads(f.readline()[2:])

    def load_run(self, run_hash: str) -> tuple[dict, pd.DataFrame]:
        """(header, history) of one run."""
        with gzip.open(self.path(run_hash), "rt") as f:
            header = json.loads(f.readline()[2:])
            history = pd.read_csv(f)
        return header, history

    def hashes(self) -> list[str]:
        return sorted(p.name[: -len(".csv.gz")] for p in self.root.glob("*.csv.gz"))

    def configs(self) -> pd.DataFrame:
        """One row per stored run: its hash, config fields and metadata (prefixed ``meta.``)."""
        rows = []
        for h in self.hashes():
            head = self.read_header(h)
            cfg = {k: v for k, v in head["config"].items() if k != "algo"}
            cfg.update({f"algo.{k}": v for k, v in head["config"].get("algo", {}).items()})
            cfg.update({f"meta.{k}": v for k, v in head["meta"].items() if not isinstance(v, (dict, list))})
            rows.append({"hash": h, **cfg})
        return pd.DataFrame(rows)

    def load(self, metrics: Iterable[str] | None = None, **filters) -> pd.DataFrame:
        """Histories of every run matching ``filters``, with their config fields as columns.

        Parameters
        ----------
        metrics : iterable of str, optional
            Keep only these metrics.
        **filters
            Config field = value (or list of allowed values); ``algo.NAME`` via a dict
            ``{"algo.alpha": 2}`` unpacked.
        """
        index = self.configs()
        if index.empty:
            return pd.DataFrame(columns=["hash", *COLUMNS])
        for key, want in filters.items():
            if key not in index.columns:
                raise KeyError(f"unknown filter field {key!r}; stored fields: {sorted(index.columns)}")
            allowed = want if isinstance(want, (list, tuple, set)) else [want]
            index = index[index[key].isin(allowed) | (index[key].isna() & any(a is None for a in allowed))]
        frames = []
        for _, row in index.iterrows():
            _, hist = self.load_run(row["hash"])
            if metrics is not None:
                hist = hist[hist["metric"].isin(list(metrics))]
            for col, val in row.items():
                hist[col] = val
            frames.append(hist)
        if not frames:
            return pd.DataFrame(columns=[*index.columns, *COLUMNS])
        return pd.concat(frames, ignore_index=True)
