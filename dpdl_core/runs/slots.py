"""Slots: the one protocol of durable work in a results store.

Training runs, study jobs and attack cells take minutes to hours, and each must survive a
kill, a second worker on the same folder and a damaged file. Each is a :class:`Slot` of a
:class:`~dpdl_core.runs.results.ResultStore`, named by its key (a hash), and goes through the
same steps:

stored?
    :meth:`Slot.stored` reads the finished result, verified against its checksum. A damaged
    file is reported with a :class:`~dpdl_core.runs.results.CorruptResultWarning`, renamed
    ``*.corrupt`` and counts as missing, so the work is done again.
lease
    :meth:`Slot.held` takes the slot's lease (:meth:`ResultStore.lease`: an ``flock`` that the
    kernel drops when its holder dies), waiting for another holder, then asks *stored?* again
    (the holder it waited for may have finished the work) and deletes the temp files that a
    killed writer left. :meth:`Slot.busy` asks, without waiting, whether another process holds
    the lease (a study worker then skips the work instead of waiting).
resume, checkpoint
    :meth:`Slot.resume` reads the partial work that an earlier attempt kept (a run's checkpoint,
    an attack cell's finished training); one that cannot be used is renamed ``*.refused`` with a
    :class:`CheckpointRefusedWarning` and the work starts afresh. :meth:`Slot.checkpoint` writes
    partial work atomically (a temp file, fsynced, then renamed).
finish
    :meth:`Slot.finish` stores the result with its checksum, logs ``stored`` to the store's
    ``journal.jsonl`` and tidies: deletes the partial work and temp files (:meth:`Slot.tidy`).
    :meth:`Slot.tidy_if_free` clears what a process killed between storing and tidying left.

:class:`RunSlot` is a training run (:func:`dpdl_core.runs.runner.run`, the Ray executor's
driver) or a study job: its result is the store's checksummed gzip CSV ``<hash>.csv.gz``, its
checkpoint ``checkpoints/<hash>.pt``, a job's partial work the folder ``checkpoints/<hash>/``.
:class:`ObjectSlot` holds one Python object, such as the DPDL paper's attack cells: its result is
``<folder>/<key>.pt`` and its partial work ``<folder>/<key>.<stage>.pt``, each a ``torch.save``
payload behind one line ``#dpdl-object sha256=<hex>\\n`` (the payload's SHA-256). A file without
that line is legacy, written before objects carried checksums, and is read as it is: torch's
zip archive checks its records' CRC-32 as it loads, which catches truncation and most damaged
bytes but not a deliberate edit. :class:`JsonSlot` holds one JSON document (a privacy audit,
``results/audit/<key>.json``) with its checksum as the document's own ``sha256`` key; a
document without it is legacy and read as it is. Its partial work (an audit's checkpoint) is
an :class:`ObjectSlot`'s: ``<folder>/<key>.<stage>.pt``.
"""
from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import shutil
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd

from ..home import __version__
from .locking import Lease
from .results import DamagedFile, ResultStore, atomic_write_bytes, remove_temp_files_of

__all__ = ["CheckpointRefusedWarning", "JsonSlot", "ObjectSlot", "RunSlot", "SaveFailed", "Slot", "read_checkpoint"]

OBJECT_MAGIC = b"#dpdl-object sha256="


class CheckpointRefusedWarning(UserWarning):
    """A checkpoint of another package version or config (or an unreadable one) was set aside."""


class SaveFailed(OSError):
    """:meth:`Slot.finish` could not write the result (disk full, read-only folder): nothing
    new is stored and the partial work is kept. Carries the write's ``errno``, ``strerror``
    and ``filename``."""


class Slot:
    """One piece of durable work in ``store``, named by ``key``; subclasses say where its
    result and partial work live and how they are read and written (module docstring)."""

    def __init__(self, store: ResultStore, key: str):
        self.store, self.key = store, key

    # -- where it lives (subclasses) ------------------------------------------------------
    @property
    def result_path(self) -> Path:
        """The finished result's file."""
        raise NotImplementedError

    def partial_paths(self) -> list[Path]:
        """Every file or folder partial work may be kept in (existing or not)."""
        raise NotImplementedError

    def stored(self) -> Any | None:
        """The verified finished result, or None (absent, or damaged and moved aside)."""
        raise NotImplementedError

    def has(self) -> bool:
        """Whether the result is stored and passes its integrity check."""
        return self.stored() is not None

    # -- lease ------------------------------------------------------------------------------
    def lease(self) -> Lease:
        """The slot's exclusive lease: hold it to compute, store or tidy the work."""
        return self.store.lease(self.key)

    def busy(self) -> bool:
        """Whether another process (or thread) holds the lease now; never waits."""
        lease = self.lease()
        if lease.acquire(blocking=False):
            lease.release()
            return False
        return True

    @contextlib.contextmanager
    def held(self, force: bool = False) -> Iterator[Any | None]:
        """Hold the lease (waiting for another holder) and yield what is stored by then:
        None (always, with ``force``) means compute the work and :meth:`finish` it here."""
        with self.lease():
            found = None if force else self.stored()
            if found is None:
                self.remove_temp_files()
            yield found

    # -- partial work -------------------------------------------------------------------------
    def partial(self) -> Path | None:
        """The first existing file or folder of partial work, or None."""
        return next((p for p in self.partial_paths() if p.exists()), None)

    def _refuse(self, path: Path, problem: str, then: str) -> None:
        """Set unusable partial work aside as ``*.refused``, log it and warn."""
        refused = path.with_name(path.name + ".refused")
        os.replace(path, refused)
        self.store.log_event("checkpoint_refused", self.key, reason=problem)
        warnings.warn(f"checkpoint {path} refused ({problem}); moved to {refused.name}; {then}",
                      CheckpointRefusedWarning, stacklevel=4)

    # -- start, finish and tidy ------------------------------------------------------------
    def begin(self, **info) -> None:
        """Journal that the work is being computed (with ``info``, e.g. the round it resumes
        from); call while holding the lease."""
        self.store.log_event("computing", self.key, **info)

    def _finished(self, **info) -> None:
        """After the result is stored: journal it and tidy."""
        self.store.log_event("stored", self.key, **info)
        self.tidy()

    def remove_temp_files(self) -> None:
        """Delete the temp files a killed writer of the result or the partial work left."""
        remove_temp_files_of(self.result_path, *self.partial_paths())

    def tidy(self) -> None:
        """Delete the partial work and temp files; call while holding the lease."""
        for path in self.partial_paths():
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)
        self.remove_temp_files()

    def tidy_if_free(self) -> None:
        """:meth:`tidy`, unless another process holds the lease (it is at work there); cheap
        when there is nothing to tidy."""
        lease = self.lease()
        if self.partial() is None and not lease.path.exists():
            return
        if lease.acquire(blocking=False):
            try:
                self.tidy()
            finally:
                lease.release()


def _save_or_raise(write, *args) -> Path:
    """``write(*args)``, an ``OSError`` turned into :class:`SaveFailed`."""
    try:
        return write(*args)
    except OSError as exc:
        failed = SaveFailed(*exc.args)
        if exc.filename is not None:
            failed.filename = exc.filename
        raise failed from exc


# -- training runs and study jobs -----------------------------------------------------------


def read_checkpoint(path: str | Path, run_hash: str) -> tuple[dict | None, str | None]:
    """Read a run's checkpoint without changing anything: ``(payload, None)`` when it belongs
    to this package version and to run ``run_hash``, else ``(None, why it cannot be used)``."""
    import torch

    # A GPU run's checkpoint holds CUDA tensors: where there is no GPU (a CPU worker's plan,
    # CI's check of the committed checkpoints) it is read onto the CPU; a GPU resumes it as saved.
    where = None if torch.cuda.is_available() else "cpu"
    try:
        saved = torch.load(path, weights_only=False, map_location=where)
    except Exception as exc:  # unpickling fails in many ways; every one means "unusable"
        return None, f"unreadable: {type(exc).__name__}: {exc}"
    if not isinstance(saved, dict) or "version" not in saved:
        return None, f"written by a dpdl_core older than {__version__} (no version recorded)"
    if saved["version"] != __version__:
        return None, f"written by dpdl_core {saved['version']}, this is {__version__}"
    if saved.get("config_hash") != run_hash:
        return None, f"written for run {saved.get('config_hash')}, not {run_hash}"
    if saved.get("rng_device") != "cpu":
        return None, "its random streams were drawn on the GPU (runs now draw them on the CPU on every device)"
    return saved, None


class RunSlot(Slot):
    """A training run or a study job, named by its hash: its result is the store's gzip CSV
    (:meth:`ResultStore.save`), a run's checkpoint ``checkpoints/<hash>.pt`` and a job's partial
    work the folder ``checkpoints/<hash>/``."""

    @property
    def result_path(self) -> Path:
        return self.store.path(self.key)

    @property
    def checkpoint_path(self) -> Path:
        """A training run's checkpoint."""
        return self.store.checkpoint_path(self.key)

    @property
    def partial_dir(self) -> Path:
        """A job's folder of partial work (:meth:`dpdl_core.runs.studies.Job.compute`)."""
        return self.checkpoint_path.with_suffix("")

    def partial_paths(self) -> list[Path]:
        return [self.checkpoint_path, self.partial_dir]

    def stored(self) -> tuple[dict, pd.DataFrame] | None:
        """(header, history) if the store holds the run intact, else None."""
        try:
            return self.store.load_run(self.key)
        except FileNotFoundError:  # includes CorruptResultError
            return None

    def has(self) -> bool:
        return self.store.has(self.key)  # one stat for a file this process verified

    def read_checkpoint(self) -> tuple[dict | None, str | None]:
        """:func:`read_checkpoint` of the run's checkpoint: nothing is changed."""
        return read_checkpoint(self.checkpoint_path, self.key)

    def resume(self) -> dict | None:
        """The run's checkpoint if it exists and belongs to this version and config, else
        None (a refused one is renamed ``*.pt.refused`` with a warning saying why)."""
        if not self.checkpoint_path.exists():
            return None
        saved, problem = self.read_checkpoint()
        if saved is None:
            self._refuse(self.checkpoint_path, problem, f"run {self.key} starts from round 1")
        return saved

    def checkpoint(self, payload: dict) -> None:
        """Write the run's checkpoint (``torch.save`` of ``payload``) atomically."""
        import torch

        buf = io.BytesIO()
        torch.save(payload, buf)
        atomic_write_bytes(self.checkpoint_path, buf.getvalue())

    def finish(self, config: dict, history: pd.DataFrame, meta: dict, **info) -> Path:
        """Store the result (:meth:`ResultStore.save`), journal it (with ``info``) and tidy.

        Raises
        ------
        SaveFailed
            The result file could not be written; the partial work is kept.
        """
        path = _save_or_raise(self.store.save, self.key, config, history, meta)
        self._finished(**info)
        return path


# -- Python objects (attack cells) ---------------------------------------------------------


def _object_bytes(obj: Any) -> bytes:
    """``torch.save`` of ``obj`` behind its checksum line."""
    import torch

    buf = io.BytesIO()
    torch.save(obj, buf)
    payload = buf.getvalue()
    return OBJECT_MAGIC + hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload


def _object_of(raw: bytes) -> Any:
    """The object a file's bytes hold, checked against its checksum (a legacy file without
    the checksum line by torch's own record CRCs).

    Raises
    ------
    DamagedFile
        Saying what is wrong.
    """
    import torch

    payload = raw
    if raw.startswith(OBJECT_MAGIC):
        line, sep, payload = raw.partition(b"\n")
        if not sep:
            raise DamagedFile("truncated: nothing after the checksum line")
        if line[len(OBJECT_MAGIC):] != hashlib.sha256(payload).hexdigest().encode():
            raise DamagedFile("checksum mismatch: the file was edited or damaged after it was written")
    try:
        return torch.load(io.BytesIO(payload), weights_only=False)
    except Exception as exc:  # unpickling fails in many ways; every one means "damaged"
        raise DamagedFile(f"unreadable: {type(exc).__name__}: {exc}") from None


class ObjectSlot(Slot):
    """One Python object (tensors, frames, dicts) stored as ``<folder>/<key>.pt`` in the store,
    its partial work in ``<folder>/<key>.<stage>.pt`` for each name of ``stages``; every file is
    checksummed (module docstring)."""

    SUFFIX = ".pt"
    encode = staticmethod(_object_bytes)
    decode = staticmethod(_object_of)
    # The partial work's files and codec (a subclass may keep it apart from its result's).
    STAGE_SUFFIX = ".pt"
    encode_stage = staticmethod(_object_bytes)
    decode_stage = staticmethod(_object_of)

    def __init__(self, store: ResultStore, key: str, folder: str, stages: tuple[str, ...] = ()):
        super().__init__(store, key)
        self.folder, self.stages = store.root / folder, tuple(stages)

    @property
    def result_path(self) -> Path:
        return self.folder / f"{self.key}{self.SUFFIX}"

    def stage_path(self, stage: str) -> Path:
        """Where the partial work ``stage`` is kept."""
        if stage not in self.stages:
            raise ValueError(f"stage={stage!r} is not one of this slot's stages {self.stages}")
        return self.folder / f"{self.key}.{stage}{self.STAGE_SUFFIX}"

    def partial_paths(self) -> list[Path]:
        return [self.stage_path(s) for s in self.stages]

    def stored(self) -> Any | None:
        """The stored object, verified; None when absent or damaged (then moved aside as
        ``*.corrupt`` with a :class:`~dpdl_core.runs.results.CorruptResultWarning`, unless the
        store is read-only)."""
        try:
            return self.store.read_verified(self.key, self.result_path, self.decode)[1]
        except FileNotFoundError:  # includes CorruptResultError
            return None

    def resume(self, stage: str, check: Callable[[Any], str | None] | None = None) -> Any | None:
        """The object kept as partial work ``stage``, or None (absent; or damaged, or one that
        ``check`` (the object → why it cannot be used, or None) refuses: then renamed
        ``*.refused`` with a :class:`CheckpointRefusedWarning`)."""
        path = self.stage_path(stage)
        try:
            obj = self.decode_stage(path.read_bytes())
            problem = None if check is None else check(obj)
        except FileNotFoundError:
            return None
        except DamagedFile as exc:
            obj, problem = None, str(exc)
        if problem is not None:
            self._refuse(path, problem, f"{self.key}'s stage {stage!r} is computed again")
            return None
        return obj

    def checkpoint(self, obj: Any, stage: str) -> None:
        """Keep ``obj`` as partial work ``stage``, atomically and checksummed."""
        atomic_write_bytes(self.stage_path(stage), self.encode_stage(obj))

    def finish(self, obj: Any, **info) -> Path:
        """Store ``obj`` checksummed, journal it (with ``info``) and tidy its partial work.

        Raises
        ------
        SaveFailed
            The file could not be written; the partial work is kept.
        """
        _save_or_raise(self._write, obj)
        self._finished(**info)
        return self.result_path

    def _write(self, obj: Any) -> None:
        self.store._writable()  # a read-only store raises PermissionError
        atomic_write_bytes(self.result_path, self.encode(obj))


# -- JSON documents (audits) ---------------------------------------------------------------


def _canonical(doc: dict) -> bytes:
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), default=_plain).encode()


def _plain(value):
    """numpy scalars as Python numbers (JSON knows no others)."""
    if hasattr(value, "item") and getattr(value, "ndim", None) == 0:
        return value.item()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def _json_bytes(doc: dict) -> bytes:
    """``doc`` as indented JSON with one more key, ``sha256``: the digest of the rest in
    canonical form (sorted keys, no spaces), so the file stays a plain JSON document."""
    doc = json.loads(_canonical(doc))  # what a reader will parse back
    digest = hashlib.sha256(_canonical(doc)).hexdigest()
    return (json.dumps({**doc, "sha256": digest}, indent=1, sort_keys=True) + "\n").encode()


def _json_of(raw: bytes) -> dict:
    """The document a JSON file holds, checked against its ``sha256`` (a legacy document
    without one is read as it is: JSON parsing catches truncation only).

    Raises
    ------
    DamagedFile
        Saying what is wrong.
    """
    try:
        doc = json.loads(raw)
    except ValueError as exc:  # JSON and UTF-8 errors
        raise DamagedFile(f"unreadable JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise DamagedFile("not a JSON object")
    digest = doc.pop("sha256", None)
    if digest is not None and digest != hashlib.sha256(_canonical(doc)).hexdigest():
        raise DamagedFile("checksum mismatch: the file was edited or damaged after it was written")
    return doc


class JsonSlot(ObjectSlot):
    """One JSON document stored as ``<folder>/<key>.json`` (such as a privacy audit,
    :mod:`dpdl_core.runs.audit_run`), checksummed inside: its ``sha256`` key is the digest of
    the rest, so the file stays readable by any JSON reader. Its partial work (tensors,
    random streams) is kept as :class:`ObjectSlot`'s is, ``<folder>/<key>.<stage>.pt``."""

    SUFFIX = ".json"
    encode = staticmethod(_json_bytes)
    decode = staticmethod(_json_of)
