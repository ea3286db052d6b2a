"""One store protocol for every kind of durable work (dpdl_core/runs/slots.py).

The oracle: a training run, the Ray driver's store of a task's result, a study job and an
attack cell each go through their slot: they hold its lease while they compute and store
(a second caller waits, then loads what the first stored: each computes once), their result
carries a checksum that catches an edit (the file is moved aside and the work done again),
and a finished slot leaves no partial work, temp file or lock behind.
"""
import functools
import gzip
import io
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pandas as pd
import pytest
import torch

from dpdl_core.papers.dpdl import preset as paper_preset
from dpdl_core.papers.dpdl import threat_models
from dpdl_core.papers.dpdl.threat_models import AttackSpec, attack_cell
from dpdl_core.runs import executors, runner, studies
from dpdl_core.runs.config import ExperimentConfig
from dpdl_core.runs.locking import LeaseWaitWarning
from dpdl_core.runs.results import CorruptResultWarning, ResultStore
from dpdl_core.runs.slots import OBJECT_MAGIC, CheckpointRefusedWarning, ObjectSlot, RunSlot, SaveFailed, Slot
from dpdl_core.runs.studies import Job, Study, StudyRun, run_study
from dpdl_core.sim.attacks import InversionConfig

RUN = ExperimentConfig(n_agents=3, batch_size=8, train_samples=300, rounds=2, eval_every=2, eval_samples=100)
CELL = paper_preset("mnist", "bipartite", n_agents=4, rounds=2, batch_size=8, train_samples=800, eval_samples=50,
                    eval_every=2, epsilon=0.5, sigma_rule="authors_code")
CELL_SPEC = AttackSpec(rounds=(2,), n_victims=1, inversion=InversionConfig(iterations=5, restarts=1))
JOB = Job(f"{__name__}:_toy_job", {"n": 3})
COMPUTED: list[str] = []  # what each kind computed, in order


def _toy_job(spec: dict) -> tuple[pd.DataFrame, dict]:
    COMPUTED.append("job")
    n = spec["n"]
    history = pd.DataFrame({"round": range(1, n + 1), "agent": -1, "metric": "x", "value": [i / 2 for i in range(n)]})
    return history, {}


@functools.lru_cache(maxsize=1)
def _ray_result():
    """What a Ray task returns for RUN: computed without storing anything (the driver stores it)."""
    scratch = ResultStore(Path(tempfile.gettempdir()) / "dpdl-test-slots-never-written")
    return runner.run(RUN, store=scratch, save=False, progress=False)


def _edit_run_file(path):
    """Change one stored value and recompress: only the checksum can tell."""
    text = gzip.decompress(path.read_bytes()).decode()
    head, body = text.split("\n", 1)
    lines = body.splitlines()
    r, a, m, v = lines[1].split(",")
    lines[1] = ",".join((r, a, m, str(float(v) + 1)))
    path.write_bytes(gzip.compress("\n".join([head, *lines, ""]).encode()))


def _edit_object_file(path):
    """Replace the stored object by an edited one, well-formed, behind the old checksum line."""
    line, payload = path.read_bytes().split(b"\n", 1)
    saved = torch.load(io.BytesIO(payload), weights_only=False)
    saved["meta"]["edited"] = True
    buf = io.BytesIO()
    torch.save(saved, buf)
    path.write_bytes(line + b"\n" + buf.getvalue())


def _do_run(store):
    res = runner.run(RUN, store=store, progress=False)
    if not res.cached:
        COMPUTED.append("run")


def _do_ray(store):
    COMPUTED.append("ray")  # the task's computation; the driver stores it only if the store lacks it
    executors._store_result(store, RUN, _ray_result())


def _do_attack(store):
    attack_cell(CELL, CELL_SPEC, store=store)


# kind -> (its slot in a store, do the work, what a computation appends to COMPUTED, damage its result)
KINDS = {
    "training run": (lambda s: RunSlot(s, RUN.hash), _do_run, "run", _edit_run_file),
    "ray driver": (lambda s: RunSlot(s, RUN.hash), _do_ray, "ray", _edit_run_file),
    "study job": (lambda s: RunSlot(s, JOB.hash), lambda s: studies._compute_job(JOB, s), "job", _edit_run_file),
    "attack cell": (lambda s: threat_models._slot(s, threat_models._cell_key(CELL, CELL_SPEC)), _do_attack,
                    "attack", _edit_object_file),
}


@pytest.fixture(autouse=True)
def _count_attacks(monkeypatch):
    """Count the attack cells' computations (their first training) and clear the log."""
    COMPUTED.clear()
    real = threat_models.intercept

    def counted(config, spec, *rest):
        if config.epsilon is None:
            COMPUTED.append("attack")
        return real(config, spec, *rest)

    monkeypatch.setattr(threat_models, "intercept", counted)


def _leftovers(store: ResultStore) -> list[str]:
    """Temp files, locks and partial work anywhere in the store."""
    return sorted(str(p.relative_to(store.root)) for p in store.root.rglob("*")
                  if p.name.endswith(".tmp") or p.suffix == ".lock" or p.parent.name == "checkpoints"
                  or (p.parent.name == "attacks" and p.name.count(".") > 1))


def _stored_events(store: ResultStore, key: str) -> int:
    events = store.journal()
    return int(((events["hash"] == key) & (events["event"] == "stored")).sum())


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_kind_of_work_goes_through_its_slot_and_leaves_nothing_behind(kind, store, monkeypatch):
    slot_of, do, computes, _ = KINDS[kind]
    seen = []
    real_held, real_finished = Slot.held, Slot._finished

    def held(self, *a, **k):
        seen.append(("held", type(self).__name__, self.key))
        return real_held(self, *a, **k)

    def finished(self, **info):
        seen.append(("finished", type(self).__name__, self.key))
        return real_finished(self, **info)

    monkeypatch.setattr(Slot, "held", held)
    monkeypatch.setattr(Slot, "_finished", finished)
    do(store)
    slot = slot_of(store)
    assert seen == [("held", type(slot).__name__, slot.key), ("finished", type(slot).__name__, slot.key)]
    assert COMPUTED == [computes] and slot.has()
    assert slot.partial() is None and _leftovers(store) == [] and _stored_events(store, slot.key) == 1
    do(store)  # stored: loaded (the Ray driver: not stored again)
    assert _stored_events(store, slot.key) == 1
    assert COMPUTED == [computes] * (2 if kind == "ray driver" else 1)


def test_an_attack_cell_is_stored_checksummed_and_a_legacy_file_still_loads(store):
    slot = KINDS["attack cell"][0](store)
    first = attack_cell(CELL, CELL_SPEC, store=store)
    raw = slot.result_path.read_bytes()
    assert raw.startswith(OBJECT_MAGIC)
    # A file written before attack cells carried checksums: the bare torch.save payload.
    slot.result_path.write_bytes(raw.split(b"\n", 1)[1])
    again = attack_cell(CELL, CELL_SPEC, store=store)
    assert COMPUTED == ["attack"]
    pd.testing.assert_frame_equal(again.metrics, first.metrics)
    # Truncated, a legacy file is caught by torch's own checks and computed again.
    slot.result_path.write_bytes(slot.result_path.read_bytes()[:1000])
    with pytest.warns(CorruptResultWarning, match="unreadable"):
        attack_cell(CELL, CELL_SPEC, store=store)
    assert COMPUTED == ["attack", "attack"] and slot.result_path.read_bytes().startswith(OBJECT_MAGIC)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_an_edited_result_is_caught_moved_aside_and_done_again(kind, store):
    slot_of, do, computes, damage = KINDS[kind]
    do(store)
    slot = slot_of(store)
    damage(slot.result_path)
    with pytest.warns(CorruptResultWarning, match="checksum mismatch"):
        do(store)
    assert COMPUTED == [computes, computes] and slot.has()
    assert slot.result_path.with_name(slot.result_path.name + ".corrupt").exists()
    assert "corrupt" in store.journal()["event"].tolist()


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_work_leased_by_another_worker_is_waited_for_then_loaded(kind, store):
    """Two workers on one folder (a thread stands in for a process: the lease is an flock):
    the second waits for the first's lease, then finds the result stored; it is stored once
    and, but for the Ray driver (whose tasks compute before the driver stores), computed once."""
    slot_of, do, computes, _ = KINDS[kind]
    slot = slot_of(store)
    holding, go, errors = threading.Event(), threading.Event(), []

    def first_worker():
        try:
            with slot.lease():
                holding.set()
                go.wait(60)
                time.sleep(1.0)  # the second worker reaches the lease meanwhile
                do(store)
        except BaseException as exc:  # noqa: B036 - handed to the main thread
            errors.append(exc)
            holding.set()

    t = threading.Thread(target=first_worker)
    t.start()
    holding.wait(60)
    assert slot.busy()
    go.set()
    with pytest.warns(LeaseWaitWarning, match="waiting for it"):
        do(store)
    t.join(120)
    assert not errors and not slot.busy() and slot.has()
    assert _stored_events(store, slot.key) == 1
    assert COMPUTED == [computes] * (2 if kind == "ray driver" else 1)


def test_a_study_worker_skips_a_job_another_worker_holds(tmp_path):
    st = Study("toy", "toy", (StudyRun("job", "", 0, JOB),))
    slot = RunSlot(st.store(tmp_path), JOB.hash)
    lines = []
    with ThreadPoolExecutor(1) as other:  # another thread stands in for another process
        other.submit(lambda: slot.lease().acquire()).result(60)  # a lease belongs to the thread that makes it
        try:
            assert slot.busy() and run_study(st, root=tmp_path, log=lines.append) == 0
        finally:
            other.submit(lambda: slot.lease().release()).result(60)
    assert "another worker has it" in lines[0] and COMPUTED == []
    assert run_study(st, root=tmp_path, log=lines.append) == 1 and COMPUTED == ["job"]


def test_a_damaged_stage_is_refused_and_computed_again(store):
    slot = ObjectSlot(store, "cell", "attacks", ("nd",))
    slot.checkpoint({"taps": [1, 2]}, "nd")
    assert slot.resume("nd") == {"taps": [1, 2]}
    path = slot.stage_path("nd")
    path.write_bytes(path.read_bytes()[:-10])
    with pytest.warns(CheckpointRefusedWarning, match="checksum mismatch"):
        assert slot.resume("nd") is None
    assert not path.exists() and path.with_name(path.name + ".refused").exists()
    assert store.journal()["event"].tolist() == ["checkpoint_refused"]


def test_a_result_that_cannot_be_written_keeps_the_partial_work(store, monkeypatch):
    from dpdl_core.runs import slots

    slot = ObjectSlot(store, "cell", "attacks", ("nd",))
    slot.checkpoint([1], "nd")

    def full(path, payload):
        raise OSError(28, "No space left on device", str(path))

    monkeypatch.setattr(slots, "atomic_write_bytes", full)
    with pytest.raises(SaveFailed, match="No space") as caught:
        slot.finish({"x": 1})
    assert caught.value.filename == str(slot.result_path)
    assert slot.stage_path("nd").exists() and not slot.result_path.exists()
    assert "stored" not in store.journal()["event"].tolist()
    monkeypatch.undo()
    slot.finish({"x": 1})
    assert slot.stored() == {"x": 1} and slot.partial() is None


def test_a_read_only_store_reads_but_never_writes_an_object(store):
    slot = ObjectSlot(store, "cell", "attacks")
    slot.finish({"x": 1})
    reader = ObjectSlot(ResultStore(store.root, read_only=True), "cell", "attacks")
    assert reader.stored() == {"x": 1}
    with pytest.raises(SaveFailed, match="read-only"):
        reader.finish({"x": 2})
    assert slot.stored() == {"x": 1}


# -- privacy audits: a JSON document per slot ----------------------------------------------


def test_an_audit_document_carries_its_checksum_and_an_edit_is_caught(tmp_path):
    from dpdl_core.runs.slots import JsonSlot

    store = ResultStore(tmp_path)
    slot = JsonSlot(store, "abc-def", ".")
    with slot.held() as found:
        assert found is None
        slot.finish({"epsilon_audit": 0.5, "audit": {"m": 10}, "rounds": 2})
    assert slot.stored() == {"epsilon_audit": 0.5, "audit": {"m": 10}, "rounds": 2}
    assert not (tmp_path / "locks" / "abc-def.lock").exists() and slot.partial() is None
    text = slot.result_path.read_text()
    assert '"sha256"' in text
    slot.result_path.write_text(text.replace('"epsilon_audit": 0.5', '"epsilon_audit": 5.0'))
    assert JsonSlot(ResultStore(tmp_path, read_only=True), "abc-def", ".").stored() is None  # left in place
    assert slot.result_path.exists()
    with pytest.warns(CorruptResultWarning):
        assert slot.stored() is None  # a writable store moves it aside: the audit is done again
    assert not slot.result_path.exists()


def test_an_audit_keeps_tensors_as_checksummed_partial_work_that_a_check_can_refuse(tmp_path):
    from dpdl_core.runs.slots import JsonSlot

    slot = JsonSlot(ResultStore(tmp_path), "abc-def", ".", stages=("partial",))
    assert slot.stage_path("partial").name == "abc-def.partial.pt"  # not a *.json the audit table reads
    slot.checkpoint({"round": 3, "total": torch.arange(4.0)}, "partial")
    assert slot.stage_path("partial").read_bytes().startswith(OBJECT_MAGIC)
    saved = slot.resume("partial", check=lambda obj: None if obj["round"] == 3 else "another round")
    assert saved["round"] == 3 and torch.equal(saved["total"], torch.arange(4.0))
    with pytest.warns(CheckpointRefusedWarning, match="another round"):
        assert slot.resume("partial", check=lambda obj: "another round") is None
    assert slot.partial() is None and (tmp_path / "abc-def.partial.pt.refused").exists()
    slot.checkpoint({"round": 1}, "partial")
    with slot.held() as found:
        assert found is None
        slot.finish({"epsilon_audit": 0.5})
    assert slot.partial() is None and slot.stored() == {"epsilon_audit": 0.5}


def test_a_legacy_audit_document_without_checksum_is_read(tmp_path):
    from dpdl_core.runs.slots import JsonSlot

    (tmp_path / "old.json").write_text('{"epsilon_audit": 0.25}\n')
    assert JsonSlot(ResultStore(tmp_path, read_only=True), "old", ".").stored() == {"epsilon_audit": 0.25}
    (tmp_path / "cut.json").write_text('{"epsilon_audit": 0.2')
    assert JsonSlot(ResultStore(tmp_path, read_only=True), "cut", ".").stored() is None


def test_every_committed_audit_passes_its_checksum_and_a_damaged_one_leaves_the_table(tmp_path):
    import shutil

    from dpdl_core.runs.audit_run import AUDIT_DIR, audit_table
    from dpdl_core.runs.slots import JsonSlot

    committed = sorted(Path(AUDIT_DIR).glob("*.json"))
    assert committed
    for path in committed:
        assert '"sha256"' in path.read_text(), f"{path}: committed without its checksum"
        assert JsonSlot(ResultStore(AUDIT_DIR, read_only=True), path.stem, ".").stored() is not None, path
    for path in committed[:3]:
        shutil.copy(path, tmp_path / path.name)
    damaged = tmp_path / committed[0].name
    damaged.write_text(damaged.read_text().replace('"rounds": ', '"rounds": 1'))
    with pytest.warns(CorruptResultWarning, match="integrity check"):
        table = audit_table(tmp_path)
    assert len(table) == 2 and damaged.exists()  # left out, never moved: committed files are the user's
