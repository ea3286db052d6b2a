"""Resumable audits (dpdl_core.runs.audit_run.audit_cached): an audit stopped after round k
(Ctrl-C, or killed between periodic checkpoints) and run again gives the very document the
uninterrupted audit gives, for gradient and input canaries; a damaged checkpoint, or one of
another package version, is refused and the audit starts afresh; a stored audit leaves no
partial work or lock behind."""
import pytest
import torch

from dpdl_core.runs import audit_run as audit_module
from dpdl_core.runs.audit_run import PARTIAL, AuditSpec, CanaryAuditor, audit_cached, audit_slot
from dpdl_core.runs.config import ExperimentConfig
from dpdl_core.runs.input_canaries import InputCanaryAuditor
from dpdl_core.runs.runner import RunInterrupted
from dpdl_core.runs.slots import CheckpointRefusedWarning

ROUNDS = 6


def dpdl_ring(**changes) -> ExperimentConfig:
    """DPDL of a logistic regression on 4 agents, a ring over a fresh permutation each round
    (cross-gradients, noise, the schedule's stream), 6 rounds."""
    base = dict(dataset="mnist", model="logreg", algorithm="dpdl", topology="ring", n_agents=4, seed=3,
                train_samples=400, batch_size=25, rounds=ROUNDS, epsilon=None, sigma_rule="fixed", sigma=1.0,
                clip=1.0, lr=0.1, eval_every=ROUNDS, checkpoint_every=0, schedule="random_ring")
    return ExperimentConfig(**{**base, **changes})


def pdsl_batch_clipped() -> ExperimentConfig:
    """PDSL as the paper states it (batch clipping: the canaries enter through the noise draw),
    3 agents, 6 rounds."""
    return dpdl_ring(algorithm="pdsl", topology="fully_connected", n_agents=3, train_samples=300,
                     validation_samples=50)


SPECS = {
    "gradient": AuditSpec(m=60, victim=1),
    "input": AuditSpec(m=20, kind="input", victim=1, observed="every_round"),
}


def _document(out: dict) -> dict:
    return {k: v for k, v in out.items() if k != "seconds"}


class _Witness:
    """What the audits of a test computed beyond their documents: the scores each bound was
    given, and each run's random streams and ``sent`` counter at its end."""

    def __init__(self, monkeypatch):
        self.scores, self.preps = [], []
        bound, prepare = audit_module.best_k_epsilon_lower_bound, audit_module.prepare

        def recording_bound(scores, *args):
            self.scores.append(scores.copy())
            return bound(scores, *args)

        def recording_prepare(config):
            self.preps.append(prepare(config))
            return self.preps[-1]

        monkeypatch.setattr(audit_module, "best_k_epsilon_lower_bound", recording_bound)
        monkeypatch.setattr(audit_module, "prepare", recording_prepare)

    def last(self) -> tuple:
        """The last audit's scores and its run's streams and ``sent`` at its end."""
        rngs = self.preps[-1].rngs
        streams = [g.get_state() for g in (rngs.batches, rngs.noise, rngs.algorithm, rngs.dropout)]
        return self.scores[-1], streams, rngs.schedule.bit_generator.state, self.preps[-1].ctx.sent.clone()


def _same(a: tuple, b: tuple) -> None:
    (scores_a, streams_a, schedule_a, sent_a), (scores_b, streams_b, schedule_b, sent_b) = a, b
    assert (scores_a == scores_b).all()
    assert all(torch.equal(x, y) for x, y in zip(streams_a, streams_b))
    assert schedule_a == schedule_b
    assert torch.equal(sent_a, sent_b)


class _StopAfter:
    """A Ctrl-C that arrives during round ``k`` (``requested`` is read once a round)."""

    def __init__(self, k: int):
        self.k, self.reads = k, 0

    @property
    def requested(self) -> bool:
        self.reads += 1
        return self.reads >= self.k

    def restore(self) -> None:
        pass


def _leftovers(root) -> list[str]:
    return sorted(p.name for p in root.rglob("*") if p.is_file() and p.suffix not in (".json", ".jsonl"))


@pytest.mark.parametrize("kind, make", [("gradient", dpdl_ring), ("input", dpdl_ring),
                                        ("gradient", pdsl_batch_clipped)])
def test_stopped_audit_resumes_to_the_uninterrupted_result(tmp_path, monkeypatch, kind, make):
    torch.set_num_threads(1)
    cfg, spec = make(), SPECS[kind]
    witness = _Witness(monkeypatch)
    whole = audit_cached(cfg, spec, tmp_path / "whole")
    computed = witness.last()
    monkeypatch.setattr(audit_module, "StopRequest", lambda: _StopAfter(3))
    with pytest.raises(RunInterrupted, match="round 3; run the same command again to resume"):
        audit_cached(cfg, spec, tmp_path / "split")
    slot = audit_slot(cfg, spec, tmp_path / "split")
    assert slot.stage_path(PARTIAL).exists() and slot.stored() is None
    assert slot.resume(PARTIAL)["round"] == 3
    monkeypatch.setattr(audit_module, "StopRequest", lambda: _StopAfter(ROUNDS + 1))  # never
    resumed = audit_cached(cfg, spec, tmp_path / "split")
    assert _document(resumed) == _document(whole)
    _same(witness.last(), computed)
    assert resumed["messages_observed"] == whole["messages_observed"] > 0
    assert _leftovers(tmp_path / "split") == []  # no partial work, no lock


@pytest.mark.parametrize("kind", sorted(SPECS))
def test_killed_audit_resumes_from_its_last_periodic_checkpoint(tmp_path, monkeypatch, kind):
    """Killed during round 5 (a KeyboardInterrupt out of the auditor's probe): the checkpoint of
    round 4 is the one kept, and rounds 5 and 6 are computed again."""
    torch.set_num_threads(1)
    cfg, spec = dpdl_ring(checkpoint_every=2), SPECS[kind]
    witness = _Witness(monkeypatch)
    whole = audit_cached(cfg, spec, tmp_path / "whole")
    computed = witness.last()
    auditor = CanaryAuditor if kind == "gradient" else InputCanaryAuditor
    probe = auditor.probe

    def dies_in_round_5(self, t, prep, state):
        if t == 5:
            raise KeyboardInterrupt
        probe(self, t, prep, state)

    monkeypatch.setattr(auditor, "probe", dies_in_round_5)
    with pytest.raises(KeyboardInterrupt):
        audit_cached(cfg, spec, tmp_path / "split")
    monkeypatch.setattr(auditor, "probe", probe)
    slot = audit_slot(cfg, spec, tmp_path / "split")
    assert slot.resume(PARTIAL)["round"] == 4
    assert _document(audit_cached(cfg, spec, tmp_path / "split")) == _document(whole)
    _same(witness.last(), computed)
    assert _leftovers(tmp_path / "split") == []


def test_damaged_or_foreign_checkpoint_is_refused_and_the_audit_starts_afresh(tmp_path, monkeypatch):
    torch.set_num_threads(1)
    cfg, spec = dpdl_ring(), SPECS["gradient"]
    whole = audit_cached(cfg, spec, tmp_path / "whole")
    monkeypatch.setattr(audit_module, "StopRequest", lambda: _StopAfter(2))
    with pytest.raises(RunInterrupted):
        audit_cached(cfg, spec, tmp_path / "damaged")
    slot = audit_slot(cfg, spec, tmp_path / "damaged")
    path = slot.stage_path(PARTIAL)
    raw = bytearray(path.read_bytes())
    raw[-100] ^= 0xFF
    path.write_bytes(bytes(raw))
    monkeypatch.setattr(audit_module, "StopRequest", lambda: _StopAfter(ROUNDS + 1))
    with pytest.warns(CheckpointRefusedWarning, match="checksum mismatch"):
        out = audit_cached(cfg, spec, tmp_path / "damaged")
    assert _document(out) == _document(whole)
    assert _leftovers(tmp_path / "damaged") == [path.name + ".refused"]

    foreign = audit_slot(cfg, spec, tmp_path / "foreign")
    foreign.checkpoint({"version": "0.0.1", "round": 4}, PARTIAL)
    with pytest.warns(CheckpointRefusedWarning, match="written by dpdl_core 0.0.1"):
        out = audit_cached(cfg, spec, tmp_path / "foreign")
    assert _document(out) == _document(whole)
    foreign.checkpoint({"version": audit_module.__version__, "config_hash": cfg.hash, "spec_hash": "0" * 16,
                        "rng_device": "cpu", "round": 4}, PARTIAL)
    with pytest.warns(CheckpointRefusedWarning, match="spec 0000000000000000"):
        out = audit_cached(cfg, spec, tmp_path / "foreign", force=True)
    assert _document(out) == _document(whole)


def test_command_line_says_the_same_command_resumes(tmp_path, monkeypatch, capsys):
    cfg = dpdl_ring()
    path = tmp_path / "ring.yaml"
    path.write_text("")  # read as ``cfg``
    monkeypatch.setattr(audit_module, "StopRequest", lambda: _StopAfter(2))
    monkeypatch.setattr(audit_module.ExperimentConfig, "from_yaml", staticmethod(lambda p: cfg))
    assert audit_module.main([str(path), "--m", "60", "--victim", "1", "--root", str(tmp_path / "audit")]) == 130
    assert "interrupted at round 2; run the same command again to resume" in capsys.readouterr().err
