"""Trust in the results store: nothing lost, nothing duplicated, nothing damaged read.

Damaged result files (truncated, edited, not gzip, another run's) are caught by every
reader, moved aside and recomputed; legacy files without a checksum are still read; run
leases are exclusive, re-entrant and die with their holder; checkpoints of another
version or config are refused. The slow tests use real processes: sweeps killed with
SIGKILL (first while a run has a checkpoint, then at seeded random moments) and rerun,
and two sweeps on one folder at once; both
must end with every run stored once, computed once, and bit-identical to an uninterrupted
run.
"""
import gzip
import io
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pytest
import torch
from guarantees import record

from dpdl_core import __version__
from dpdl_core.papers.dpdl.algorithm import DPDL
from dpdl_core.runs.config import ExperimentConfig
from dpdl_core.runs.executors import LocalExecutor
from dpdl_core.runs.locking import Lease
from dpdl_core.runs.results import CorruptResultError, CorruptResultWarning, ResultStore
from dpdl_core.runs.runner import CheckpointRefusedWarning, run
from dpdl_core.runs.stacking import plan_stacks
from dpdl_core.runs.sweep import run_sweep

ROOT = Path(__file__).resolve().parents[1]
# Tiny private runs (a fixed σ: noise and its generator state matter on resume; a large one
# keeps the accountant's ε computation quick), checkpointed every round so that kills land
# between, during and after checkpoint writes.
TINY = dict(n_agents=3, batch_size=8, train_samples=300, eval_every=3, eval_samples=100, epsilon=1.0,
            sigma_rule="fixed", sigma=4.0, checkpoint_every=1)
SWEEP = [ExperimentConfig(**TINY, rounds=10, seed=s) for s in range(4)]
# A sweep in its own process, as a user would start it (spawn workers, one torch thread each
# on two cores; the references below are computed with the workers' thread count, which on
# an AVX2 CPU changes these runs' last bits).
SCRIPT = """
import json, sys
from dpdl_core.runs.config import ExperimentConfig
from dpdl_core.runs.executors import LocalExecutor
from dpdl_core.runs.results import ResultStore
from dpdl_core.runs.stacking import plan_stacks
from dpdl_core.runs.sweep import run_sweep
configs = [ExperimentConfig.from_dict(d) for d in json.loads(sys.argv[2])]
run_sweep(configs, store=ResultStore(sys.argv[1]), workers=2, progress=False)
"""
SWEEP_TIMEOUT = 600  # seconds; generous because CI cores may be shared


def _hist(v=1.0):
    return pd.DataFrame({"round": [1, 1, 2], "agent": [0, -1, 0], "metric": ["a", "b", "a"], "value": [v, 2.0, 3.0]})


def _saved(store, seed=0):
    cfg = ExperimentConfig(seed=seed)
    store.save(cfg.hash, cfg.to_dict(), _hist(), {"sigma_mean": 1.5})
    return cfg.hash


def _rewrite(path: Path, edit) -> None:
    """Decompress, apply ``edit`` to the text, recompress: damage gzip's CRC cannot see."""
    text = gzip.decompress(path.read_bytes()).decode()
    edited = edit(text)
    assert edited != text, "the edit did not change the file"
    path.write_bytes(gzip.compress(edited.encode()))


def _flip_byte(path: Path) -> None:
    raw = bytearray(path.read_bytes())
    raw[-12] ^= 0xFF  # in the deflate stream's tail, just before gzip's CRC and length
    path.write_bytes(bytes(raw))


def _other_run(path: Path) -> None:
    other = ResultStore(path.parent / "other")
    shutil.copyfile(other.path(_saved(other, seed=1)), path)


DAMAGE = {
    "truncated": lambda p: p.write_bytes(p.read_bytes()[: p.stat().st_size // 2]),
    "empty": lambda p: p.write_bytes(b""),
    "not gzip": lambda p: p.write_bytes(b"round,agent,metric,value\n1,0,a,1.0\n"),
    "flipped byte": _flip_byte,
    "edited value": lambda p: _rewrite(p, lambda t: t.replace("1,0,a,1.0", "1,0,a,1.5")),
    "edited meta": lambda p: _rewrite(p, lambda t: t.replace('"sigma_mean": 1.5', '"sigma_mean": 0.5')),
    "dropped rows": lambda p: _rewrite(p, lambda t: t[: t.rindex("2,0,a")]),
    "another run's file": _other_run,
}
READERS = {
    "has": lambda s, h: s.has(h),
    "hashes": lambda s, h: s.hashes(),
    "read_header": lambda s, h: s.read_header(h),
    "load_run": lambda s, h: s.load_run(h),
    "configs": lambda s, h: s.configs(),
    "load": lambda s, h: s.load(),
}


def test_saved_file_carries_format_and_checksum(store):
    h = _saved(store)
    header = store.read_header(h)
    assert header["format"] == 2 and len(header["sha256"]) == 64
    _, hist = store.load_run(h)
    pd.testing.assert_frame_equal(hist, _hist())


@pytest.mark.parametrize("reader", sorted(READERS))
@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_every_reader_detects_damage_and_moves_the_file_aside(store, damage, reader):
    h = _saved(store)
    path = store.path(h)
    DAMAGE[damage](path)
    with pytest.warns(CorruptResultWarning, match=path.name) as caught:
        try:
            out = READERS[reader](store, h)
        except CorruptResultError as exc:  # the readers that return data say so too
            assert reader in ("read_header", "load_run") and path.name in str(exc)
        else:
            assert reader not in ("read_header", "load_run")
            assert out is False or len(out) == 0  # has / hashes / configs / load: nothing stored
    assert "moved to" in str(caught[0].message) and "recomputed" in str(caught[0].message)
    assert not path.exists() and path.with_name(path.name + ".corrupt").exists()
    assert not store.has(h) and store.hashes() == []
    assert store.journal()["event"].tolist() == ["corrupt"]


def test_a_second_damaged_copy_does_not_overwrite_the_first(store):
    h = _saved(store)
    for _ in range(2):
        DAMAGE["truncated"](store.path(h))
        with pytest.warns(CorruptResultWarning):
            assert not store.has(h)
        _saved(store)
    assert sorted(p.name for p in store.root.glob("*.corrupt")) == [f"{h}.csv.gz.2.corrupt", f"{h}.csv.gz.corrupt"]
    assert store.has(h)


def _legacy(store, h, body: str) -> Path:
    """A file as written before checksums: a header without format or sha256."""
    header = json.dumps({"hash": h, "config": {"seed": 0}, "meta": {"sigma_mean": 1.5}}, sort_keys=True)
    store.root.mkdir(parents=True, exist_ok=True)
    store.path(h).write_bytes(gzip.compress(("# " + header + "\n" + body).encode(), mtime=0))
    return store.path(h)


def test_legacy_files_are_read_and_their_gzip_crc_still_checked(store):
    buf = io.StringIO()
    _hist().to_csv(buf, index=False)
    path = _legacy(store, "0123456789abcdef", buf.getvalue())
    assert store.hashes() == ["0123456789abcdef"]
    header, hist = store.load_run("0123456789abcdef")
    assert "format" not in header and header["meta"]["sigma_mean"] == 1.5
    pd.testing.assert_frame_equal(hist, _hist())
    DAMAGE["truncated"](path)
    with pytest.warns(CorruptResultWarning, match="unreadable gzip"):
        assert store.hashes() == []


def test_a_store_that_cannot_be_written_still_reads_and_skips_damage(store, monkeypatch):
    from dpdl_core.runs import results

    h = _saved(store)
    DAMAGE["edited value"](store.path(h))

    def read_only(src, dst):
        raise PermissionError(13, "Read-only file system")

    monkeypatch.setattr(results.os, "replace", read_only)
    with pytest.warns(CorruptResultWarning, match="could not be moved aside"):
        assert store.hashes() == []
    assert store.path(h).exists()


def test_a_newer_format_is_refused_but_left_in_place(store):
    h = _saved(store)
    _rewrite(store.path(h), lambda t: t.replace('"format": 2', '"format": 99'))
    with pytest.raises(ValueError, match="format 99.*upgrade dpdl_core"):
        store.load_run(h)
    assert store.path(h).exists()


def test_temp_files_are_invisible_and_cleared_by_the_leaseholder(store):
    h = _saved(store)
    stale = [store.root / f".{h}.csv.gz.x1.tmp", store.checkpoint_path(h).parent / f".{h}.pt.x2.tmp"]
    for p in stale:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b"half")
    assert store.hashes() == [h]
    with store.lease(h):
        store.remove_temp_files(h)
    assert not any(p.exists() for p in stale)


@pytest.mark.filterwarnings("ignore::dpdl_core.runs.locking.LeaseWaitWarning")  # the waiter's, by design
def test_lease_is_exclusive_between_threads_and_reentrant_within_one(tmp_path):
    path = tmp_path / "locks" / "x.lock"
    outer, inner = Lease(path), Lease(path)
    assert outer.acquire(blocking=False) and inner.acquire(blocking=False)  # same thread: re-entrant

    def other(result):
        result.append(Lease(path).acquire(blocking=False))

    seen: list = []
    thread = threading.Thread(target=other, args=(seen,))
    thread.start()
    thread.join()
    assert seen == [False]
    inner.release()
    assert path.exists()  # still held by the outer level
    outer.release()
    assert not path.exists()

    got = threading.Event()

    def waiter():
        with Lease(path):
            got.set()

    with Lease(path):
        thread = threading.Thread(target=waiter)
        thread.start()
        time.sleep(0.2)
        assert not got.is_set()  # blocked while held
    thread.join(10)
    assert got.is_set() and not path.exists()


def test_lease_of_a_killed_process_does_not_block(tmp_path):
    path = tmp_path / "x.lock"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, sys, time; f = open(sys.argv[1], 'a'); "
         "fcntl.flock(f, fcntl.LOCK_EX); print('held', flush=True); time.sleep(600)", str(path)],
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout.readline() == b"held\n"
        assert not Lease(path).acquire(blocking=False)
    finally:
        holder.kill()
        holder.wait()
    lease = Lease(path)
    assert lease.acquire(blocking=False)
    lease.release()


# -- runs -------------------------------------------------------------------------------

RUN = ExperimentConfig(**TINY, rounds=5)


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> pd.DataFrame:
    """RUN's stored history, computed without interruption."""
    store = ResultStore(tmp_path_factory.mktemp("reference"))
    run(RUN, store=store, progress=False)
    return store.load_run(RUN.hash)[1]


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> bytes:
    """The bytes of RUN's checkpoint after round 3, from a run that died in round 4."""
    store = ResultStore(tmp_path_factory.mktemp("dying"))
    original, calls = DPDL.step, {"n": 0}

    def dying_step(self, state, xb, yb):
        calls["n"] += 1
        if calls["n"] == 4:
            raise KeyboardInterrupt
        return original(self, state, xb, yb)

    DPDL.step = dying_step
    try:
        with pytest.raises(KeyboardInterrupt):
            run(RUN, store=store, progress=False)
    finally:
        DPDL.step = original
    return store.checkpoint_path(RUN.hash).read_bytes()


def test_damaged_result_is_recomputed_by_the_next_sweep(store, reference):
    run(RUN, store=store, progress=False)
    path = store.path(RUN.hash)
    _rewrite(path, lambda t: t.replace("\n1,0,train_loss,", "\n1,0,train_loss,9", 1))
    with pytest.warns(CorruptResultWarning, match="checksum mismatch"):
        run_sweep([RUN], store=store, workers=1, progress=False)
    pd.testing.assert_frame_equal(store.load_run(RUN.hash)[1], reference, check_exact=True)
    assert path.with_name(path.name + ".corrupt").exists()
    assert store.journal()["event"].tolist() == ["computing", "stored", "corrupt", "computing", "stored"]


def _tamper(payload: bytes, change: dict, drop=()) -> bytes:
    saved = torch.load(io.BytesIO(payload), weights_only=False)
    saved.update(change)
    for key in drop:
        del saved[key]
    buf = io.BytesIO()
    torch.save(saved, buf)
    return buf.getvalue()


TAMPER = {
    "older version": (lambda b: _tamper(b, {"version": "0.0.1"}), "written by dpdl_core 0.0.1"),
    "before versions were recorded": (lambda b: _tamper(b, {}, drop=("version", "config_hash")), "no version recorded"),
    "another config": (lambda b: _tamper(b, {"config_hash": "0" * 16}), "written for run 0000000000000000"),
    "unreadable": (lambda b: b[: len(b) // 3], "unreadable"),
    "GPU random streams": (lambda b: _tamper(b, {}, drop=("rng_device",)), "drawn on the GPU"),
}


@pytest.mark.parametrize("tamper", sorted(TAMPER))
def test_foreign_checkpoint_is_refused_and_the_run_starts_afresh(store, reference, checkpoint, tamper):
    change, message = TAMPER[tamper]
    path = store.checkpoint_path(RUN.hash)
    path.parent.mkdir(parents=True)
    path.write_bytes(change(checkpoint))
    with pytest.warns(CheckpointRefusedWarning, match=message) as caught:
        res = run(RUN, store=store, progress=False)
    assert path.name in str(caught[0].message) and "starts from round 1" in str(caught[0].message)
    assert path.with_name(path.name + ".refused").exists() and not path.exists()
    events = store.journal()
    assert events["event"].tolist() == ["checkpoint_refused", "computing", "stored"]
    assert events["from_round"].iloc[1] == 1
    pd.testing.assert_frame_equal(store.load_run(RUN.hash)[1], reference, check_exact=True)
    assert not res.cached


def test_own_checkpoint_is_accepted(store, reference, checkpoint):
    assert torch.load(io.BytesIO(checkpoint), weights_only=False)["version"] == __version__
    path = store.checkpoint_path(RUN.hash)
    path.parent.mkdir(parents=True)
    path.write_bytes(checkpoint)
    run(RUN, store=store, progress=False)
    assert store.journal()["from_round"].iloc[0] == 4
    pd.testing.assert_frame_equal(store.load_run(RUN.hash)[1], reference, check_exact=True)


def test_failed_checkpoint_write_keeps_the_previous_one(store, reference, monkeypatch):
    from dpdl_core.runs import results

    real, calls = os.replace, {"n": 0}

    def dies_on_third(src, dst):
        if str(dst).endswith(".pt"):
            calls["n"] += 1
            if calls["n"] == 3:
                raise KeyboardInterrupt  # as if killed between writing the temp file and renaming it
        return real(src, dst)

    monkeypatch.setattr(results.os, "replace", dies_on_third)
    with pytest.raises(KeyboardInterrupt):
        run(RUN, store=store, progress=False)
    monkeypatch.setattr(results.os, "replace", real)
    assert torch.load(store.checkpoint_path(RUN.hash), weights_only=False)["round"] == 2
    run(RUN, store=store, progress=False)
    pd.testing.assert_frame_equal(store.load_run(RUN.hash)[1], reference, check_exact=True)


# -- real processes ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def sweep_reference(tmp_path_factory) -> dict[str, pd.DataFrame]:
    """Stored history of every SWEEP config, computed in this process without interruption,
    with the torch threads each of the sweep's two workers gets."""
    store = ResultStore(tmp_path_factory.mktemp("sweep_reference"))
    executor = LocalExecutor(workers=2)
    _, threads = executor.pool(len(plan_stacks(SWEEP, workers=executor.pool(len(SWEEP))[0])))
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        for cfg in SWEEP:
            run(cfg, store=store, progress=False)
    finally:
        torch.set_num_threads(before)
    return {cfg.hash: store.load_run(cfg.hash)[1] for cfg in SWEEP}


def _start_sweep(root: Path, log: Path) -> subprocess.Popen:
    """The sweep of SWEEP in a new process group (so a kill reaches its spawn workers too)."""
    with open(log, "ab") as err:
        return subprocess.Popen([sys.executable, "-c", SCRIPT, str(root), json.dumps([c.to_dict() for c in SWEEP])],
                                cwd=ROOT, start_new_session=True, stdout=err, stderr=err,
                                env={**os.environ, "DPDL_PROGRESS": "0"})


def _finish(proc: subprocess.Popen, log: Path) -> None:
    try:
        rc = proc.wait(SWEEP_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        raise
    assert rc == 0, f"sweep exited with {rc}:\n{log.read_text()[-3000:]}"


def _events(store: ResultStore, event: str) -> pd.Series:
    j = store.journal()
    return j.loc[j["event"] == event, "hash"].value_counts() if len(j) else pd.Series(dtype=int)


def _assert_complete(store: ResultStore, reference: dict[str, pd.DataFrame]) -> None:
    """Every run stored once, intact, equal to the reference; nothing half-written anywhere."""
    assert store.hashes() == sorted(reference)
    for h, expected in reference.items():
        pd.testing.assert_frame_equal(store.load_run(h)[1], expected, check_exact=True)
    leftovers = [p.name for p in store.root.rglob("*") if p.name.endswith((".tmp", ".corrupt", ".refused"))]
    assert leftovers == []
    assert (_events(store, "stored") <= 1).all()  # no run stored twice


def _progress_since(store: ResultStore, t_ns: int) -> bool:
    """Whether a checkpoint or result was written after ``t_ns`` (``time.time_ns``)."""
    written = [*store.root.glob("checkpoints/*.pt"), *store.root.glob("*.csv.gz")]
    for path in written:
        try:
            if path.stat().st_mtime_ns > t_ns:
                return True
        except FileNotFoundError:  # replaced or removed since the glob
            pass
    return False


def _unfinished_checkpoints(store: ResultStore) -> set[str]:
    """Hashes of runs with a checkpoint on disk and no stored result: a rerun must resume them."""
    return {p.stem for p in store.root.glob("checkpoints/*.pt")} - set(store.hashes())


@pytest.mark.slow
def test_sweep_killed_at_random_moments_finishes_bit_identical(tmp_path, sweep_reference):
    store = ResultStore(tmp_path / "results")
    log = tmp_path / "sweep.log"
    rng = random.Random(20240611)
    kills, orphaned = 0, set()
    for attempt in range(3):
        launched = time.time_ns()
        proc = _start_sweep(store.root, log)
        deadline = time.monotonic() + SWEEP_TIMEOUT
        if attempt == 0:
            # The first kill lands as soon as a run has a checkpoint and no result (its
            # remaining rounds take far longer than one poll), so a resume is always tested.
            while proc.poll() is None and not _unfinished_checkpoints(store) and time.monotonic() < deadline:
                time.sleep(0.02)
        else:
            # Later kills: a seeded random moment after this attempt's first write, landing
            # between, during or after checkpoint and result writes, or in a run's set-up.
            while proc.poll() is None and not _progress_since(store, launched) and time.monotonic() < deadline:
                time.sleep(0.02)
            time.sleep(rng.uniform(0.0, 1.0))
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            kills += 1
            record("sweep kills survived")
        proc.wait()
        orphaned |= _unfinished_checkpoints(store)
        # Whatever the kill interrupted, the loader sees only complete, intact runs.
        for h in store.hashes():
            pd.testing.assert_frame_equal(store.load_run(h)[1], sweep_reference[h], check_exact=True)
    assert kills >= 2, "the sweep finished before it could be killed: give it more work"
    _finish(_start_sweep(store.root, log), log)
    _assert_complete(store, sweep_reference)
    journal = store.journal()
    resumed = set(journal.loc[journal["from_round"] > 1, "hash"])
    record("runs resumed from a checkpoint after a kill", len(resumed))
    assert orphaned, "no kill left a checkpoint of an unfinished run: the resume path went untested"
    # Every checkpoint a kill left behind was resumed from, not recomputed from round 1.
    assert orphaned <= resumed, f"left checkpoints {sorted(orphaned)}, resumed only {sorted(resumed)}"
    # Loading every run clears what a kill after a result's write left (checkpoint, lock).
    assert all(run(cfg, store=store, progress=False).cached for cfg in SWEEP)
    assert [p.name for p in store.root.rglob("*") if p.parent.name in ("checkpoints", "locks")] == []


@pytest.mark.slow
def test_two_sweeps_at_once_compute_each_run_once(tmp_path, sweep_reference):
    store = ResultStore(tmp_path / "results")
    logs = [tmp_path / "a.log", tmp_path / "b.log"]
    procs = [_start_sweep(store.root, log) for log in logs]
    for proc, log in zip(procs, logs):
        _finish(proc, log)
    _assert_complete(store, sweep_reference)
    computed = _events(store, "computing")
    assert sorted(computed.index) == sorted(sweep_reference) and (computed == 1).all()
    assert (_events(store, "stored") == 1).all()
