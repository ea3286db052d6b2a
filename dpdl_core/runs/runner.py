"""``run(config) -> RunResult``: one decentralized training run, stored and resumable.

A run is identified by its config hash. If the results store already holds it (and the
file passes its integrity check, :mod:`dpdl_core.runs.results`), it is loaded, not recomputed.
While running, a checkpoint (algorithm state, generator states, history so far) is
written every ``checkpoint_every`` rounds, atomically (temp file + rename: a kill during
the write leaves the previous checkpoint); a rerun of the same config continues from it,
so an interrupted run loses at most those rounds and duplicates none.

Each run is a :class:`~dpdl_core.runs.slots.RunSlot` of the store, the protocol every kind of
durable work follows (:mod:`dpdl_core.runs.slots`). Concurrency: a run that saves holds its
lease (an ``flock`` the kernel releases if the process dies) from before it looks for a
checkpoint until its result is stored. A second process asking for the same run waits for
the lease, then finds the result stored and loads it, so two sweeps on one folder compute
each run once. Each computation and store is logged to the store's ``journal.jsonl``.

Checkpoints record the package version, the config hash they belong to and where their
random streams live (``rng_device``: "cpu" since GPU runs draw on the CPU too). One that does
not match (written by another version, copied from another run, holding a GPU generator's
state) or cannot be read is
refused: a :class:`CheckpointRefusedWarning` names it and why, it is renamed to
``<hash>.pt.refused`` and the run starts from round 1. Starting afresh rather than raising
keeps an unattended sweep going, and costs only time: the result is the same.
"""
from __future__ import annotations

import contextlib
import functools
import signal
import sys
import threading
import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import torch

from ..home import __version__
from ..sim.algorithms import get_algorithm
from ..sim.algorithms.base import RunContext
from ..sim.data import (
    Dataset,
    data_record,
    describe,
    dirichlet_partition,
    load_dataset,
    require_full_data,
    validation_split,
)
from ..sim.engine import Engine, consensus_distance
from ..sim.loop import training_rounds
from ..sim.models import build_model
from ..sim.privacy import SigmaRequest, calibrate
from ..sim.progress import Progress, note
from ..sim.schedules import make_schedule
from ..sim.seeding import derive_seed, make_rngs
from ..sim.topology import make_topology
from .config import ConfigError, ExperimentConfig
from .provenance import provenance
from .results import ResultStore
from .slots import CheckpointRefusedWarning, RunSlot, SaveFailed, read_checkpoint

__all__ = ["CheckpointRefusedWarning", "EXPLOSION_FACTOR", "Prepared", "ResultNotSaved", "RunInterrupted", "RunResult",
           "StopRequest",
           "check_before_training", "prepare",
           "read_checkpoint", "run", "run_stack", "sigma_for"]

# A run is marked diverged, and stops, once its mean train loss is not finite or exceeds this
# multiple of its first round's: no run that learns comes near it (noisy DP runs stay within
# a few times their start), and a loss of 1e13 is no result to average or tabulate.
EXPLOSION_FACTOR = 1e3
# Models a stack evaluates in one call: more makes the activations of a 2,000-image batch
# memory-bound on the CPU (docs/benchmarks.md, "Stacked runs").
EVAL_MODELS_PER_CALL = 64


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C during a run; the message says the round reached and where a rerun resumes."""


class ResultNotSaved(RuntimeError):
    """A finished run whose result file could not be written (disk full, read-only folder): its
    computed rounds are kept in its checkpoint, and the message says where and what to free."""


class StopRequest:
    """Ctrl-C while a run computes: the first finishes the round and checkpoints it (so a
    rerun resumes right after it), a second stops at once (the rerun resumes from the last
    periodic checkpoint). Only the main thread can take signals; elsewhere Ctrl-C acts as usual."""

    def __init__(self):
        self.requested = False
        self._previous = None
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._handle)

    def _handle(self, signum, frame) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True
        print("\nCtrl-C: finishing this round and saving a checkpoint (press Ctrl-C again to stop at once)",
              file=sys.stderr, flush=True)

    def restore(self) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
        elif threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGINT, signal.default_int_handler)  # the previous one was set outside Python


def _interruptible(configs: list[ExperimentConfig], store: ResultStore, progress: bool | None, force: bool,
                   save: bool) -> list[RunResult]:
    """:func:`_compute` with Ctrl-C turned into a checkpoint and a :class:`RunInterrupted`."""
    stop = StopRequest()
    try:
        return _compute(configs, store, progress, force, save, stop)
    finally:
        stop.restore()


@dataclass
class RunResult:
    """A finished run.

    Attributes
    ----------
    config : ExperimentConfig
    history : pd.DataFrame
        Long format ``round, agent, metric, value``; ``agent = -1`` for network-wide
        metrics (``train_loss_mean/min/max``, ``avg_test_acc``, ``avg_test_loss``,
        ``consensus``); per agent ``train_loss``, ``test_acc``, ``test_loss``.
    meta : dict
        σ report, dataset provenance, wall time, divergence flag.
    cached : bool
        True when loaded from the store rather than computed.
    """

    config: ExperimentConfig
    history: pd.DataFrame
    meta: dict = field(default_factory=dict)
    cached: bool = False

    @property
    def hash(self) -> str:
        return self.config.hash

    def curves(self) -> pd.DataFrame:
        """Wide per-round table: one column per network-wide metric."""
        net = self.history[self.history["agent"] == -1]
        return net.pivot_table(index="round", columns="metric", values="value")

    def final(self, metric: str = "avg_test_acc") -> float:
        rows = self.history[(self.history["metric"] == metric) & (self.history["agent"] == -1)]
        return float(rows.sort_values("round")["value"].iloc[-1])


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("device='cuda' but torch sees no CUDA device; use device=cpu or device=auto")
    return torch.device(name)


@functools.lru_cache(maxsize=4)
def _dataset(name: str) -> Dataset:
    return load_dataset(name)


@dataclass
class Prepared:
    """Everything a run builds before its first round (also used by benchmarks/notebooks)."""

    config: ExperimentConfig
    data: Dataset
    parts: list
    engine: Engine
    ctx: RunContext
    algorithm: object
    sigma_report: object
    index: torch.Tensor  # (N, max_n) global indices, padded
    sizes: torch.Tensor  # (N,)
    x_train: torch.Tensor
    y_train: torch.Tensor
    x_eval: torch.Tensor
    y_eval: torch.Tensor
    rngs: object
    x_val: torch.Tensor | None = None
    y_val: torch.Tensor | None = None

    def initial_models(self) -> torch.Tensor:
        """``(N, P)`` x_0 of every agent: the template model copied to all (``init:
        shared``), or agent i's own model drawn from ``derive_seed(seed, "init", i)``
        (``init: per_agent``)."""
        c = self.config
        if c.init == "shared":
            return self.engine.initial_params(c.n_agents)
        models = [build_model(c.model, c.dataset, seed=derive_seed(c.seed, "init", i)) for i in range(c.n_agents)]
        flat = [torch.cat([p.detach().reshape(-1) for p in m.parameters()]) for m in models]
        return torch.stack(flat).to(self.engine.device).contiguous()

    def sample_batches(
        self, batch_size: int | None = None, generator: torch.Generator | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Each agent's batch of B distinct local samples (with replacement only for an
        agent holding fewer than B, which only an attack's own ``batch_size`` can be:
        :func:`prepare` refuses a run whose batch exceeds its smallest agent): ``(N, B, ...)``, ``(N, B)``.

        ``batch_size`` and ``generator`` default to the run's; the attacks pass their own
        so that an intercepted round leaves the training trajectory untouched."""
        B = batch_size or self.config.batch_size
        gen = generator or self.rngs.batches
        mask = (torch.arange(self.index.shape[1]) < self.sizes.unsqueeze(1)).float()
        small = self.sizes < B
        local = torch.empty(len(self.sizes), B, dtype=torch.long)
        if (~small).any():
            local[~small] = torch.multinomial(mask[~small], B, replacement=False, generator=gen)
        if small.any():
            local[small] = torch.multinomial(mask[small], B, replacement=True, generator=gen)
        idx = self.index.gather(1, local)
        return self.x_train[idx], self.y_train[idx]


def sigma_for(config: ExperimentConfig, topology, cls, params, local_sizes, batch_size: int | None = None):
    """The σ report of ``config``'s rule for algorithm ``cls``, with the accountant ε of the
    mechanism it runs; ``batch_size`` overrides the config's (the attacks evaluate the rule
    at the paper's batch size)."""
    B = batch_size or config.batch_size
    req = SigmaRequest(
        epsilon=config.epsilon,
        delta=config.delta,
        W=topology.W,
        local_sizes=np.asarray(local_sizes),
        messages=cls.messages_per_round(topology, params),
        batch_size=B,
        rounds=config.rounds,
        sigma=config.sigma,
        params=params,
        topology=topology,
    )
    return calibrate(config.sigma_rule, req, noise_scale=cls.noise_scale(params, B))


def _check_batch_fits(config: ExperimentConfig, parts: list[np.ndarray]) -> None:
    """Refuse a batch larger than the smallest agent's training samples, before any training.

    A round draws B distinct samples from each agent. From fewer, a sample would enter its
    batch several times and its clipped gradient would count more than once, which the σ
    rules and the accountant (one clipped gradient per sample) do not allow; and every round
    would build ``(N, B, ...)`` batches and per-sample gradients however far B is above the
    agent's data, until memory runs out.

    Raises
    ------
    ConfigError
        Naming the batch size, the smallest agent and what to change.
    """
    sizes = [len(p) for p in parts]
    smallest = min(sizes)
    if config.batch_size > smallest:
        raise ConfigError(
            f"batch_size={config.batch_size} is more than the {smallest} training samples of the smallest agent "
            f"(agent {sizes.index(smallest)} of n_agents={config.n_agents}, {config.dataset} with "
            f"train_samples={config.train_samples}, partition={config.partition!r}); a batch holds distinct samples "
            f"of one agent; allowed: batch_size <= {smallest}, or fewer agents, or more train_samples (null: all)")


def check_before_training(configs: list[ExperimentConfig]) -> None:
    """Refuse, before any of them trains, the configs whose batch cannot fit however the data
    is split: ``batch_size × n_agents`` above the training samples the run draws from, so
    some agent holds fewer than a batch (:func:`prepare` checks the actual split of each run
    when it starts; a sweep calls this first, so that its tenth run does not fail after nine
    have trained).

    Raises
    ------
    ConfigError
        Naming the first such config and what to change.
    """
    from ..sim.data.acquisition import DATASETS

    for config in configs:
        spec = DATASETS.get(config.dataset)
        if spec is None:
            continue
        pool = min(config.train_samples or spec.full_train, spec.full_train)
        if config.batch_size * config.n_agents > pool:
            raise ConfigError(
                f"batch_size={config.batch_size} with n_agents={config.n_agents} needs at least "
                f"{config.batch_size * config.n_agents:,} training samples, and {config.dataset} with "
                f"train_samples={config.train_samples} has {pool:,} (about {pool // config.n_agents:,} per agent); "
                f"a batch holds distinct samples of one agent; allowed: batch_size <= {pool // config.n_agents:,}, "
                "or fewer agents, or more train_samples (null: all)")


def prepare(config: ExperimentConfig, data: Dataset | None = None) -> Prepared:
    """Build data split, topology, engine, σ and algorithm for ``config``.

    Raises
    ------
    ConfigError
        When ``config.batch_size`` is more than an agent's training samples.
    """
    device = resolve_device(config.device)
    rngs = make_rngs(config.seed)
    data = data if data is not None else _dataset(config.dataset)
    require_full_data(data.meta, f"a run at the paper profile ({config.dataset})")
    y_all = data.y_train.numpy()
    pool = np.arange(len(y_all))
    if config.train_samples is not None and config.train_samples < len(pool):
        pool = np.sort(rngs.partition.permutation(len(pool))[: config.train_samples])
    parts = dirichlet_partition(
        y_all[pool], config.n_agents, config.alpha_d, seed=derive_seed(config.seed, "partition"),
        scheme=config.partition
    )
    parts = [pool[p] for p in parts]
    _check_batch_fits(config, parts)
    topology = make_topology(config.topology, config.n_agents, mixing=config.mixing,
                             seed=derive_seed(config.seed, "mixing"))
    module = build_model(config.model, config.dataset, seed=rngs.init_seed)
    engine = Engine(module, device, compile=config.compile, eval_strategy=config.eval_strategy,
                    batch_grad_strategy=config.batch_grad_strategy,
                    strategy="auto" if config.per_sample_strategy == "vmap" else config.per_sample_strategy)
    engine.dropout_generator = rngs.dropout
    cls = get_algorithm(config.algorithm)
    params = cls.Params(**config.algo)
    sizes = np.array([len(p) for p in parts])
    report = sigma_for(config, topology, cls, params, sizes)
    x_test, y_test, x_val, y_val = data.x_test, data.y_test, None, None
    if config.validation_samples is not None:
        val, rest = validation_split(len(y_test), config.validation_samples,
                                     seed=derive_seed(config.seed, "validation"))
        x_val, y_val = x_test[val].to(device), y_test[val].to(device)
        x_test, y_test = x_test[rest], y_test[rest]
    ctx = RunContext.build(
        engine,
        topology,
        make_schedule(config.schedule, topology, rngs.schedule, device),
        report.sigma,
        clip=config.clip,
        lr=config.lr,
        lr_decay=config.lr_decay,
        lr_decay_every=config.lr_decay_every,
        momentum=config.momentum,
        batch_size=config.batch_size,
        noise_generator=rngs.noise,
        rng=rngs.algorithm,
        validation=None if x_val is None else (x_val, y_val),
    )
    index = torch.zeros(config.n_agents, int(sizes.max()), dtype=torch.long)
    for a, p in enumerate(parts):
        index[a, : len(p)] = torch.as_tensor(p)
    n_eval = len(y_test) if config.eval_samples is None else min(config.eval_samples, len(y_test))
    return Prepared(
        config=config,
        data=data,
        parts=parts,
        engine=engine,
        ctx=ctx,
        algorithm=cls(params, ctx),
        sigma_report=report,
        index=index,
        sizes=torch.as_tensor(sizes),
        x_train=data.x_train.to(device),
        y_train=data.y_train.to(device),
        x_eval=x_test[:n_eval],
        y_eval=y_test[:n_eval],
        rngs=rngs,
        x_val=x_val,
        y_val=y_val,
    )


def _rows(t: int, metric: str, values) -> list[tuple]:
    if np.ndim(values) == 0:
        return [(t, -1, metric, float(values))]
    return [(t, a, metric, float(v)) for a, v in enumerate(np.asarray(values))]


def _check_config(config) -> None:
    if not isinstance(config, ExperimentConfig):
        raise TypeError(f"run() takes an ExperimentConfig, not a {type(config).__name__}; build one with "
                        f"ExperimentConfig.from_dict({{...}}) or ExperimentConfig.from_yaml(path)")


def run(
    config: ExperimentConfig,
    *,
    store: ResultStore | None = None,
    progress: bool | None = None,
    force: bool = False,
    save: bool = True,
) -> RunResult:
    """Train ``config`` (or load it from the store) and return its history.

    Parameters
    ----------
    store : ResultStore, optional
        Defaults to ``ResultStore()`` (``data/results``).
    progress : bool, optional
        Progress as a tqdm bar or periodic log lines (:func:`dpdl_core.sim.progress.progress_mode`);
        default: ``$DPDL_PROGRESS``, else a bar on a terminal or in Jupyter, log lines elsewhere.
    force : bool
        Recompute even if stored.
    save : bool
        Write the result (and checkpoints) to the store, holding the run's lease meanwhile.
    """
    _check_config(config)
    return run_stack([config], store=store, progress=progress, force=force, save=save)[0]


def run_stack(
    configs: list[ExperimentConfig],
    *,
    store: ResultStore | None = None,
    progress: bool | None = None,
    force: bool = False,
    save: bool = True,
) -> list[RunResult]:
    """Train several runs as one stack (:mod:`dpdl_core.runs.stacking`), each stored as its plain
    :func:`run` stores it; runs already stored are loaded. Arguments as :func:`run`.

    The runs must share a :func:`~dpdl_core.runs.stacking.stack_key` (any number of runs of one
    config is a plain run). Each keeps its own checkpoint: runs that resume from different
    rounds, or whose graphs differ, train as separate stacks one after the other.
    """
    for c in configs:
        _check_config(c)
    store = store or ResultStore()
    slots = {c.hash: RunSlot(store, c.hash) for c in configs}
    found: dict[str, tuple] = {}
    if not force:
        found = {h: s for h, slot in slots.items() if (s := slot.stored()) is not None}
    todo = [c for c in {c.hash: c for c in configs}.values() if c.hash not in found]
    if todo and save:
        with contextlib.ExitStack() as held:
            # One global order of leases, so two stacks sharing runs cannot deadlock. Whoever
            # held a lease before us may have stored the run meanwhile.
            for c in sorted(todo, key=lambda c: c.hash):
                if (s := held.enter_context(slots[c.hash].held(force))) is not None:
                    found[c.hash] = s
            todo = [c for c in todo if c.hash not in found]
            computed = _interruptible(todo, store, progress, force, save) if todo else []
    else:
        computed = _interruptible(todo, store, progress, force, save) if todo else []
    results = {r.hash: r for r in computed}
    for h, (header, hist) in found.items():
        if save:
            slots[h].tidy_if_free()  # what a process killed after storing the run left behind
        results[h] = RunResult(next(c for c in configs if c.hash == h), hist, header["meta"], cached=True)
    return [results[c.hash] for c in configs]


class _Track:
    """One run's side of a (possibly stacked) computation: its state, history rows,
    divergence and checkpoints."""

    def __init__(self, prep: Prepared, store: ResultStore, resume: bool):
        self.prep, self.store = prep, store
        self.hash = prep.config.hash
        self.slot = RunSlot(store, self.hash)
        self.state = prep.algorithm.init_state(prep.initial_models())
        self.rows: list[tuple] = []
        self.start, self.elapsed = 1, 0.0
        self.diverged, self.done = False, False
        saved = self.slot.resume() if resume else None
        # The algorithm's diagnostic counters at the checkpoint (none in older checkpoints), and
        # where round 1 was computed (a resumed run may finish on another machine).
        self.counters = saved.get("counters", {}) if saved is not None else {}
        self.started_by = saved.get("started_by") if saved is not None else None
        if saved is not None:
            self.state = saved["state"]
            self.rows = saved["rows"]
            self.start, self.elapsed = saved["round"] + 1, saved["elapsed"]
            prep.rngs.batches.set_state(saved["batch_rng"])
            prep.rngs.noise.set_state(saved["noise_rng"])
            prep.rngs.algorithm.set_state(saved["algorithm_rng"])
            prep.rngs.schedule.bit_generator.state = saved["schedule_rng"]
            if "dropout_rng" in saved:  # checkpoints of runs without dropout masks have none
                prep.rngs.dropout.set_state(saved["dropout_rng"])
            prep.ctx.sent = saved["sent"]
        self.resumed = saved is not None
        self.checkpointed = saved["round"] if saved is not None else None  # the round the checkpoint holds
        self.last_round = self.start - 1
        # Round 1's mean loss, also on resume: the reference of the explosion test.
        self.first_loss = next((v for _, _, m, v in self.rows if m == "train_loss_mean"), None)
        # The first round whose mean loss exploded (a run with stop_on_divergence=False goes on).
        self.diverged_at = next((t for t, _, m, v in self.rows if m == "train_loss_mean"
                                 and v > EXPLOSION_FACTOR * abs(self.first_loss)), None)

    def record_losses(self, t: int, losses: np.ndarray, X: torch.Tensor) -> None:
        """Round t's training losses; marks the run diverged (it then stops) when they or
        its models are not finite, or when the mean loss exploded and the config says
        ``stop_on_divergence``; ``diverged_at`` is the first round it exploded."""
        self.last_round = t
        self.rows += _rows(t, "train_loss", losses)
        self.rows += [
            (t, -1, "train_loss_mean", float(losses.mean())),
            (t, -1, "train_loss_min", float(losses.min())),
            (t, -1, "train_loss_max", float(losses.max())),
        ]
        self.first_loss = float(losses.mean()) if self.first_loss is None else self.first_loss
        finite = bool(torch.isfinite(X).all()) and bool(np.isfinite(losses).all())
        exploded = not finite or losses.mean() > EXPLOSION_FACTOR * abs(self.first_loss)
        if exploded and self.diverged_at is None:
            self.diverged_at = t
        if not finite or (exploded and self.prep.config.stop_on_divergence):
            self.diverged = True

    def record_evaluation(self, t: int, loss, acc, avg_loss, avg_acc, consensus: float) -> None:
        """Round t's test metrics (none where the run does not test at t) and consensus."""
        if loss is not None:
            self.rows += _rows(t, "test_acc", acc) + _rows(t, "test_loss", loss)
            self.rows += _rows(t, "avg_test_acc", avg_acc) + _rows(t, "avg_test_loss", avg_loss)
        self.rows += _rows(t, "consensus", consensus)

    def tests_at(self, t: int, val_acc: np.ndarray | None) -> bool:
        """Whether the evaluation of round t measures the test set: always, unless the config
        says ``test_at: best_validation``; then where the agents' mean validation accuracy
        ``val_acc`` reaches the best of the earlier evaluations (ties too: early stopping
        takes the first strict best, and the tolerance covers summation order), at the last
        round and where the run diverged."""
        config = self.prep.config
        if config.test_at == "every_evaluation" or t == config.rounds or self.diverged:
            return True
        earlier = {}
        for r, agent, metric, value in self.rows:  # also after a resume: the rows are the checkpoint's
            if metric == "val_acc" and agent >= 0:
                earlier.setdefault(r, []).append(value)
        best = max((float(np.mean(v)) for v in earlier.values()), default=-np.inf)
        return float(np.mean(val_acc)) >= best - 1e-9

    def checkpoint(self, t: int, state: dict, sent: torch.Tensor, elapsed: float, counters: dict,
                   made_by: dict) -> None:
        payload = {
            "version": __version__,
            "config_hash": self.hash,
            "rng_device": "cpu",
            "state": state,
            "rows": self.rows,
            "round": t,
            "elapsed": self.elapsed + elapsed,
            "batch_rng": self.prep.rngs.batches.get_state(),
            "noise_rng": self.prep.rngs.noise.get_state(),
            "algorithm_rng": self.prep.rngs.algorithm.get_state(),
            "schedule_rng": self.prep.rngs.schedule.bit_generator.state,
            "dropout_rng": self.prep.rngs.dropout.get_state(),
            "sent": sent.clone(),
            "counters": counters,
            "started_by": self.started_by or made_by,
        }
        self.slot.checkpoint(payload)
        self.checkpointed = t


def _not_saved(tr: _Track, exc: OSError, keep=None) -> ResultNotSaved:
    """The error of a finished run whose result file could not be written: its finished rounds
    checkpointed by ``keep()`` (a diverged run keeps its last periodic checkpoint), where they
    are, and what to free."""
    target = tr.slot.result_path
    problem = f"{exc.strerror or exc} ({exc.filename or target})"
    kept_now = ""
    if keep is not None and not tr.diverged:
        try:
            keep()
        except OSError as again:
            kept_now = f"; its last checkpoint could not be written either ({again.strerror or again})"
    rounds = tr.prep.config.rounds
    path = tr.slot.checkpoint_path
    if tr.checkpointed is not None and path.exists():
        kept = (f"its {tr.checkpointed} computed rounds are kept in the checkpoint {path}"
                if tr.checkpointed >= tr.last_round else
                f"rounds 1-{tr.checkpointed} of {rounds} are kept in the checkpoint {path}")
    else:
        kept = "no checkpoint could be kept: a rerun computes it from round 1"
    size = (len(tr.rows) * 40) >> 20  # a stored row: about 40 bytes of CSV, before gzip
    return ResultNotSaved(
        f"the result of run {tr.hash[:8]} could not be written to {target}: {problem}{kept_now}; {kept}. Free space "
        f"in {target.parent} (or make it writable; the result file needs about {max(1, size)} MB) and run the same "
        "command again: it resumes from the checkpoint")


def _same_test_set(preps: list[Prepared]) -> bool:
    """Whether every run evaluates on the same images (then one call evaluates them all)."""
    a = preps[0]
    return all(p.x_eval.data_ptr() == a.x_eval.data_ptr() and p.x_eval.shape == a.x_eval.shape
               and p.x_val is None for p in preps)


def _compute(configs: list[ExperimentConfig], store: ResultStore, progress: bool | None, force: bool, save: bool,
             stop: StopRequest | None = None) -> list[RunResult]:
    """Train ``configs`` (each resuming from its checkpoint) as stacks, store each when
    ``save``; see :func:`run` and :func:`run_stack`.

    A run whose mean train loss turns non-finite or exceeds :data:`EXPLOSION_FACTOR` times its
    first round's is marked ``diverged`` and stops (in a stack, the others go on). When
    ``stop`` is requested (Ctrl-C), the round is finished, every run checkpointed and
    :class:`RunInterrupted` raised.
    """
    preps = [prepare(c) for c in configs]
    made_by = provenance(str(preps[0].engine.device))  # the code as loaded now, before any checkout can move
    tracks = [_Track(p, store, resume=save and not force) for p in preps]
    for tr in tracks:
        if tr.resumed and tr.start > tr.prep.config.rounds:
            note(f"run {tr.hash[:8]}: all {tr.prep.config.rounds} rounds were computed before; storing them from its "
                 "checkpoint", progress)
        elif tr.resumed:
            note(f"run {tr.hash[:8]}: resuming at round {tr.start}/{tr.prep.config.rounds} from its checkpoint",
                 progress)
        if save:
            tr.slot.begin(from_round=tr.start)
    # Runs resuming from different rounds, or on different graphs, make separate stacks.
    parts: dict[tuple, list[_Track]] = {}
    for tr in tracks:
        parts.setdefault((tr.start, tr.prep.ctx.topology.W.tobytes()), []).append(tr)
    results = {}
    for part in parts.values():
        results.update(_train(part, store, progress, save, stop, made_by))
    return [results[c.hash] for c in configs]


def _train(tracks: list[_Track], store: ResultStore, progress: bool | None, save: bool, stop: StopRequest | None,
           made_by: dict) -> dict[str, RunResult]:
    """Train the runs of ``tracks`` (same stack key, start round and graph) as one stack."""
    from .stacking import build_stack

    stack = build_stack([tr.prep for tr in tracks])
    R, config = len(tracks), tracks[0].prep.config
    alg = stack.algorithm
    rows_of = [stack.rows(r) for r in range(R)]
    state = stack.join([tr.state for tr in tracks])
    stack.ctx.sent = torch.cat([tr.prep.ctx.sent for tr in tracks])
    for r, tr in enumerate(tracks):
        if tr.counters:
            alg.restore_counters(rows_of[r], tr.counters)
    shared_test_set = _same_test_set(stack.members)
    start = tracks[0].start
    t0 = time.perf_counter()
    bar = Progress(config.rounds, stack.label, "round", initial=start - 1, progress=progress)
    results: dict[str, RunResult] = {}
    for t, losses in training_rounds(stack, state, start, config.rounds):
        losses = losses.cpu().numpy()
        X = alg.models(state)
        live = [r for r, tr in enumerate(tracks) if not tr.diverged]
        for r in live:
            tracks[r].record_losses(t, losses[rows_of[r]], X[rows_of[r]])
        evaluate = [r for r in live if t % config.eval_every == 0 or t == config.rounds or tracks[r].diverged]
        _evaluate(stack, tracks, rows_of, evaluate, X, t, shared_test_set)
        sent = stack.ctx.sent
        for r in live:
            tr = tracks[r]
            tr.rows += _rows(t, "vectors_sent", int(sent[rows_of[r]].sum()))
            # The algorithm's own metrics (a scalar: network-wide), of this run's rows alone.
            for name, values in alg.round_metrics(stack.view(state, r)).items():
                tr.rows += _rows(t, name, values)
        bar.update(1, loss=f"{losses.mean():.3g}")
        for r in live:
            if tracks[r].diverged:  # stored now: its stack goes on without it
                results[tracks[r].hash] = _finish(tracks[r], stack, rows_of[r], R, (time.perf_counter() - t0) / R,
                                                  made_by, save)
        if all(tr.diverged for tr in tracks):
            break
        stopping = stop is not None and stop.requested and t < config.rounds
        if save and (stopping or config.checkpoint_every and t % config.checkpoint_every == 0) and t < config.rounds:
            share = (time.perf_counter() - t0) / R
            for r, tr in enumerate(tracks):
                if not tr.diverged:
                    tr.checkpoint(t, stack.view(state, r, copy=True), sent[rows_of[r]], share,
                                  alg.counters(rows_of[r]), made_by)
        if stopping:
            bar.close()
            resume = ("run the same command again to resume" if save
                      else "nothing was saved (save=False): a rerun starts from round 1")
            raise RunInterrupted(f"interrupted at round {t}; {resume}")
    bar.close()
    share = (time.perf_counter() - t0) / R
    unsaved = []
    for r, tr in enumerate(tracks):
        if tr.hash not in results:
            def keep(r=r, tr=tr):  # the last round's checkpoint: a rerun stores the run without training
                tr.checkpoint(tr.last_round, stack.view(state, r, copy=True), stack.ctx.sent[rows_of[r]], share,
                              alg.counters(rows_of[r]), made_by)
            try:
                results[tr.hash] = _finish(tr, stack, rows_of[r], R, share, made_by, save, keep)
            except ResultNotSaved as exc:  # the other runs of the stack are kept (or stored) too
                unsaved.append(exc)
    if unsaved:
        more = f" ({len(unsaved) - 1} more run(s) of this stack likewise)" if len(unsaved) > 1 else ""
        raise ResultNotSaved(f"{unsaved[0]}{more}")
    return results


def _evaluate(stack, tracks: list[_Track], rows_of: list[slice], runs: list[int], X: torch.Tensor, t: int,
              shared_test_set: bool) -> None:
    """Test (and validation) metrics of the runs ``runs`` at round t: each agent's model and
    the run's average model; one batched call for all of them when they share a test set.
    The validation set is measured first: it decides whether a run with ``test_at:
    best_validation`` measures the test set at t (:meth:`_Track.tests_at`)."""
    if not runs:
        return
    eng = stack.engine
    models = {r: X[rows_of[r]] for r in runs}
    averages = {r: m.mean(0, keepdim=True) for r, m in models.items()}
    validation = {}
    for r in runs:
        prep = tracks[r].prep
        if prep.x_val is not None:
            _, val_acc = eng.evaluate(models[r], prep.x_val, prep.y_val)
            _, avg_val_acc = eng.evaluate(averages[r], prep.x_val, prep.y_val)
            validation[r] = (val_acc.cpu().numpy(), avg_val_acc.item())
    tested = [r for r in runs if tracks[r].tests_at(t, validation.get(r, (None,))[0])]
    per_run = {}
    if shared_test_set and tested:
        prep = stack.members[0]
        n = stack.n
        step = max(1, EVAL_MODELS_PER_CALL // n)  # runs per call
        parts = [eng.evaluate(torch.cat([models[r] for r in tested[c:c + step]]), prep.x_eval, prep.y_eval)
                 for c in range(0, len(tested), step)]
        loss, acc = torch.cat([p[0] for p in parts]), torch.cat([p[1] for p in parts])
        # The average models one by one: evaluated together they differ from a plain run's
        # in the last bit of the test loss (measured: 1-2e-7 relative), the agents' do not.
        for k, r in enumerate(tested):
            per_run[r] = (loss[k * n:(k + 1) * n], acc[k * n:(k + 1) * n],
                          *eng.evaluate(averages[r], prep.x_eval, prep.y_eval))
    else:
        for r in tested:
            prep = tracks[r].prep
            per_run[r] = (*eng.evaluate(models[r], prep.x_eval, prep.y_eval),
                          *eng.evaluate(averages[r], prep.x_eval, prep.y_eval))
    for r in runs:
        tr = tracks[r]
        if r in per_run:
            loss, acc, avg_loss, avg_acc = per_run[r]
            tr.record_evaluation(t, loss.cpu().numpy(), acc.cpu().numpy(), avg_loss.item(), avg_acc.item(),
                                 consensus_distance(models[r]).item())
        else:
            tr.record_evaluation(t, None, None, None, None, consensus_distance(models[r]).item())
        if r in validation:
            val_acc, avg_val_acc = validation[r]
            tr.rows += _rows(t, "val_acc", val_acc) + _rows(t, "avg_val_acc", avg_val_acc)


def _finish(tr: _Track, stack, rows: slice, R: int, share: float, made_by: dict, save: bool,
            keep=None) -> RunResult:
    """Run ``tr``'s result (history and meta as a plain run records them), stored when ``save``.

    When the result file cannot be written, ``keep()`` (if given) checkpoints the finished
    rounds and :class:`ResultNotSaved` says where they are."""
    prep, eng = tr.prep, stack.engine
    sent = stack.ctx.sent[rows]
    diagnostics = stack.algorithm.diagnostics(agents=rows)
    history = pd.DataFrame(tr.rows, columns=["round", "agent", "metric", "value"])
    meta = {
        **prep.sigma_report.summary(),
        "sigma": prep.sigma_report.sigma.tolist(),
        "epsilon_rdp": prep.sigma_report.epsilon_rdp.tolist(),
        "messages_per_round": prep.sigma_report.k.tolist(),
        "noise_scale": prep.sigma_report.noise_scale,
        "vectors_sent_per_agent": sent.tolist(),
        "vectors_per_round": float(sent.sum()) / max(1, tr.last_round),
        **diagnostics,
        "dataset": data_record(prep.data.meta),
        "dataset_label": describe(prep.data.meta),
        "local_sizes": [len(p) for p in prep.parts],
        "topology": prep.ctx.topology.report(),
        "wall_seconds": tr.elapsed + share,
        "stacked_runs": R,
        "diverged": tr.diverged_at is not None,
        "diverged_at": tr.diverged_at,
        "device": str(eng.device),
        "torch": torch.__version__,
        **made_by,
        # Resumed from a checkpoint: the commit, machine, CPU kernels and threads of round 1
        # (what a replay of the first rounds needs), where they may differ from the above.
        **({"started_by": tr.started_by} if tr.started_by else {}),
    }
    result = RunResult(prep.config, history, meta)
    if save:
        try:
            tr.slot.finish(prep.config.to_dict(), history, meta)
        except SaveFailed as exc:
            raise _not_saved(tr, exc, keep) from None
    return result
