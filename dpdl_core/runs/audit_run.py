"""The empirical privacy audit of a training run: gradient (or input) canaries in one agent,
one observed channel (or its models), an ε lower bound (:mod:`dpdl_core.sim.audit`) beside the
nominal and the accountant's ε.

:func:`audit_run` trains a config with m white-box gradient canaries (Steinke, Nasr &
Jagielski 2023; docs/privacy.md, "Auditing") in one victim agent:

* canary c is the Dirac direction u_c = e_{k_c} of a parameter coordinate k_c, the m
  coordinates distinct and drawn from ``derive_seed(seed, "audit", "directions")`` before
  the inclusion is drawn;
* each canary is in with probability 1/2 (:func:`~dpdl_core.sim.audit.draw_inclusion`, generator
  ``derive_seed(seed, "audit", "inclusion")``);
* in every round, each canary that is in is sampled with the victim's sampling rate
  q = B / n_victim (independent coins from ``derive_seed(seed, "audit", "sampling")``, drawn
  before the round's step), and a sampled canary adds its clipped gradient C·u_c to every
  sum of clipped per-sample gradients the victim computes from its batch in that round
  (:meth:`~dpdl_core.sim.engine.Engine.clipped_sums` rows whose batch is the victim's), before
  the noise, as one more example of its batch;
* an honest-but-curious observer keeps the sum of every message of one channel that the
  victim sends (``CG`` cross-gradients, or the ``gradient`` the baselines' broadcasts
  reveal), and scores canary c by Σ_t ⟨u_c, message_t⟩
  (:func:`~dpdl_core.sim.audit.gradient_canary_scores`);
* a second, informed observer also knows the victim's other examples and which of them
  each round's batch holds (the white-box auditor of Nasr et al. 2023): it subtracts their
  clipped sum from each message (matched by the model the message was computed at) and
  scores what is left, the canaries plus the noise. On a small model the real gradients
  drift in every coordinate by more than a canary adds, which the neighbour cannot tell
  apart from the canaries and the informed observer removes;
* each observer's scores give an audited ε at the spec's confidence
  (:func:`~dpdl_core.sim.audit.best_k_epsilon_lower_bound`), and beside it the f-DP audit's ε
  from the same guesses (:func:`~dpdl_core.sim.audit.best_k_fdp_epsilon_lower_bound`: the
  Gaussian trade-off curve tested, tighter where the mechanism's curve is Gaussian).

Batch clipping (PDSL's default, DP-CGA's ``clip="batch"``: :func:`batch_clipped`) releases
clip_C(ḡ) + z, one vector of norm at most C, whose sensitivity to one example is 2C (the
accountant's ``noise_scale`` ½): one example can turn the clipped batch mean from C·v to
−C·v. There a sampled canary moves every release of the victim's batch by that sensitivity,
(C / noise_scale)·u_c in the noise's units, after the clip and before the release (it enters
through the run context's noise draw), and the informed observer's real part of a message is
the victim's clipped batch gradient. This is the worst case the accountant charges for; a
real example moves a clipped batch mean by 2C only when it dominates its batch.

The injection wraps the engine's ``clipped_sums`` (or ``batch_gradients`` and the context's
``noise``) on the run's own instances only (:class:`CanaryAuditor`); the training loop, the
algorithms and the kernels are unchanged, and the batches and noise come from the run's own
streams.

``AuditSpec(kind="input")`` puts input-space canaries in the victim's data instead:
mislabelled or out-of-distribution examples, sampled and clipped like the victim's own, and
scored by an observer of the victim's models alone (black-box;
:mod:`dpdl_core.runs.input_canaries`).

Results go to ``results/audit/<config hash>-<spec hash>.json`` (:func:`audit_path`), each an
audit's :class:`~dpdl_core.runs.slots.JsonSlot` (the store protocol of every kind of durable work:
checksummed, written atomically, computed under a lease); :func:`audit_cached` skips a pair
already stored. :func:`audit_table` reads them, verified. An audit in progress keeps its partial
work beside them (``<config hash>-<spec hash>.partial.pt``: the run's state, random streams and
message counts, and what the observers have summed) every ``config.checkpoint_every`` rounds and
when Ctrl-C stops it after the round; the same call resumes from it, and storing the result
deletes it.

Command line: ``python -m dpdl_core.runs.audit_run --help``.
"""
from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from ..home import REPO_ROOT, __version__
from ..sim.algorithms import display_name
from ..sim.audit import (
    INPUT_SCORES,
    best_k_epsilon_lower_bound,
    best_k_fdp_epsilon_lower_bound,
    draw_inclusion,
    fdp_epsilon_from_counts,
    gradient_canary_scores,
)
from ..sim.data import data_record
from ..sim.loop import training_rounds
from ..sim.seeding import derive_seed
from .config import ExperimentConfig
from .input_canaries import CANARIES, OBSERVED, InputCanaryAuditor, draw_input_canaries
from .results import CorruptResultWarning, ResultStore
from .runner import RunInterrupted, StopRequest, prepare
from .slots import JsonSlot

__all__ = ["AuditSpec", "CanaryAuditor", "DEFAULT_CHANNELS", "audit_run", "audit_cached", "audit_path", "audit_slot",
           "audit_table", "batch_clipped", "fdp_epsilon", "main"]

KINDS = ("gradient", "input")
# Fields whose value at the default is left out of the spec's hash (added after audits were
# stored under the hash of the other fields).
HASHED_UNLESS = {"canary": None, "score": None, "observed": None}
# The channel whose messages carry the victim's noisy clipped sums, per algorithm.
DEFAULT_CHANNELS = {"dpdl": "CG", "dp_cga": "CG", "pdsl": "CG"}
# Channels whose messages contain +(clipped sum)/B: the score's sign is right on them.
GRADIENT_CHANNELS = ("CG", "MM", "gradient")
# Option fields by which an algorithm says it clips the batch gradient as a whole.
BATCH_CLIP_FIELDS = ("clipping", "clip")
AUDIT_DIR = REPO_ROOT / "results" / "audit"


@dataclass(frozen=True)
class AuditSpec:
    """What to audit in a run (kept apart from the config, whose hash keys the stored runs).

    Attributes
    ----------
    m : int
        Canaries (gradient canaries: at most the model's parameter count).
    kind : {"gradient", "input"}
        ``gradient``: white-box gradient canaries (Dirac directions), scored from one channel
        of the victim's messages. ``input``: input-space canaries, real examples in the
        victim's data (:mod:`dpdl_core.runs.input_canaries`), scored from the victim's models
        alone (black-box).
    channel : str, optional
        The channel the gradient-canary observer keeps (``CG``, ``MM``, ``gradient``);
        ``None``: the algorithm's in :data:`DEFAULT_CHANNELS`, else ``gradient``. Input
        canaries are scored from models: leave it ``None``.
    victim : int, optional
        The agent holding the canaries; ``None``: the agent with the fewest training samples
        (the largest sampling rate, the largest accountant ε).
    confidence : float
        Of the lower bound.
    delta : float, optional
        δ of the audited (ε, δ) hypothesis; ``None``: the config's δ.
    canary : {"mislabelled", "out_of_distribution"}, optional
        The input canaries (kind ``input`` only; default ``mislabelled``).
    score : {"loss", "margin"}, optional
        The input canaries' score at each observed model (kind ``input`` only; default
        ``loss``): :func:`~dpdl_core.sim.audit.input_canary_scores`.
    observed : {"final", "every_round"}, optional
        The victim's models the input canaries are scored at (kind ``input`` only; default
        ``final``): the model the run ends with, or the model after every round, scores
        summed.
    """

    m: int = 1000
    kind: str = "gradient"
    channel: str | None = None
    victim: int | None = None
    confidence: float = 0.95
    delta: float | None = None
    canary: str | None = None
    score: str | None = None
    observed: str | None = None

    def __post_init__(self):
        if isinstance(self.m, bool) or not isinstance(self.m, int) or self.m < 2:
            raise ValueError(f"m={self.m!r} must be an integer >= 2 (the number of canaries)")
        if self.kind not in KINDS:
            raise ValueError(f"kind={self.kind!r} is not known; allowed values: {list(KINDS)}")
        if self.kind == "input":
            self._check_input()
        for name in HASHED_UNLESS:
            if self.kind == "gradient" and getattr(self, name) is not None:
                raise ValueError(f"{name}={getattr(self, name)!r} is an option of input canaries: pass "
                                 f"kind='input', or leave {name} unset for gradient canaries")
        if self.channel is not None and self.channel not in GRADIENT_CHANNELS:
            raise ValueError(f"channel={self.channel!r}: the gradient-canary score reads a channel that carries "
                             f"+(clipped sum)/B; allowed values: {list(GRADIENT_CHANNELS)}")
        if not 0 < self.confidence < 1:
            raise ValueError(f"confidence={self.confidence!r} must be in (0, 1), e.g. 0.95")
        if self.delta is not None and not 0 <= self.delta < 1:
            raise ValueError(f"delta={self.delta!r} must be in [0, 1)")

    def _check_input(self) -> None:
        """Input canaries: fill in the default canary and score, check them and the channel."""
        object.__setattr__(self, "canary", self.canary or CANARIES[0])
        object.__setattr__(self, "score", self.score or INPUT_SCORES[0])
        object.__setattr__(self, "observed", self.observed or OBSERVED[0])
        if self.canary not in CANARIES:
            raise ValueError(f"canary={self.canary!r} is not known; allowed values: {list(CANARIES)}")
        if self.score not in INPUT_SCORES:
            raise ValueError(f"score={self.score!r} is not known; allowed values: {list(INPUT_SCORES)}")
        if self.observed not in OBSERVED:
            raise ValueError(f"observed={self.observed!r} is not known; allowed values: {list(OBSERVED)}")
        if self.channel is not None:
            raise ValueError(f"channel={self.channel!r}: input canaries are scored from the victim's models, "
                             f"not from a channel; leave channel unset")

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def hash(self) -> str:
        """16 hex digits of the spec's canonical JSON, without the fields of
        :data:`HASHED_UNLESS` at their defaults (so a spec of the gradient kind keeps its hash)."""
        spec = {k: v for k, v in self.to_dict().items() if not (k in HASHED_UNLESS and v == HASHED_UNLESS[k])}
        return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:16]

    def channel_for(self, algorithm: str) -> str:
        if self.kind == "input":
            return "models"
        return self.channel or DEFAULT_CHANNELS.get(algorithm, "gradient")


class CanaryAuditor:
    """Injects the canaries into the victim's releases and observes one channel.

    Installed as a tap of :func:`~dpdl_core.sim.loop.training_rounds`: :meth:`probe` draws the
    round's sampled canaries before the step, :meth:`observe` adds the victim's messages of
    the channel to a running sum (the scores are linear in the messages). :meth:`install`
    wraps the run's engine's ``clipped_sums`` or, for batch clipping, its
    ``batch_gradients`` and the run context's ``noise`` (those instances only).
    """

    # What the auditor accumulates over the rounds, kept in an audit's checkpoint with the
    # state of ``sampling`` (:func:`audit_run`).
    KEPT = ("total", "observed", "injections", "participations", "residual", "unmatched")

    def __init__(self, prep, spec: AuditSpec, victim: int, coords: torch.Tensor, included: np.ndarray, q: float):
        self.prep, self.spec, self.victim, self.q = prep, spec, victim, q
        self.batch = batch_clipped(prep.algorithm.params)
        self.channel = spec.channel_for(prep.config.algorithm)
        self.coords = coords
        self.included = torch.as_tensor(included)
        self.sampling = torch.Generator().manual_seed(derive_seed(prep.config.seed, "audit", "sampling"))
        self.active = torch.zeros(spec.m, dtype=torch.bool)
        self.total = torch.zeros(prep.engine.P, dtype=torch.float64)
        self.observed = 0  # messages of the channel seen
        self.injections = 0  # clipped sums of the victim's batch that received the round's canaries
        self.participations = torch.zeros(spec.m, dtype=torch.long)
        # The informed observer's view: the victim's messages less what its real examples put
        # in them, at the canaries' coordinates.
        self.residual = torch.zeros(spec.m, dtype=torch.float64)
        self.unmatched = 0  # victim's messages with no clipped sum of the round at their model
        self._clean: list[tuple[torch.Tensor, torch.Tensor]] = []  # this round's (model, real sum/units)

    def install(self) -> None:
        """Wrap the engine's kernel the mechanism clips with (and, for batch clipping, the
        run context's noise draw), on this run's instances only."""
        if self.batch:
            self._install_batch()
            return
        engine = self.prep.engine
        original = type(engine).clipped_sums.__get__(engine)

        def clipped_sums(X, data_index, xb, yb, clip, unit=1):
            sums, losses = original(X, data_index, xb, yb, clip, unit)
            rows = torch.nonzero(data_index == self.victim).squeeze(1)
            if len(rows):
                self.injections += len(rows)
                units = yb.shape[1] // unit  # messages are (clipped sum + noise)/units
                real = sums[rows][:, self.coords.to(sums.device)].detach().double().cpu() / units
                self._clean.extend(zip(X[rows].detach(), real))
                cols = self.coords[self.active].to(sums.device)
                if len(cols):
                    sums[rows.unsqueeze(1), cols.unsqueeze(0)] += clip
            return sums, losses

        engine.clipped_sums = clipped_sums

    def _install_batch(self) -> None:
        """Batch clipping: the release is clip_C(ḡ) + z, one vector of norm ≤ C per
        message, whose sensitivity to one example is 2C (an example can turn the clipped
        batch mean from C·v to −C·v), the sensitivity the accountant charges
        (``noise_scale``). A sampled canary moves the release by exactly that: it adds
        (C / noise_scale)·u_c, in the noise's units, to the noise draw of every message of the
        victim's batch in the round (after the clip, before the release), and the informed
        observer's real part of a message is the clipped batch gradient itself."""
        engine, ctx = self.prep.engine, self.prep.ctx
        gradients = type(engine).batch_gradients.__get__(engine)
        noise = type(ctx).noise.__get__(ctx)
        clip = float(ctx.clip)
        shift = clip / float(self.prep.sigma_report.noise_scale)

        def batch_gradients(X, data_index, xb, yb):
            grads, losses = gradients(X, data_index, xb, yb)
            rows = torch.nonzero(data_index == self.victim).squeeze(1)
            if len(rows):
                g = grads[rows].detach()
                clipped = g * torch.clamp(clip / (g.norm(dim=1, keepdim=True) + 1e-12), max=1.0)
                self._clean.extend(zip(X[rows].detach(), clipped[:, self.coords.to(g.device)].double().cpu()))
            return grads, losses

        def victim_noise(owners, P):
            z = noise(owners, P)
            rows = torch.nonzero(owners == self.victim).squeeze(1)
            cols = self.coords[self.active].to(z.device)
            self.injections += len(rows)
            if len(rows) and len(cols):
                z[rows.unsqueeze(1), cols.unsqueeze(0)] += shift
            return z

        engine.batch_gradients = batch_gradients
        ctx.noise = victim_noise

    def uninstall(self) -> None:
        for name in ("clipped_sums", "batch_gradients"):
            self.prep.engine.__dict__.pop(name, None)
        self.prep.ctx.__dict__.pop("noise", None)

    def probe(self, t: int, prep, state) -> None:
        self._clean = []
        coins = torch.rand(self.spec.m, generator=self.sampling) < self.q
        self.active = coins & self.included
        self.participations += self.active.long()

    def observe(self, ctx, channel, messages, models, owners) -> None:
        if channel != self.channel:
            return
        rows = owners == self.victim
        if bool(rows.any()):
            self.total += messages[rows].detach().double().sum(0).cpu()
            self.observed += int(rows.sum())
            for msg, model in zip(messages[rows], models[rows]):
                real = next((r for x, r in self._clean if torch.equal(x, model)), None)
                if real is None:
                    self.unmatched += 1
                    continue
                self.residual += msg[self.coords.to(msg.device)].detach().double().cpu() - real

    def scores(self) -> np.ndarray:
        """Σ_t ⟨u_c, message_t⟩ for every canary: the Dirac directions restricted to their
        coordinates are the identity."""
        return gradient_canary_scores(np.eye(self.spec.m), self.total[self.coords].numpy())

    def informed_scores(self) -> np.ndarray:
        """The same scores for an observer that also knows the victim's other examples and
        its batches (the white-box auditor of Nasr et al. 2023), so it subtracts their
        clipped sum from each message: what is left is the canaries plus the noise."""
        return gradient_canary_scores(np.eye(self.spec.m), self.residual.numpy())


def batch_clipped(params) -> bool:
    """Whether an algorithm's options say it clips the batch gradient as a whole (PDSL's
    ``clipping``, DP-CGA's ``clip``): its releases are then clip_C(ḡ) + noise, and the
    canaries enter after the clip (:meth:`CanaryAuditor._install_batch`)."""
    return any(getattr(params, name, None) == "batch" for name in BATCH_CLIP_FIELDS)


def _victim(prep, spec: AuditSpec) -> int:
    sizes = prep.sizes.numpy()
    if spec.victim is None:
        return int(np.argmin(sizes))
    if not 0 <= spec.victim < len(sizes):
        raise ValueError(f"victim={spec.victim} is not an agent of n_agents={len(sizes)}")
    return int(spec.victim)


PARTIAL = "partial"  # the audit slot's stage that holds its checkpoint


def _partial_problem(saved, config: ExperimentConfig, spec: AuditSpec) -> str | None:
    """Why an audit checkpoint cannot resume the audit of ``config`` with ``spec`` (None: it can)."""
    if not isinstance(saved, dict) or "version" not in saved:
        return "not an audit checkpoint (no version recorded)"
    if saved["version"] != __version__:
        return f"written by dpdl_core {saved['version']}, this is {__version__}"
    if (saved.get("config_hash"), saved.get("spec_hash")) != (config.hash, spec.hash()):
        return (f"written for config {saved.get('config_hash')} and spec {saved.get('spec_hash')}, "
                f"not {config.hash} and {spec.hash()}")
    if saved.get("rng_device") != "cpu":
        return "its random streams were not drawn on the CPU"
    return None


def _audit_checkpoint(slot: JsonSlot, t: int, prep, state: dict, auditor, elapsed: float) -> None:
    """Keep round t's partial work as the slot's stage :data:`PARTIAL`: the algorithm's state and
    counters, the run's random streams and ``sent`` counter (as a training run's checkpoint
    keeps them) and what the auditor has accumulated (its ``KEPT`` fields and its canary
    sampling stream)."""
    config_hash, spec_hash = slot.key.split("-")
    rngs = prep.rngs
    slot.checkpoint({
        "version": __version__,
        "config_hash": config_hash,
        "spec_hash": spec_hash,
        "rng_device": "cpu",
        "round": t,
        "elapsed": elapsed,
        "state": state,
        "counters": prep.algorithm.counters(),
        "batch_rng": rngs.batches.get_state(),
        "noise_rng": rngs.noise.get_state(),
        "algorithm_rng": rngs.algorithm.get_state(),
        "schedule_rng": rngs.schedule.bit_generator.state,
        "dropout_rng": rngs.dropout.get_state(),
        "sent": prep.ctx.sent.clone(),
        "auditor": {**{name: getattr(auditor, name) for name in auditor.KEPT},
                    "sampling": auditor.sampling.get_state()},
    }, PARTIAL)


def _audit_restore(saved: dict, prep, auditor) -> dict:
    """Put an audit checkpoint's streams, counters and accumulators back; returns its state."""
    rngs = prep.rngs
    rngs.batches.set_state(saved["batch_rng"])
    rngs.noise.set_state(saved["noise_rng"])
    rngs.algorithm.set_state(saved["algorithm_rng"])
    rngs.schedule.bit_generator.state = saved["schedule_rng"]
    rngs.dropout.set_state(saved["dropout_rng"])
    prep.ctx.sent = saved["sent"]
    prep.algorithm.restore_counters(slice(None), saved["counters"])
    kept = saved["auditor"]
    for name in auditor.KEPT:
        setattr(auditor, name, kept[name])
    auditor.sampling.set_state(kept["sampling"])
    return saved["state"]


def audit_run(config: ExperimentConfig, spec: AuditSpec, progress: bool = False, slot: JsonSlot | None = None,
              stop=None) -> dict:
    """Train ``config`` for its ``rounds`` with ``spec``'s canaries and audit one channel.

    With ``slot`` (the audit's, :func:`audit_slot`), the audit resumes from the partial work
    kept there (one of another package version, config or spec is refused with a
    :class:`~dpdl_core.runs.slots.CheckpointRefusedWarning` and the audit starts from round 1),
    and keeps its partial work there every ``config.checkpoint_every`` rounds. ``stop``: an
    object whose ``requested`` turns true on Ctrl-C (``runner.StopRequest``); the audit then
    finishes the round, keeps it in ``slot`` and raises
    :class:`~dpdl_core.runs.runner.RunInterrupted`.

    Input canaries (``spec.kind == "input"``, :mod:`dpdl_core.runs.input_canaries`) are
    scored from the victim's models: their ``channel`` is ``models``, ``messages_observed``
    counts the models scored, and the informed observer's entries and
    ``unmatched_messages`` are None.

    Returns
    -------
    dict
        ``config`` and ``spec`` (with their hashes), the victim, its samples and q, the
        channel, ``epsilon_nominal`` (``config.epsilon``; None without DP),
        ``epsilon_accountant`` (the victim's accountant ε for the mechanism that ran, over
        ``config.rounds``), ``sigma``, ``epsilon_audit`` and the counts behind it
        (``audit``: :class:`~dpdl_core.sim.audit.AuditResult`), the informed observer's
        ``epsilon_audit_informed`` and ``audit_informed`` (None when a message could not be
        matched to its clipped sum: ``unmatched_messages``), the f-DP audit's
        ``epsilon_audit_fdp`` / ``audit_fdp`` and ``epsilon_audit_fdp_informed`` /
        ``audit_fdp_informed`` (None at δ = 0, where a Gaussian curve has ε = ∞), canaries
        in, mean participations of an in canary, messages observed, seconds.

    Raises
    ------
    ValueError
        When the victim's messages pass through neither a per-sample clipped sum nor a
        batch-clipped gradient, or the channel is never seen.
    """
    start = time.perf_counter()
    prep = prepare(config)
    P = prep.engine.P
    if spec.kind == "gradient" and spec.m > P:
        raise ValueError(f"m={spec.m} canaries need m distinct coordinates; the model has P={P}")
    victim = _victim(prep, spec)
    n_victim = int(prep.sizes[victim])
    q = min(1.0, config.batch_size / n_victim)
    if spec.kind == "input":
        x, y = draw_input_canaries(prep, spec.m, spec.canary)
    else:
        coords = torch.randperm(P, generator=torch.Generator().manual_seed(
            derive_seed(config.seed, "audit", "directions")))[: spec.m]
    included = draw_inclusion(spec.m, np.random.default_rng(derive_seed(config.seed, "audit", "inclusion")))
    if spec.kind == "input":
        auditor = InputCanaryAuditor(prep, spec.m, victim, x, y, included, q, spec.score, spec.observed)
    else:
        auditor = CanaryAuditor(prep, spec, victim, coords, included, q)
    state = prep.algorithm.init_state(prep.initial_models())
    saved = None if slot is None else slot.resume(PARTIAL, check=lambda obj: _partial_problem(obj, config, spec))
    first, elapsed = 1, 0.0
    if saved is not None:
        state = _audit_restore(saved, prep, auditor)
        first, elapsed = saved["round"] + 1, saved["elapsed"]
        if progress:
            print(f"  resuming from round {first}", file=sys.stderr)
    auditor.install()
    try:
        for t, losses in training_rounds(prep, state, first, config.rounds, taps=[auditor]):
            if not auditor.injections:
                raise ValueError(f"{config.algorithm} released nothing from agent {victim}'s batch in round {t} "
                                 f"through a clipped sum or a batch-clipped gradient: the {spec.kind} canaries "
                                 f"have nowhere to enter")
            if progress:
                print(f"\r  round {t}/{config.rounds} loss {float(losses.mean()):.3g}", end="", file=sys.stderr)
            stopping = stop is not None and stop.requested and t < config.rounds
            periodic = config.checkpoint_every and t % config.checkpoint_every == 0
            if slot is not None and (stopping or periodic) and t < config.rounds:
                _audit_checkpoint(slot, t, prep, state, auditor, elapsed + time.perf_counter() - start)
            if stopping:
                resume = "run the same command again to resume" if slot is not None else "a rerun starts from round 1"
                raise RunInterrupted(f"audit interrupted at round {t}; {resume}")
    finally:
        auditor.uninstall()
        if progress:
            print(file=sys.stderr)
    if spec.kind == "input":
        auditor.finish(state)
    elif not auditor.observed:
        raise ValueError(f"channel {auditor.channel!r} showed no message of agent {victim}; "
                         f"pick another AuditSpec.channel")
    delta = config.delta if spec.delta is None else spec.delta
    result = best_k_epsilon_lower_bound(auditor.scores(), included, delta, spec.confidence)
    informed = informed_fdp = fdp = None
    unmatched = getattr(auditor, "unmatched", None)  # None: input canaries have no informed observer
    if unmatched == 0:
        informed = best_k_epsilon_lower_bound(auditor.informed_scores(), included, delta, spec.confidence)
    if delta > 0:
        fdp = best_k_fdp_epsilon_lower_bound(auditor.scores(), included, delta, spec.confidence)
        if unmatched == 0:
            informed_fdp = best_k_fdp_epsilon_lower_bound(auditor.informed_scores(), included, delta, spec.confidence)
    report = prep.sigma_report
    in_parts = auditor.participations[torch.as_tensor(included)].double()
    return {
        "config": config.to_dict(),
        "config_hash": config.hash,
        "spec": spec.to_dict(),
        "spec_hash": spec.hash(),
        "algorithm": config.algorithm,
        "victim": victim,
        "victim_samples": n_victim,
        "q": q,
        "channel": spec.channel_for(config.algorithm),
        "rounds": config.rounds,
        "epsilon_nominal": config.epsilon,
        "epsilon_accountant": float(report.epsilon_rdp[victim]),
        "sigma": float(report.sigma[victim]),
        "sigma_rule": report.rule,
        "epsilon_audit": result.epsilon,
        "audit": result.to_dict(),
        "epsilon_audit_informed": None if informed is None else informed.epsilon,
        "audit_informed": None if informed is None else informed.to_dict(),
        "epsilon_audit_fdp": None if fdp is None else fdp.epsilon,
        "audit_fdp": None if fdp is None else fdp.to_dict(),
        "epsilon_audit_fdp_informed": None if informed_fdp is None else informed_fdp.epsilon,
        "audit_fdp_informed": None if informed_fdp is None else informed_fdp.to_dict(),
        "unmatched_messages": unmatched,
        "canaries_in": int(included.sum()),
        "mean_participations": float(in_parts.mean()) if len(in_parts) else 0.0,
        "messages_observed": auditor.observed,
        "dataset": data_record(prep.data.meta),
        "seconds": elapsed + time.perf_counter() - start,
    }


def audit_path(config: ExperimentConfig, spec: AuditSpec, root: str | Path | None = None) -> Path:
    """``<root>/<config hash>-<spec hash>.json``; root defaults to ``results/audit``."""
    return Path(root or AUDIT_DIR) / f"{config.hash}-{spec.hash()}.json"


def audit_slot(config: ExperimentConfig, spec: AuditSpec, root: str | Path | None = None,
               read_only: bool = False) -> JsonSlot:
    """The audit's slot (:class:`~dpdl_core.runs.slots.JsonSlot`): its file is :func:`audit_path`,
    its lease and journal those of the audit folder, like every other kind of durable work, and
    its partial work the stage :data:`PARTIAL` (``<config hash>-<spec hash>.partial.pt``)."""
    return JsonSlot(ResultStore(Path(root or AUDIT_DIR), read_only=read_only), f"{config.hash}-{spec.hash()}", ".",
                    stages=(PARTIAL,))


def audit_cached(config: ExperimentConfig, spec: AuditSpec, root: str | Path | None = None,
                 force: bool = False, progress: bool = False) -> dict:
    """:func:`audit_run`, stored at :func:`audit_path` with its checksum; a stored pair is read,
    not rerun, unless ``force``. The audit is computed under its slot's lease: a second process
    asking for the same pair waits and then reads what the first stored.

    The audit keeps its partial work beside the result (``<config hash>-<spec hash>.partial.pt``)
    every ``config.checkpoint_every`` rounds, and on Ctrl-C after finishing the round (then
    :class:`~dpdl_core.runs.runner.RunInterrupted` is raised); the next call for the pair
    resumes from it, and storing the result deletes it."""
    slot = audit_slot(config, spec, root)
    stop = StopRequest()
    try:
        with slot.held(force) as found:
            if found is not None:
                return found
            out = audit_run(config, spec, progress=progress, slot=slot, stop=stop)
            slot.finish(out)
    finally:
        stop.restore()
    return slot.stored()  # as every later read returns it (numpy scalars as Python numbers)


TABLE_COLUMNS = ["mechanism", "algorithm", "paper", "kind", "sigma_rule", "channel", "epsilon_nominal",
                 "nominal_source", "epsilon_accountant",
                 "epsilon_audit", "epsilon_audit_informed", "epsilon_audit_fdp", "epsilon_audit_fdp_informed",
                 "confidence", "m", "rounds", "seed", "q", "sigma",
                 "guesses", "correct", "config_hash", "spec_hash"]


def _variant(algo: dict) -> str:
    """The mechanism's label suffix where an option changes what is released: DPDL's
    micro-batches, PDSL's per-sample clipping (its default clips the batch), DP-CGA's batch
    clipping (its default clips per sample)."""
    if algo.get("clip_mode") == "microbatch":
        return " (micro-batch)"
    if algo.get("clipping") == "per_sample":
        return " (per-sample clip)"
    if algo.get("clip") == "batch":
        return " (batch clip)"
    return ""


def fdp_epsilon(record: dict, informed: bool = False) -> float | None:
    """The f-DP audit's ε of a stored audit (the neighbour's, or the informed observer's).

    Stored by :func:`audit_run` (``epsilon_audit_fdp``, the best k of the grid for the f-DP
    bound); for an audit stored without it, computed from the counts stored with the one-run
    bound (``audit``: m, the guesses and the correct ones at the k it chose) by
    :func:`~dpdl_core.sim.audit.fdp_epsilon_from_counts` at that bound's per-k confidence
    1 − (1 − confidence)/choices. That k was chosen from the same grid, whose every k the
    Bonferroni split covers, so the bound holds at ``confidence``; it can be below the best
    k's f-DP bound, never below the stored one-run ε. None without counts or at δ = 0.
    """
    suffix = "_informed" if informed else ""
    if f"epsilon_audit_fdp{suffix}" in record:
        return record[f"epsilon_audit_fdp{suffix}"]
    counts = record.get(f"audit{suffix}")
    if counts is None or not counts["delta"] > 0:
        return None
    confidence = 1 - (1 - counts["confidence"]) / counts.get("choices", 1)
    return fdp_epsilon_from_counts(counts["m"], counts["guesses"], counts["correct"], counts["delta"], confidence)


def _kind(spec: dict) -> str:
    """``gradient``, or ``input`` with the canaries and where they are scored, e.g.
    ``input (mislabelled, loss, final)``."""
    if spec.get("kind", "gradient") == "gradient":
        return "gradient"
    return f"input ({spec['canary']}, {spec['score']}, {spec['observed']})"


def audit_table(root: str | Path | None = None) -> pd.DataFrame:
    """One row per stored audit under ``root`` (default ``results/audit``): mechanism, the paper
    whose own mechanism it is (None for a variant), the canaries' kind (:func:`_kind`), nominal
    ε (and where it comes from, if not the config: e.g. "Theorem 3 as printed"), accountant ε
    (upper), audited ε (lower, at ``confidence``) for the neighbour and for the informed observer (None for input
    canaries), by the one-run bound and by the f-DP bound
    (:func:`fdp_epsilon`), m, rounds, and the run's q, σ and the neighbour's counts.
    Empty (with the columns) when nothing is stored."""
    rows = []
    store = ResultStore(Path(root or AUDIT_DIR), read_only=True)  # committed files: read, never moved
    for path in sorted(store.root.glob("*.json")):
        r = JsonSlot(store, path.stem, ".").stored()
        if r is None:
            warnings.warn(f"{path} fails its integrity check and is left out of the audit table; restore it "
                          f"(git checkout -- {path}) or delete it and audit again", CorruptResultWarning, stacklevel=2)
            continue
        variant = _variant(r["config"].get("algo", {}))
        rows.append({
            # A paper's own audit (e.g. the straggler paper's token ring) names its mechanism and paper.
            "mechanism": r.get("mechanism") or display_name(r["algorithm"]) + variant,
            "paper": r.get("paper") or (None if variant else r["algorithm"]),
            "algorithm": r["algorithm"],
            "kind": _kind(r["spec"]),
            "sigma_rule": r["sigma_rule"],
            "channel": r["channel"],
            "epsilon_nominal": r["epsilon_nominal"],
            "nominal_source": r.get("epsilon_nominal_source", ""),
            "epsilon_accountant": r["epsilon_accountant"],
            "epsilon_audit": r["epsilon_audit"],
            "epsilon_audit_informed": r.get("epsilon_audit_informed"),
            "epsilon_audit_fdp": fdp_epsilon(r),
            "epsilon_audit_fdp_informed": fdp_epsilon(r, informed=True),
            "confidence": r["audit"]["confidence"],
            "m": r["audit"]["m"],
            "rounds": r["rounds"],
            "seed": r["config"]["seed"],
            "q": r["q"],
            "sigma": r["sigma"],
            "guesses": r["audit"]["guesses"],
            "correct": r["audit"]["correct"],
            "config_hash": r["config_hash"],
            "spec_hash": r["spec_hash"],
        })
    return pd.DataFrame(rows, columns=TABLE_COLUMNS)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m dpdl_core.runs.audit_run",
        description="Empirical privacy audit (one-run, Steinke et al. 2023) of a config: m gradient canaries in one "
                    "agent and an observer of one channel, or m input canaries and an observer of the agent's "
                    "models; the audited epsilon beside the nominal and accountant ones.")
    p.add_argument("configs", nargs="*", help="YAML config files (ExperimentConfig fields)")
    p.add_argument("--preset", metavar="PAPER/DATASET/ALG", action="append", default=[],
                   help="a paper's preset for DATASET and algorithm ALG (e.g. dpdl/mnist/dp_cga; with --set "
                        "sigma_rule=authors_code for DPDL's paper noise); repeatable")
    p.add_argument("--set", metavar="KEY=VALUE", action="append", default=[],
                   help="config field to change, e.g. --set rounds=100 or --set algo.clip_mode=microbatch")
    p.add_argument("--m", type=int, default=1000, help="canaries (default 1000)")
    p.add_argument("--kind", choices=KINDS, default="gradient",
                   help="gradient: white-box gradient canaries scored from one channel (default); input: "
                        "input-space canaries scored from the victim's models (black-box)")
    p.add_argument("--canary", choices=CANARIES, default=None,
                   help=f"input canaries (--kind input; default {CANARIES[0]})")
    p.add_argument("--score", choices=INPUT_SCORES, default=None,
                   help=f"input canaries' score at a model (--kind input; default {INPUT_SCORES[0]})")
    p.add_argument("--observed", choices=OBSERVED, default=None,
                   help=f"victim's models the input canaries are scored at (--kind input; default {OBSERVED[0]})")
    p.add_argument("--channel", default=None,
                   help="observed channel of gradient canaries (default: CG for DPDL, DP-CGA, PDSL; else gradient)")
    p.add_argument("--victim", type=int, default=None, help="agent holding the canaries (default: the smallest)")
    p.add_argument("--confidence", type=float, default=0.95)
    p.add_argument("--delta", type=float, default=None, help="delta of the audited hypothesis (default: the config's)")
    p.add_argument("--root", default=None, help=f"where results go (default {AUDIT_DIR})")
    p.add_argument("--force", action="store_true", help="rerun a stored audit")
    p.add_argument("--table", action="store_true", help="print the stored audits and exit")
    p.add_argument("--threads", type=int, default=1, help="torch threads (default 1: leaves a core free)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.table:
        print(audit_table(args.root).to_string(index=False))
        return 0
    configs = [ExperimentConfig.from_yaml(path).with_overrides(args.set) for path in args.configs]
    for name in args.preset:
        from .. import papers

        parts = name.split("/")
        if len(parts) != 3 or parts[0] not in papers.PAPERS:
            _parser().error(f"--preset {name!r}: expected PAPER/DATASET/ALG with PAPER one of {list(papers.PAPERS)}")
        configs.append(papers.get_paper(parts[0]).preset(parts[1], algorithm=parts[2]).with_overrides(args.set))
    if not configs:
        _parser().error("nothing to audit: pass config files or --preset PAPER/DATASET/ALG")
    torch.set_num_threads(max(1, args.threads))
    try:
        spec = AuditSpec(m=args.m, kind=args.kind, channel=args.channel, victim=args.victim,
                         confidence=args.confidence, delta=args.delta, canary=args.canary, score=args.score,
                         observed=args.observed)
    except ValueError as exc:
        _parser().error(str(exc))
    for config in configs:
        try:
            out = audit_cached(config, spec, args.root, force=args.force, progress=True)
        except RunInterrupted as exc:
            print(f"\n{display_name(config.algorithm)} [{config.hash}]: {exc}", file=sys.stderr)
            return 130
        except KeyboardInterrupt:
            every = config.checkpoint_every
            where = (f"resume from its last checkpoint (one every {every} rounds)" if every
                     else "start it again (checkpoint_every=0: no periodic checkpoint)")
            print(f"\n{display_name(config.algorithm)} [{config.hash}]: audit stopped; run the same command "
                  f"again to {where}", file=sys.stderr)
            return 130
        print(f"{display_name(config.algorithm)} [{config.hash}]: nominal eps {out['epsilon_nominal']}, "
              f"accountant eps {out['epsilon_accountant']:.4g}, audited eps {out['epsilon_audit']:.3f} "
              f"(informed observer {out['epsilon_audit_informed']}; f-DP {out['epsilon_audit_fdp']}, "
              f"informed {out['epsilon_audit_fdp_informed']}) "
              f"({out['audit']['correct']}/{out['audit']['guesses']} right, m={spec.m}, {out['rounds']} rounds, "
              f"{out['seconds']:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
