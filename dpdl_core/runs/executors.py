"""Executors: where the runs of a sweep go (:func:`dpdl_core.runs.sweep.run_sweep`).

Both cut the configs into stacks first (:func:`dpdl_core.runs.stacking.plan_stacks`: runs of
one shape train as one run of many agents, ``$DPDL_STACK`` caps their number, 1 turns
stacking off) and ship a stack as one unit of work.

``local`` (the default)
    A pool of spawned worker processes on this machine, each with an equal share of the CPU
    threads; every worker writes its runs to the results store itself (and checkpoints
    there, so a rerun continues an interrupted run).
``ray``
    One Ray task per stack on a Ray cluster (``$RAY_ADDRESS``) or, without one, on a Ray
    started on this machine for the sweep. A task receives the stack's configs as dicts,
    trains them and *returns* their histories and metadata; the driver (this process) writes the results
    store, so the cluster's nodes need no shared filesystem, only the package and the data
    (``pip install -e .[cluster]`` and the dataset mirror or download on every node). A task
    whose worker dies (node lost, out of memory) is retried, as is one that raises an
    exception of :attr:`RayExecutor.retry_exceptions`; since the driver stores each config
    once, when its first result comes back, a retry never duplicates a run. A retried task
    starts from round 1: checkpoints would live on a node that may be gone.

Pick one with ``run_sweep(..., executor="ray")``, ``$DPDL_EXECUTOR=ray``, or an instance
(``run_sweep(..., executor=RayExecutor(threads=4))``). Both are resumable in the same way:
what the store holds is skipped by the sweep before the executor sees it. The local one runs
what is left with the whole sweep's workers and threads (:meth:`Executor.prepare`), so a
resumed sweep stores what the uninterrupted one would; Ray's task threads follow the cluster
and the tasks left, and a resume there matches only to float rounding.
"""
from __future__ import annotations

import os
import tempfile
from abc import ABC, abstractmethod
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import Callable, ClassVar

from ..sim.validation import env_int
from .config import ExperimentConfig
from .results import ResultStore
from .slots import RunSlot
from .stacking import plan_stacks

__all__ = ["EXECUTORS", "EXECUTOR_ENV", "Executor", "LocalExecutor", "RayExecutor", "THREADS_ENV", "WORKERS_ENV",
           "execute", "get_executor", "import_ray"]

EXECUTOR_ENV = "DPDL_EXECUTOR"
THREADS_ENV = "DPDL_THREADS"
WORKERS_ENV = "DPDL_WORKERS"

Done = Callable[[ExperimentConfig], None]


class Executor(ABC):
    """Runs configs into a results store.

    Subclasses set :attr:`name` and implement :meth:`run`.
    """

    name: ClassVar[str]

    @abstractmethod
    def run(self, configs: list[ExperimentConfig], store: ResultStore, done: Done) -> None:
        """Run every config (none of them stored yet) and store its result in ``store``;
        call ``done(config)`` once per config, after it is stored."""

    # An optional hook with a default that does nothing, not an abstract method.
    def prepare(self, sweep: list[ExperimentConfig]) -> None:  # noqa: B027
        """Told the whole sweep, stored runs included, before :meth:`run` gets what is left
        of it: choices that change a run's numbers must follow the sweep, not what is left.
        Does nothing by default."""


# -- local --------------------------------------------------------------------------------


def _local_worker(cfg_dicts: list[dict], root: str, threads: int) -> list[str]:
    import torch

    from .runner import run_stack

    torch.set_num_threads(threads)
    configs = [ExperimentConfig.from_dict(d) for d in cfg_dicts]
    run_stack(configs, store=ResultStore(root), progress=False)
    return [c.hash for c in configs]


@dataclass
class LocalExecutor(Executor):
    """Worker processes on this machine.

    Attributes
    ----------
    workers : int, optional
        Worker processes (default: ``$DPDL_WORKERS`` or the number of CPU cores, at most
        the number of runs). 1 runs in this process.
    """

    name: ClassVar[str] = "local"
    workers: int | None = None
    # (workers, threads) of the whole sweep (:meth:`prepare`), None until told.
    _whole: tuple[int, int] | None = field(default=None, init=False, repr=False)

    def pool(self, n_runs: int) -> tuple[int, int]:
        """(worker processes, torch threads of each) for ``n_runs`` runs."""
        workers = self.workers
        if workers is None:
            workers = env_int(WORKERS_ENV, os.cpu_count() or 1, "worker processes of a local sweep")
        workers = max(1, min(workers, n_runs))
        return workers, max(1, (os.cpu_count() or 1) // workers)

    def prepare(self, sweep: list[ExperimentConfig]) -> None:
        """Fix the workers and threads of the whole ``sweep``, so what is left of it after an
        interruption runs as the uninterrupted sweep did: in worker processes with the same
        torch threads (on an AVX2 CPU the thread count changes a run's last bits), even when
        one run is left, which would otherwise run here with this process's threads."""
        self._whole = self.pool(len(plan_stacks(sweep, workers=self.pool(len(sweep))[0]))) if sweep else None

    def run(self, configs: list[ExperimentConfig], store: ResultStore, done: Done) -> None:
        from . import runner  # looked up at call time: tests patch runner.run_stack

        stacks = plan_stacks(configs, workers=self.pool(len(configs))[0])
        workers, threads = self.pool(len(stacks))
        in_process = workers == 1
        whole, self._whole = self._whole, None  # told for this run only
        if whole is not None:
            in_process = whole[0] == 1
            workers, threads = min(whole[0], len(stacks)), whole[1]
        if in_process:
            for stack in stacks:
                runner.run_stack(stack, store=store, progress=False)
                for cfg in stack:
                    done(cfg)
            return
        import multiprocessing as mp

        # spawn, not fork: a fork of a process whose torch thread pool has started can hang.
        with ProcessPoolExecutor(workers, mp_context=mp.get_context("spawn")) as pool:
            futures = {pool.submit(_local_worker, [c.to_dict() for c in stack], str(store.root), threads): stack
                       for stack in stacks}
            for fut in as_completed(futures):
                fut.result()  # re-raise a worker's error here
                for cfg in futures[fut]:
                    done(cfg)


# -- Ray ----------------------------------------------------------------------------------


def import_ray():
    """The ``ray`` module, or an ImportError saying how to install it."""
    try:
        import ray
    except ImportError as exc:
        raise ImportError("the Ray executor needs Ray, which is not installed; install the cluster extra: "
                          "pip install -e .[cluster]") from exc
    return ray


def execute(cfg_dicts: list[dict], threads: int) -> list:
    """Train one stack of configs with ``threads`` torch threads and return their
    :class:`~dpdl_core.runs.runner.RunResult` (in order), storing nothing (the Ray task's body).

    The runs neither read nor write a results store: they compute even when some store on
    this node holds them, and their store is a scratch folder removed afterwards.
    """
    import torch

    from .runner import run_stack

    torch.set_num_threads(threads)
    configs = [ExperimentConfig.from_dict(d) for d in cfg_dicts]
    with tempfile.TemporaryDirectory(prefix="dpdl-task-") as scratch:
        return run_stack(configs, store=ResultStore(scratch), progress=False, force=True, save=False)


def _store_result(store: ResultStore, cfg: ExperimentConfig, result) -> None:
    """Store a task's result through the run's slot, as :func:`~dpdl_core.runs.runner.run` does:
    under the run's lease, logged in the store's journal, and not at all when another sweep on
    the same folder stored the run meanwhile."""
    slot = RunSlot(store, cfg.hash)
    with slot.held() as found:
        if found is None:
            slot.finish(cfg.to_dict(), result.history, result.meta, executor="ray")


@dataclass
class RayExecutor(Executor):
    """One Ray task per stack of configs; the driver stores the results.

    Attributes
    ----------
    address : str, optional
        Ray cluster to connect to (default ``$RAY_ADDRESS``). Without one, a Ray is started
        on this machine for the sweep and shut down after it. A Ray already initialised in
        this process (``ray.init(...)`` by the caller) is used as it is and left running.
    threads : int, optional
        Torch threads of each task, which is also its ``num_cpus`` request (default
        ``$DPDL_THREADS``, else an equal share of the cluster's CPUs at the start of the
        sweep, at least 1).
    gpus_per_task : float
        ``num_gpus`` of a task whose config runs on ``device: cuda`` (and ``auto`` when the
        cluster has GPUs). The papers' models have 5k to 1M parameters, far from filling a
        GPU, so by default four runs share one.
    max_retries : int
        Retries of a task whose worker died, or that raised one of ``retry_exceptions``.
    retry_exceptions : tuple of exception types
        Exceptions worth a retry: ``OSError`` covers a dataset read or download that failed
        on a node. A config error or a bug fails the same way every time, so other
        exceptions are not retried.
    task : callable
        The task's body, ``task(config_dicts, threads) -> list[RunResult]`` (default
        :func:`execute`); a test wraps it to kill a worker.
    """

    name: ClassVar[str] = "ray"
    address: str | None = None
    threads: int | None = None
    gpus_per_task: float = 0.25
    max_retries: int = 3
    retry_exceptions: tuple = (OSError,)
    task: Callable = execute

    def task_threads(self, n_tasks: int, cluster_cpus: float) -> int:
        """Threads (= ``num_cpus``) of each of ``n_tasks`` tasks on ``cluster_cpus`` CPUs."""
        if self.threads is not None:
            return self.threads
        return env_int(THREADS_ENV, max(1, int(cluster_cpus) // max(1, n_tasks)), "torch threads of each Ray task")

    def task_gpus(self, cfg: ExperimentConfig, cluster_gpus: float) -> float:
        """``num_gpus`` of ``cfg``'s task on a cluster with ``cluster_gpus`` GPUs."""
        if cfg.device == "cuda" or (cfg.device == "auto" and cluster_gpus > 0):
            return self.gpus_per_task
        return 0.0

    def run(self, configs: list[ExperimentConfig], store: ResultStore, done: Done) -> None:
        ray = import_ray()
        started = not ray.is_initialized()
        if started:
            # "local" starts a fresh Ray here; a bare ray.init() would also attach to the
            # last cluster started on this machine, which the user did not ask for.
            ray.init(address=self.address or os.environ.get("RAY_ADDRESS") or "local", include_dashboard=False)
        refs: dict = {}
        try:
            resources = ray.cluster_resources()
            gpus = resources.get("GPU", 0.0)
            wants_cuda = [c.hash for c in configs if c.device == "cuda"]
            if wants_cuda and gpus == 0:
                raise ValueError(f"{len(wants_cuda)} config(s) ask for device=cuda (e.g. {wants_cuda[0]}) but the "
                                 f"Ray cluster has no GPU; use device=cpu or auto, or a cluster with GPUs")
            stacks = plan_stacks(configs, workers=max(1, int(resources.get("CPU", 1.0))))
            threads = self.task_threads(len(stacks), resources.get("CPU", 1.0))
            remote = ray.remote(self.task)
            for stack in stacks:
                opts = dict(num_cpus=threads, num_gpus=self.task_gpus(stack[0], gpus), max_retries=self.max_retries,
                            retry_exceptions=list(self.retry_exceptions) or False)
                refs[remote.options(**opts).remote([c.to_dict() for c in stack], threads)] = stack
            failures = []
            while refs:
                (ref,), _ = ray.wait(list(refs), num_returns=1)
                stack = refs.pop(ref)
                try:
                    results = ray.get(ref)
                except ray.exceptions.RayError as exc:
                    # Keep storing the others: a rerun then only has the failed ones left.
                    failures += [(cfg, exc) for cfg in stack]
                    continue
                for cfg, result in zip(stack, results):
                    _store_result(store, cfg, result)
                    done(cfg)
            if failures:
                cfg, exc = failures[0]
                raise RuntimeError(f"{len(failures)} of {len(configs)} run(s) failed after retries, e.g. "
                                   f"{cfg.hash} ({cfg.algorithm}, {cfg.dataset}); the others are stored") from exc
        finally:
            # Interrupted (or failed): stop what is still queued; stored runs stay stored.
            for ref in refs:
                ray.cancel(ref, force=True)
            if started:
                ray.shutdown()


EXECUTORS: dict[str, type[Executor]] = {cls.name: cls for cls in (LocalExecutor, RayExecutor)}


def get_executor(executor: str | Executor | None = None, workers: int | None = None) -> Executor:
    """An executor instance.

    Parameters
    ----------
    executor : str or Executor, optional
        A name of :data:`EXECUTORS`, an instance (returned as is), or None for
        ``$DPDL_EXECUTOR`` (default ``local``).
    workers : int, optional
        Worker processes of the local executor (Ray schedules by resources instead).
    """
    if isinstance(executor, Executor):
        return executor
    name = executor or os.environ.get(EXECUTOR_ENV) or "local"
    if name not in EXECUTORS:
        given = "executor" if executor else f"${EXECUTOR_ENV}"
        raise ValueError(f"{given}={name!r} is not known; allowed values: {sorted(EXECUTORS)}")
    return LocalExecutor(workers=workers) if name == "local" else EXECUTORS[name]()
