"""Sweeps: expand a grid into configs and run those the results store lacks.

Safe to interrupt at any moment and rerun: every run is stored atomically under its config
hash (a half-finished run leaves only its checkpoint, from which the rerun continues), the
grid is de-duplicated by hash before any work starts, and finished hashes are skipped.
Runs go to an executor (:mod:`dpdl_core.runs.executors`): by default a pool of worker processes
here, each with an equal share of the CPU threads; ``executor="ray"`` sends them to a Ray
cluster, whose tasks return their results for this process to store.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Iterable

from .config import ExperimentConfig
from .executors import Executor, get_executor
from .results import ResultStore

__all__ = ["Grid", "expand", "pending", "run_sweep"]

# Grid axes and the config field each one sets.
AXES = {"algorithms": "algorithm", "epsilons": "epsilon", "n_agents": "n_agents", "topologies": "topology",
        "alpha_d": "alpha_d", "seeds": "seed", "sigma_rules": "sigma_rule"}


@dataclass(frozen=True)
class Grid:
    """A product of values per axis plus fixed fields shared by every config.

    Attributes
    ----------
    axes : dict
        Axis name (one of :data:`AXES`) → list of values.
    base : dict
        Config fields common to all points (dataset, rounds, batch_size, ...).
    """

    axes: dict
    base: dict

    def __post_init__(self):
        unknown = sorted(set(self.axes) - set(AXES))
        if unknown:
            raise ValueError(f"unknown grid axes {unknown}; allowed: {sorted(AXES)}")


def expand(grid: Grid) -> list[ExperimentConfig]:
    """Every point of the grid as a validated config, de-duplicated by hash, in grid order."""
    names = list(grid.axes)
    seen, out = set(), []
    for values in itertools.product(*(grid.axes[n] for n in names)):
        fields = dict(grid.base)
        fields.update({AXES[n]: v for n, v in zip(names, values)})
        cfg = ExperimentConfig.from_dict(fields)
        if cfg.hash not in seen:
            seen.add(cfg.hash)
            out.append(cfg)
    return out


def pending(configs: Iterable[ExperimentConfig], store: ResultStore) -> list[ExperimentConfig]:
    """The configs whose results are not stored yet."""
    return [c for c in configs if not store.has(c.hash)]


def run_sweep(
    configs: Iterable[ExperimentConfig],
    *,
    store: ResultStore | None = None,
    workers: int | None = None,
    progress: bool | None = None,
    executor: str | Executor | None = None,
) -> list[str]:
    """Run the configs not yet stored; return the hashes of all configs.

    Parameters
    ----------
    workers : int, optional
        Worker processes of the local executor (default: ``$DPDL_WORKERS`` or the number of
        CPU cores, at most the number of pending runs). 1 runs in this process.
    progress : bool, optional
        Progress over finished runs: a tqdm bar, or a log line every 30 s or tenth of the
        runs off a terminal (see :func:`~dpdl_core.sim.progress.progress_mode`).
    executor : str or Executor, optional
        ``"local"`` (worker processes here), ``"ray"`` (a Ray cluster: ``$RAY_ADDRESS``, or
        a Ray started here) or an instance of :mod:`dpdl_core.runs.executors`; default
        ``$DPDL_EXECUTOR`` or ``local``.
    """
    from ..sim.progress import Progress

    store = store or ResultStore()
    configs = list(configs)
    todo = pending(configs, store)
    chosen = get_executor(executor, workers=workers)
    if not todo:
        return [c.hash for c in configs]
    from .runner import check_before_training

    check_before_training(todo)  # a batch that cannot fit fails the sweep before its first run
    chosen.prepare(configs)
    bar = Progress(len(todo), f"sweep ({chosen.name}, {len(configs) - len(todo)} of {len(configs)} stored before)",
                   "run", progress=progress)
    try:
        chosen.run(todo, store, lambda cfg: bar.update(1))
    finally:
        bar.close()
    return [c.hash for c in configs]
