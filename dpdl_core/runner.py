"""``run(config) -> RunResult``: one decentralized training run, stored and resumable.

A run is identified by its config hash. If the results store already holds it (and the
file passes its integrity check, :mod:`dpdl_core.results`), it is loaded, not recomputed.
While running, a checkpoint (algorithm state, generator states, history so far) is
written every ``checkpoint_every`` rounds, atomically (temp file + rename: a kill during
the write leaves the previous checkpoint); a rerun of the same config continues from it,
so an interrupted run loses at most those rounds and duplicates none.

Concurrency: a run that saves holds its claim in the store (:meth:`ResultStore.claim`, an
``flock`` the kernel releases if the process dies) from before it looks for a checkpoint
until its result is stored. A second process asking for the same run waits for the claim,
then finds the result stored and loads it, so two sweeps on one folder compute each run
once. Each computation and store is logged to the store's ``journal.jsonl``.

Checkpoints record the package version, the config hash they belong to and where their
random streams live (``rng_device``: "cpu" since GPU runs draw on the CPU too). One that does
not match (written by another version, copied from another run, holding a GPU generator's
state) or cannot be read is
refused: a :class:`CheckpointRefusedWarning` names it and why, it is renamed to
``<hash>.pt.refused`` and the run starts from round 1. Starting afresh rather than raising
keeps an unattended sweep going, and costs only time: the result is the same.
"""
from __future__ import annotations

import functools
import io
import os
import signal
import sys
import threading
import time
import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import torch

from . import __version__
from .algorithms import get_algorithm
from .algorithms.base import RunContext
from .config import ExperimentConfig
from .data import Dataset, describe, dirichlet_partition, load_dataset, require_full_data, validation_split
from .engine import Engine, consensus_distance
from .loop import training_rounds
from .models import build_model
from .privacy import SigmaRequest, calibrate
from .progress import Progress, note
from .provenance import provenance
from .results import ResultStore, atomic_write_bytes
from .schedules import make_schedule
from .seeding import derive_seed, make_rngs
from .topology import make_topology

__all__ = ["CheckpointRefusedWarning", "EXPLOSION_FACTOR", "Prepared", "RunInterrupted", "RunResult", "run", "prepare",
           "sigma_for"]

# A run is marked diverged, and stops, once its mean train loss is not finite or exceeds this
# multiple of its first round's: no run that learns comes near it (noisy DP runs stay within
# a few times their start), and a loss of 1e13 is no result to average or tabulate.
EXPLOSION_FACTOR = 1e3


class CheckpointRefusedWarning(UserWarning):
    """A checkpoint of another package version or config (or an unreadable one) was set aside."""


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C during a run; the message says the round reached and where a rerun resumes."""


class _StopRequest:
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


def _interruptible(config: ExperimentConfig, store: ResultStore, progress: bool | None, force: bool,
                   save: bool) -> RunResult:
    """:func:`_compute` with Ctrl-C turned into a checkpoint and a :class:`RunInterrupted`."""
    stop = _StopRequest()
    try:
        return _compute(config, store, progress, force, save, stop)
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
        agent holding fewer than B): ``(N, B, ...)``, ``(N, B)``.

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


def prepare(config: ExperimentConfig, data: Dataset | None = None) -> Prepared:
    """Build data split, topology, engine, σ and algorithm for ``config``."""
    device = resolve_device(config.device)
    rngs = make_rngs(config.seed)
    data = data if data is not None else _dataset(config.dataset)
    require_full_data(data.meta, f"a run at the paper profile ({config.dataset})")
    y_all = data.y_train.numpy()
    pool = np.arange(len(y_all))
    if config.train_samples is not None and config.train_samples < len(pool):
        pool = np.sort(rngs.partition.permutation(len(pool))[: config.train_samples])
    parts = dirichlet_partition(
        y_all[pool], config.n_agents, config.alpha_d, seed=derive_seed(config.seed, "partition"), scheme=config.partition
    )
    parts = [pool[p] for p in parts]
    topology = make_topology(config.topology, config.n_agents, mixing=config.mixing,
                             seed=derive_seed(config.seed, "mixing"))
    module = build_model(config.model, config.dataset, seed=rngs.init_seed)
    engine = Engine(module, device, compile=config.compile)
    cls = get_algorithm(config.algorithm)
    params = cls.Params(**config.algo)
    sizes = np.array([len(p) for p in parts])
    report = sigma_for(config, topology, cls, params, sizes)
    x_test, y_test, x_val, y_val = data.x_test, data.y_test, None, None
    if config.validation_samples is not None:
        val, rest = validation_split(len(y_test), config.validation_samples, seed=derive_seed(config.seed, "validation"))
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


def _load_checkpoint(store: ResultStore, run_hash: str) -> dict | None:
    """The run's checkpoint if it exists and belongs to this version and config, else None
    (a refused one is renamed to ``*.pt.refused`` with a warning saying why)."""
    path = store.checkpoint_path(run_hash)
    if not path.exists():
        return None
    try:
        saved = torch.load(path, weights_only=False)
    except Exception as exc:  # unpickling fails in many ways; every one means "unusable"
        problem = f"unreadable: {type(exc).__name__}: {exc}"
    else:
        if not isinstance(saved, dict) or "version" not in saved:
            problem = f"written by a dpdl_core older than {__version__} (no version recorded)"
        elif saved["version"] != __version__:
            problem = f"written by dpdl_core {saved['version']}, this is {__version__}"
        elif saved.get("config_hash") != run_hash:
            problem = f"written for run {saved.get('config_hash')}, not {run_hash}"
        elif saved.get("rng_device") != "cpu":
            problem = "its random streams were drawn on the GPU (runs now draw them on the CPU on every device)"
        else:
            return saved
    refused = path.with_name(path.name + ".refused")
    os.replace(path, refused)
    store.log_event("checkpoint_refused", run_hash, reason=problem)
    warnings.warn(f"checkpoint {path} refused ({problem}); moved to {refused.name}; run {run_hash} "
                  f"starts from round 1", CheckpointRefusedWarning, stacklevel=3)
    return None


def _stored(store: ResultStore, run_hash: str) -> tuple[dict, pd.DataFrame] | None:
    """(header, history) if the store holds the run intact, else None (a corrupt file is moved aside)."""
    try:
        return store.load_run(run_hash)
    except FileNotFoundError:
        return None


def _tidy_finished(store: ResultStore, run_hash: str) -> None:
    """Remove what a process killed after storing the run but before cleaning up left
    behind (its checkpoint, lock file, temp files), unless someone holds the run's claim."""
    claim = store.claim(run_hash)
    if not (store.checkpoint_path(run_hash).exists() or claim.path.exists()):
        return
    if claim.acquire(blocking=False):
        try:
            store.checkpoint_path(run_hash).unlink(missing_ok=True)
            store.remove_temp_files(run_hash)
        finally:
            claim.release()


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
        Progress as a tqdm bar or periodic log lines (:func:`dpdl_core.progress.progress_mode`);
        default: ``$DPDL_PROGRESS``, else a bar on a terminal or in Jupyter, log lines elsewhere.
    force : bool
        Recompute even if stored.
    save : bool
        Write the result (and checkpoints) to the store, holding the run's claim meanwhile.
    """
    if not isinstance(config, ExperimentConfig):
        raise TypeError(f"run() takes an ExperimentConfig, not a {type(config).__name__}; build one with "
                        f"ExperimentConfig.from_dict({{...}}) or ExperimentConfig.from_yaml(path)")
    store = store or ResultStore()
    h = config.hash
    stored = None if force else _stored(store, h)
    if stored is None and save:
        with store.claim(h):
            # Whoever held the claim before us may have stored the run meanwhile.
            stored = None if force else _stored(store, h)
            if stored is None:
                store.remove_temp_files(h)  # left by a writer of this run that was killed
                return _interruptible(config, store, progress, force, save)
    elif stored is None:
        return _interruptible(config, store, progress, force, save)
    if save:
        _tidy_finished(store, h)
    header, hist = stored
    return RunResult(config, hist, header["meta"], cached=True)


def _compute(config: ExperimentConfig, store: ResultStore, progress: bool | None, force: bool, save: bool,
             stop: _StopRequest | None = None) -> RunResult:
    """Train ``config`` (resuming from its checkpoint), store it when ``save``; see :func:`run`.

    A run whose mean train loss turns non-finite or exceeds :data:`EXPLOSION_FACTOR` times its
    first round's is marked ``diverged`` and stops. When ``stop`` is requested (Ctrl-C), the
    round is finished, checkpointed and :class:`RunInterrupted` raised.
    """
    h = config.hash
    prep = prepare(config)
    made_by = provenance(str(prep.engine.device))  # the code as loaded now, before any checkout can move
    alg, eng = prep.algorithm, prep.engine
    state = alg.init_state(prep.initial_models())
    rows: list[tuple] = []
    start, elapsed = 1, 0.0
    ckpt = store.checkpoint_path(h)
    saved = _load_checkpoint(store, h) if save and not force else None
    if saved is not None:
        state = saved["state"]
        rows = saved["rows"]
        start, elapsed = saved["round"] + 1, saved["elapsed"]
        prep.rngs.batches.set_state(saved["batch_rng"])
        prep.rngs.noise.set_state(saved["noise_rng"])
        prep.rngs.algorithm.set_state(saved["algorithm_rng"])
        prep.rngs.schedule.bit_generator.state = saved["schedule_rng"]
        prep.ctx.sent = saved["sent"]
        note(f"run {h[:8]}: resuming at round {start}/{config.rounds} from its checkpoint", progress)
    if save:
        store.log_event("computing", h, from_round=start)

    diverged = False
    t0 = time.perf_counter()
    bar = Progress(config.rounds, f"run {h[:8]}", "round", initial=start - 1, progress=progress)
    first_loss = next((v for _, _, m, v in rows if m == "train_loss_mean"), None)  # round 1's, also on resume
    last_round = start - 1
    for t, losses in training_rounds(prep, state, start, config.rounds):
        last_round = t
        losses = losses.cpu().numpy()
        rows += _rows(t, "train_loss", losses)
        rows += [
            (t, -1, "train_loss_mean", float(losses.mean())),
            (t, -1, "train_loss_min", float(losses.min())),
            (t, -1, "train_loss_max", float(losses.max())),
        ]
        X = alg.models(state)
        first_loss = float(losses.mean()) if first_loss is None else first_loss
        if (not torch.isfinite(X).all() or not np.isfinite(losses).all()
                or losses.mean() > EXPLOSION_FACTOR * abs(first_loss)):
            diverged = True
        if t % config.eval_every == 0 or t == config.rounds or diverged:
            loss, acc = eng.evaluate(X, prep.x_eval, prep.y_eval)
            avg_loss, avg_acc = eng.evaluate(X.mean(0, keepdim=True), prep.x_eval, prep.y_eval)
            rows += _rows(t, "test_acc", acc.cpu().numpy()) + _rows(t, "test_loss", loss.cpu().numpy())
            rows += _rows(t, "avg_test_acc", avg_acc.item()) + _rows(t, "avg_test_loss", avg_loss.item())
            rows += _rows(t, "consensus", consensus_distance(X).item())
            if prep.x_val is not None:
                _, val_acc = eng.evaluate(X, prep.x_val, prep.y_val)
                _, avg_val_acc = eng.evaluate(X.mean(0, keepdim=True), prep.x_val, prep.y_val)
                rows += _rows(t, "val_acc", val_acc.cpu().numpy()) + _rows(t, "avg_val_acc", avg_val_acc.item())
        rows += _rows(t, "vectors_sent", int(prep.ctx.sent.sum()))
        for name, values in alg.round_metrics(state).items():  # the algorithm's own (a scalar: network-wide)
            rows += _rows(t, name, values)
        bar.update(1, loss=f"{losses.mean():.3g}")
        if diverged:
            break
        stopping = stop is not None and stop.requested and t < config.rounds
        if save and (stopping or config.checkpoint_every and t % config.checkpoint_every == 0) and t < config.rounds:
            payload = {
                "version": __version__,
                "config_hash": h,
                "rng_device": "cpu",
                "state": state,
                "rows": rows,
                "round": t,
                "elapsed": elapsed + time.perf_counter() - t0,
                "batch_rng": prep.rngs.batches.get_state(),
                "noise_rng": prep.rngs.noise.get_state(),
                "algorithm_rng": prep.rngs.algorithm.get_state(),
                "schedule_rng": prep.rngs.schedule.bit_generator.state,
                "sent": prep.ctx.sent.clone(),
            }
            buf = io.BytesIO()
            torch.save(payload, buf)
            atomic_write_bytes(ckpt, buf.getvalue())
        if stopping:
            bar.close()
            resume = ("run the same command again to resume" if save
                      else "nothing was saved (save=False): a rerun starts from round 1")
            raise RunInterrupted(f"interrupted at round {t}; {resume}")
    bar.close()

    history = pd.DataFrame(rows, columns=["round", "agent", "metric", "value"])
    meta = {
        **prep.sigma_report.summary(),
        "sigma": prep.sigma_report.sigma.tolist(),
        "epsilon_rdp": prep.sigma_report.epsilon_rdp.tolist(),
        "messages_per_round": prep.sigma_report.k.tolist(),
        "noise_scale": prep.sigma_report.noise_scale,
        "vectors_sent_per_agent": prep.ctx.sent.tolist(),
        "vectors_per_round": float(prep.ctx.sent.sum()) / max(1, last_round),
        **alg.diagnostics(),
        "dataset": {k: v for k, v in prep.data.meta.items() if k != "note"},
        "dataset_label": describe(prep.data.meta),
        "local_sizes": [len(p) for p in prep.parts],
        "topology": prep.ctx.topology.report(),
        "wall_seconds": elapsed + time.perf_counter() - t0,
        "diverged": diverged,
        "device": str(eng.device),
        "torch": torch.__version__,
        **made_by,
    }
    result = RunResult(config, history, meta)
    if save:
        store.save(h, config.to_dict(), history, meta)
        store.log_event("stored", h)
        ckpt.unlink(missing_ok=True)
    return result
