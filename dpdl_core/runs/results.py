"""Results store: one gzip CSV per run, named by the config hash.

Each file starts with one ``#``-prefixed JSON line holding the config and run metadata
(σ, achieved ε, dataset provenance, wall time), followed by the history in long format:
``round, agent, metric, value`` (``agent`` is -1 for whole-network metrics such as the
average model's accuracy). Writes are atomic: a temp file in the same folder, fsynced,
then ``os.replace`` (and the folder fsynced), so an interrupted run never leaves a
half-written result.

Integrity
---------
The header carries ``"format": 2`` and ``"sha256"``: the SHA-256 of the header's
canonical JSON without that key (``json.dumps(..., sort_keys=True)``), a newline, and the
CSV body bytes, so an edit of the config, the metadata or any history value is caught,
as well as a truncated file or a broken gzip stream. Every read (:meth:`ResultStore.has`,
:meth:`~ResultStore.hashes`, :meth:`~ResultStore.read_header`,
:meth:`~ResultStore.load_run`, :meth:`~ResultStore.configs`, :meth:`~ResultStore.load`)
verifies the file; :meth:`~ResultStore.load_run` always re-hashes the bytes it parses,
the others trust a file version (device, inode, size, mtime) already verified in this
process. A file that fails is reported with a :class:`CorruptResultWarning` naming it,
renamed to ``<hash>.csv.gz.corrupt`` (kept for inspection, never read again) and treated
as missing, so the next run or sweep recomputes it; the readers that return data raise
:class:`CorruptResultError` (a ``FileNotFoundError``) for it. A store opened
``read_only`` (what ``answer`` and ``results`` read committed files through) writes
nothing: a failed file stays where it is and counts as missing, and
:meth:`~ResultStore.damaged` lists such files with what is wrong with each.

Legacy files (no ``format`` key: written before checksums existed) are accepted: their
gzip stream's own CRC-32 and length are checked on decompression, which catches
truncation and damaged bytes but not a deliberate decompress–edit–recompress. They are
accepted rather than recomputed because a stored run's hash already pins its config and
package version, and recomputing every earlier result would cost hours for no gain in
the common case; re-save one (``run(config, force=True)``) to give it a checksum.

Each run also has a lease (:meth:`ResultStore.lease`, an ``flock`` in ``locks/``) that
:func:`dpdl_core.runs.runner.run` holds while it computes and stores the run, so two sweeps on
one folder never compute or write a run twice, and an append-only ``journal.jsonl`` of
what each process computed, stored or found corrupt. :mod:`dpdl_core.runs.slots` is the one
protocol (stored? lease, resume, checkpoint, finish) that training runs, study jobs and
attack cells follow in a store; :meth:`ResultStore.read_verified` is the check and the
moving aside that every kind of stored file goes through.
"""
from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import socket
import tempfile
import time
import warnings
import zlib
from pathlib import Path
from typing import Any, Callable, Iterable, TypeVar

import pandas as pd

from ..home import REPO_ROOT
from .locking import Lease

__all__ = ["CorruptResultError", "CorruptResultWarning", "DamagedFile", "ResultStore", "atomic_write_bytes",
           "default_results_dir", "remove_temp_files_of"]

RESULTS_ENV = "DPDL_RESULTS_DIR"
COLUMNS = ["round", "agent", "metric", "value"]
FORMAT = 2  # header carries "format" and "sha256"; files without "format" are format 1
SUFFIX = ".csv.gz"

# Path -> (file version, header line) of files verified in this process: has() and
# read_header() then need one stat, not a full read, for a file already checked.
_VERIFIED: dict[str, tuple[tuple, str]] = {}
T = TypeVar("T")


class CorruptResultWarning(UserWarning):
    """A stored result failed its integrity check and was moved aside."""


class CorruptResultError(FileNotFoundError):
    """A stored result failed its integrity check: it is treated as missing."""


def diverged_round(meta: dict[str, Any], last_round: int) -> int | None:
    """The first round at which a stored run's training loss exploded, or None.

    Parameters
    ----------
    meta : dict
        The run's stored ``meta``.
    last_round : int
        The last round its history holds.
    """
    if not meta["diverged"]:
        return None
    # runs stored before diverged_at existed were stopped at the round they diverged
    return int(meta.get("diverged_at", last_round))


def default_results_dir() -> Path:
    """``$DPDL_RESULTS_DIR`` or ``data/results`` in the repository."""
    env = os.environ.get(RESULTS_ENV)
    if env:
        return Path(env)
    return REPO_ROOT / "data" / "results"


def atomic_write_bytes(path: Path, payload: bytes) -> None:
    """Write ``payload`` to ``path`` so readers see the old file or the whole new one.

    The temp file is named ``.<name>.<random>.tmp``, so a writer killed before the
    rename leaves a file no reader looks at (:meth:`ResultStore.remove_temp_files`
    clears those of a run).
    """
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
    # The rename itself is durable only once the folder is synced.
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def remove_temp_files_of(*paths: Path) -> None:
    """Delete the temp files that killed :func:`atomic_write_bytes` calls for ``paths`` left;
    call while holding the lease of the work they belong to."""
    for path in paths:
        for tmp in path.parent.glob(f".{path.name}.*.tmp"):
            tmp.unlink(missing_ok=True)


def _digest(header: dict, body: bytes) -> str:
    """SHA-256 of a header (without its ``sha256`` key) and the CSV body."""
    h = hashlib.sha256(json.dumps(header, sort_keys=True).encode())
    h.update(b"\n")
    h.update(body)
    return h.hexdigest()


def _version(st: os.stat_result) -> tuple:
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


class DamagedFile(Exception):
    """Why a stored file failed verification (:meth:`ResultStore.read_verified` turns it into
    a warning, a rename and a :class:`CorruptResultError`)."""


class ResultStore:
    """Folder of run files keyed by config hash.

    Parameters
    ----------
    root : path, optional
        Defaults to :func:`default_results_dir`.
    read_only : bool
        Never write to the folder: a file that fails its integrity check is left in place
        and counts as missing, without a warning (:meth:`damaged` lists those files), and
        :meth:`save` and :meth:`log_event` raise ``PermissionError``. For readers of files
        that are not theirs to change, such as a committed study store.
    """

    def __init__(self, root: str | Path | None = None, *, read_only: bool = False):
        self.root = Path(root) if root is not None else default_results_dir()
        self.read_only = read_only

    def path(self, run_hash: str) -> Path:
        return self.root / f"{run_hash}{SUFFIX}"

    @property
    def checkpoint_dir(self) -> Path:
        """The folder of unfinished runs' checkpoints (and jobs' partial work)."""
        return self.root / "checkpoints"

    def checkpoint_path(self, run_hash: str) -> Path:
        """Where :func:`dpdl_core.runs.runner.run` keeps the run's resumable checkpoint."""
        return self.checkpoint_dir / f"{run_hash}.pt"

    def lease(self, run_hash: str) -> Lease:
        """The run's exclusive lease: hold it to compute, store or move aside the run."""
        return Lease(self.root / "locks" / f"{run_hash}.lock", what=f"run {run_hash} in {self.root}")

    # -- writing --------------------------------------------------------------------------
    def _writable(self) -> None:
        if self.read_only:
            raise PermissionError(f"the results store {self.root} was opened read-only")

    def save(self, run_hash: str, config: dict, history: pd.DataFrame, meta: dict[str, Any] | None = None) -> Path:
        """Store a run's long-format history with its config, metadata and checksum."""
        self._writable()
        missing = [c for c in COLUMNS if c not in history.columns]
        if missing:
            raise ValueError(f"history lacks columns {missing}; expected {COLUMNS}")
        body = history[COLUMNS].to_csv(index=False).encode()
        header = {"hash": run_hash, "config": config, "meta": meta or {}, "format": FORMAT}
        # The checksum is taken over the header as a reader will parse it back (JSON turns
        # tuples into lists and int keys into strings, which would change the sort order).
        header = json.loads(json.dumps(header))
        header["sha256"] = _digest(header, body)
        text = b"# " + json.dumps(header, sort_keys=True).encode() + b"\n" + body
        # mtime=0 keeps the bytes identical for identical results.
        path = self.path(run_hash)
        atomic_write_bytes(path, gzip.compress(text, mtime=0))
        return path

    def remove_temp_files(self, run_hash: str) -> None:
        """Delete temp files a killed writer of this run left; call while holding its lease."""
        remove_temp_files_of(self.path(run_hash), self.checkpoint_path(run_hash))

    def log_event(self, event: str, run_hash: str, **info) -> None:
        """Append one line to ``journal.jsonl``: who did what to which run, and when.

        One ``write`` on an ``O_APPEND`` descriptor, so lines from concurrent processes
        never interleave.
        """
        self._writable()
        line = json.dumps({"time": time.time(), "host": socket.gethostname(), "pid": os.getpid(),
                           "event": event, "hash": run_hash, **info}, sort_keys=True) + "\n"
        self.root.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.root / "journal.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)

    def journal(self) -> pd.DataFrame:
        """The journal's events, one row each (empty when nothing was logged).

        Safe while writers append: a last line not yet complete is left out.
        """
        path = self.root / "journal.jsonl"
        text = path.read_text() if path.exists() else ""
        lines = text[: text.rfind("\n") + 1].splitlines()
        return pd.DataFrame([json.loads(line) for line in lines], columns=None if lines else
                            ["time", "host", "pid", "event", "hash"])

    # -- reading and verifying ---------------------------------------------------------
    def _read(self, run_hash: str) -> tuple[dict, bytes]:
        """Verified (header, CSV body) of a run.

        Raises
        ------
        FileNotFoundError
            No file; :class:`CorruptResultError` when the file failed (and was moved aside
            unless the store is read-only).
        """
        path = self.path(run_hash)
        version, (header_line, body) = self.read_verified(run_hash, path, lambda raw: self._verify(run_hash, raw))
        _VERIFIED[os.fspath(path)] = (version, header_line)
        return json.loads(header_line), body

    def read_verified(self, key: str, path: Path, verify: Callable[[bytes], T]) -> tuple[tuple, T]:
        """(file version, ``verify(bytes)``) of one read of ``path``, a file of the work ``key``.

        Raises
        ------
        FileNotFoundError
            No file; :class:`CorruptResultError` when ``verify`` raised :class:`DamagedFile`:
            the file was then moved aside (:meth:`_quarantine`) unless the store is read-only.
        """
        version, raw = self._raw(path)
        try:
            return version, verify(raw)
        except DamagedFile as exc:
            outcome = "left in place: the store is read-only" if self.read_only else \
                self._quarantine(key, version, str(exc), path)
            raise CorruptResultError(f"stored result {path} is corrupt ({exc}); {outcome}") from None

    @staticmethod
    def _raw(path: Path) -> tuple[tuple, bytes]:
        """(file version, bytes) of one read of ``path``."""
        with open(path, "rb") as f:
            return _version(os.fstat(f.fileno())), f.read()

    @staticmethod
    def _verify(run_hash: str, raw: bytes) -> tuple[str, bytes]:
        try:
            text = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as exc:  # BadGzipFile is an OSError
            raise DamagedFile(f"unreadable gzip: {exc}") from None
        first, sep, body = text.partition(b"\n")
        try:
            if not (sep and first.startswith(b"# ")):
                raise ValueError("no '# {json}' header line")
            header_line = first[2:].decode()
            header = json.loads(header_line)
            if not isinstance(header, dict):
                raise ValueError("header is not a JSON object")
        except ValueError as exc:  # includes JSON and UTF-8 errors
            raise DamagedFile(f"bad header: {exc}") from None
        if header.get("hash") != run_hash:
            raise DamagedFile(f"header names run {header.get('hash')!r}, not {run_hash!r}")
        fmt = header.get("format", 1)
        if fmt == 1:  # legacy: gzip's CRC-32 was checked above; the body must parse
            try:
                pd.read_csv(io.BytesIO(body), nrows=1)
            except (ValueError, pd.errors.ParserError) as exc:
                raise DamagedFile(f"unreadable history: {exc}") from None
        elif fmt == FORMAT:
            stored = header.pop("sha256", None)
            if stored != _digest(header, body):
                raise DamagedFile("checksum mismatch: the file was edited or damaged after it was written")
        else:
            # Not damage: a newer package wrote it. Refuse loudly instead of moving it aside.
            raise ValueError(f"stored result for run {run_hash} has format {fmt!r}; this package reads "
                             f"formats 1-{FORMAT}: upgrade dpdl_core to read it")
        return header_line, body

    def _quarantine(self, run_hash: str, version: tuple, reason: str, path: Path | None = None) -> str:
        """Rename a failed file (default: the run's result file) to ``*.corrupt`` unless it
        changed since it was read; warn."""
        path = path or self.path(run_hash)
        lease = self.lease(run_hash)
        try:
            if not lease.acquire(blocking=False):
                # Its leaseholder is recomputing the run and will replace the file.
                outcome = "left in place: another process holds the run's lease and is rewriting it"
            else:
                try:
                    outcome = self._move_aside(run_hash, version, reason, path)
                finally:
                    lease.release()
        except OSError as exc:  # a read-only store: reading must still work, and skip the file
            outcome = f"left in place, could not be moved aside ({exc})"
        _VERIFIED.pop(os.fspath(path), None)
        message = (f"stored result {path} is corrupt ({reason}); {outcome}; the run counts as missing "
                   f"and will be recomputed")
        warnings.warn(message, CorruptResultWarning, stacklevel=3)
        return outcome

    def _move_aside(self, run_hash: str, version: tuple, reason: str, path: Path) -> str:
        """Rename the run's file ``path`` to ``*.corrupt`` if it is still the version that failed."""
        try:
            unchanged = _version(os.stat(path)) == version
        except FileNotFoundError:
            unchanged = False
        if not unchanged:
            return "already replaced by another process"
        dest = path.with_name(path.name + ".corrupt")
        n = 1
        while dest.exists():  # keep every damaged copy for inspection
            n += 1
            dest = path.with_name(f"{path.name}.{n}.corrupt")
        os.replace(path, dest)
        self.log_event("corrupt", run_hash, reason=reason, moved_to=dest.name)
        return f"moved to {dest.name}"

    def _checked_header(self, run_hash: str) -> str:
        """Header line of a verified file, from this process's cache when it is current."""
        path = self.path(run_hash)
        known = _VERIFIED.get(os.fspath(path))
        if known is not None and known[0] == _version(os.stat(path)):
            return known[1]
        self._read(run_hash)
        return _VERIFIED[os.fspath(path)][1]

    def has(self, run_hash: str) -> bool:
        """Whether the run is stored and passes its integrity check (a failed file is moved aside)."""
        try:
            self._checked_header(run_hash)
        except FileNotFoundError:  # includes CorruptResultError
            return False
        return True

    def read_header(self, run_hash: str) -> dict:
        """The verified header of one run (config, meta, format, checksum)."""
        return json.loads(self._checked_header(run_hash))

    def load_run(self, run_hash: str) -> tuple[dict, pd.DataFrame]:
        """(header, history) of one run, its bytes verified as they are parsed."""
        header, body = self._read(run_hash)
        return header, pd.read_csv(io.BytesIO(body))

    def _names(self) -> list[str]:
        """Hashes of the run files in the folder, verified or not (temp files excluded)."""
        return sorted(p.name[: -len(SUFFIX)] for p in self.root.glob(f"*{SUFFIX}") if not p.name.startswith("."))

    def hashes(self) -> list[str]:
        """Hashes of the complete, verified runs (temp files and failed files excluded)."""
        return [h for h in self._names() if self.has(h)]

    def damaged(self) -> dict[Path, str]:
        """Every run file that fails its integrity check, with what is wrong with it.

        Reads every file and changes none, whether or not the store is read-only; the files
        that pass are remembered as verified, so reading them next costs one ``stat``.
        """
        found = {}
        for h in self._names():
            path = self.path(h)
            try:
                version, raw = self._raw(path)
            except FileNotFoundError:  # removed since the listing: nothing to report
                continue
            try:
                header_line, _ = self._verify(h, raw)
            except DamagedFile as exc:
                found[path] = str(exc)
                continue
            _VERIFIED[os.fspath(path)] = (version, header_line)
        return found

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
