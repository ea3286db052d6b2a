"""Stacks: R independent runs trained as one run of R·n agents.

The engine already holds a run's n agents as rows of one tensor; R runs of the same shape
(algorithm and its options, model, dataset, n, batch size, rounds, graph, clipping,
momentum) are R·n rows on a disconnected graph whose mixing matrix is block diagonal. What
may differ between the runs — seed (data partition, initial model, batches, noise), ε, δ,
σ or its rule, α_d, learning rate, training subset, initialisation — becomes per-agent:
σ is a vector already, each run keeps its own random streams (its batches and noise are
drawn from them in the order its plain run draws them) and η becomes an (R·n, 1) column.

Every stacked run's history is bit for bit its plain run's on the CPU
(``tests/test_stacking.py``): the engine's per-sample kernel works batch by batch, and a
batch belongs to one run, so the kernel calls are the plain runs' calls; gossip is one
(n, n) product per run; noise and batches come from each run's own generators. The saving
is what a round spends outside the kernel and evaluation (``docs/benchmarks.md``).

:func:`stack_key` says which configs can share a stack; :func:`build_stack` makes one from
the runs' :class:`~dpdl_core.runs.runner.Prepared`; :func:`plan_stacks` cuts a sweep's configs
into stacks.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, replace

import torch

from ..sim.algorithms import get_algorithm
from ..sim.algorithms.base import RunContext
from ..sim.bookkeeping import has_dropout
from ..sim.models import build_model
from ..sim.validation import env_int
from .config import ExperimentConfig

__all__ = ["MAX_STACK_ENV", "MEMORY_ENV", "Stack", "StackedSchedule", "build_stack", "max_stack", "plan_stacks",
           "stack_key"]

MAX_STACK_ENV = "DPDL_STACK"
MEMORY_ENV = "DPDL_STACK_MEMORY_MB"
DEFAULT_MAX_STACK = 16
DEFAULT_MEMORY_MB = 2048.0

# Fields that only shape a run's data, privacy or random streams: they may differ in a stack.
PER_RUN_FIELDS = ("seed", "alpha_d", "partition", "epsilon", "delta", "sigma_rule", "sigma", "lr", "train_samples",
                  "init", "checkpoint_every")


def stack_key(config: ExperimentConfig) -> str | None:
    """What configs must share to be stacked (None: ``config`` runs alone).

    A run stacks when its algorithm declares ``stackable`` (:class:`~dpdl_core.sim.algorithms.base.Algorithm`);
    the key is every config field but :data:`PER_RUN_FIELDS`. Configs with equal keys may
    still get different graphs (a random mixing matrix is seeded per run):
    :func:`build_stack` checks that, and the runner runs such runs in separate stacks. A model
    with dropout runs alone: its masks come from its own run's generator.
    """
    if not get_algorithm(config.algorithm).stackable or has_dropout(build_model(config.model, config.dataset)):
        return None
    shared = {k: v for k, v in config.to_dict().items() if k not in PER_RUN_FIELDS}
    return json.dumps(shared, sort_keys=True, default=str)


def max_stack() -> int:
    """``$DPDL_STACK``, the most runs in one stack (1 turns stacking off); default 16."""
    return env_int(MAX_STACK_ENV, DEFAULT_MAX_STACK, "the most runs per stack; 1 turns stacking off")


def _memory_budget_mb() -> float:
    raw = os.environ.get(MEMORY_ENV, "")
    try:
        return float(raw) if raw else DEFAULT_MEMORY_MB
    except ValueError:
        raise ValueError(f"${MEMORY_ENV}={raw!r} is not a number of megabytes") from None


def _run_bytes(config: ExperimentConfig, params: int) -> float:
    """What one run adds to a stack, roughly: its state and the round's (edge, P) temporaries,
    about 16 float32 vectors per agent (x, momentum, messages, noise, their copies)."""
    return 16 * 4 * config.n_agents * params * 4.0


def plan_stacks(configs: list[ExperimentConfig], cap: int | None = None, workers: int = 1,
                params: dict[str, int] | None = None) -> list[list[ExperimentConfig]]:
    """Cut ``configs`` into stacks: equal :func:`stack_key`, at most ``cap`` runs
    (default :func:`max_stack`) and at most ``$DPDL_STACK_MEMORY_MB`` (default 2 GB) of
    state each, and no fewer stacks than ``workers`` where a group allows, so every worker
    has work. Order is kept within a stack; stacks come in the order of their first config.

    Parameters
    ----------
    params : dict, optional
        Model size P per config hash, for the memory budget; without it P is taken as
        100,000 (larger than every model of the papers).
    """
    cap = max_stack() if cap is None else cap
    groups: dict[str, list[ExperimentConfig]] = {}
    alone: list[list[ExperimentConfig]] = []
    order: list[object] = []
    for c in configs:
        key = stack_key(c) if cap > 1 else None
        if key is None:
            alone.append([c])
            order.append(alone[-1])
        else:
            if key not in groups:
                groups[key] = []
                order.append(key)
            groups[key].append(c)
    budget = _memory_budget_mb() * 2**20
    out = []
    for item in order:
        if isinstance(item, list):
            out.append(item)
            continue
        group = groups[item]
        P = (params or {}).get(group[0].hash, 100_000)
        by_memory = max(1, int(budget // _run_bytes(group[0], P)))
        spread = -(-len(group) // max(1, workers))  # ceil: one stack per worker at least
        size = max(1, min(cap, by_memory, spread))
        out += [group[i:i + size] for i in range(0, len(group), size)]
    return out


class StackedSchedule:
    """The runs' own schedules side by side: W_t is one block per run. Returns the same
    tuple object while no run's W_t changes, so the context rebuilds nothing."""

    def __init__(self, schedules):
        self.schedules = list(schedules)
        self._last: tuple | None = None

    def mixing(self, t: int) -> tuple:
        blocks = tuple(s.mixing(t) for s in self.schedules)
        if self._last is None or any(a is not b for a, b in zip(blocks, self._last)):
            self._last = blocks
        return self._last


@dataclass
class Stack:
    """R prepared runs trained as one: the loop sees ``ctx``, ``algorithm`` and
    :meth:`sample_batches` as it does a plain run's :class:`~dpdl_core.runs.runner.Prepared`.

    Attributes
    ----------
    members : list of Prepared
        Each run as prepared alone (its data split, σ report, random streams, test set).
    ctx : RunContext
        A plain run's own context when R = 1; otherwise the stacked one.
    algorithm : Algorithm
    n : int
        Agents per run.

    This class is the one place that tells one run from several: the runner reads every
    run's rows, state and batches through it (:meth:`rows`, :meth:`join`, :meth:`view`,
    :meth:`sample_batches`) and the algorithm through ``ctx.members``, the same code for a
    plain run and a stack.
    """

    members: list
    ctx: RunContext
    algorithm: object
    n: int

    @property
    def engine(self):
        return self.ctx.engine

    @property
    def label(self) -> str:
        """What the progress bar calls this computation."""
        first = self.members[0].config.hash[:8]
        return f"run {first}" if len(self.members) == 1 else f"stack of {len(self.members)} runs ({first}, ...)"

    def rows(self, r: int) -> slice:
        """Run r's rows in every stacked (R·n, ·) tensor."""
        return self.ctx.members[r].rows

    def join(self, states: list[dict]) -> dict:
        """The runs' states (each as its plain run holds it) as the stack's one state. A lone
        run's state is used as it is: an algorithm that cannot stack may hold more than rows."""
        if len(states) == 1:
            return states[0]
        return {k: torch.cat([s[k] for s in states]) for k in states[0]}

    def view(self, state: dict, r: int, copy: bool = False) -> dict:
        """Run r's part of the stack's ``state`` (:meth:`join`'s inverse); ``copy`` for a
        checkpoint, which must not hold the other runs' rows (a view's storage is all of them)."""
        if len(self.members) == 1:
            return state
        rows = self.rows(r)
        return {k: v[rows].clone() if copy else v[rows] for k, v in state.items()}

    def initial_models(self) -> torch.Tensor:
        return torch.cat([m.initial_models() for m in self.members])

    def sample_batches(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Each run's batches from its own generator, stacked: ``(R·n, B, ...)``, ``(R·n, B)``."""
        if len(self.members) == 1:
            return self.members[0].sample_batches()
        xs, ys = zip(*(m.sample_batches() for m in self.members))
        return torch.cat(xs), torch.cat(ys)


def build_stack(members: list) -> Stack:
    """One :class:`Stack` of runs prepared alone (:func:`dpdl_core.runs.runner.prepare`).

    Raises
    ------
    ValueError
        When the runs do not share a stack key or a graph (their W differ).
    """
    first = members[0]
    if len(members) == 1:
        return Stack(members, first.ctx, first.algorithm, first.config.n_agents)
    keys = {stack_key(m.config) for m in members}
    if len(keys) != 1 or None in keys:
        raise ValueError("these runs cannot share a stack: " + ", ".join(m.config.hash[:8] for m in members))
    W0 = first.ctx.topology.W
    if any(not (m.ctx.topology.W == W0).all() for m in members[1:]):
        raise ValueError("these runs have different graphs (mixing matrices) and cannot share a stack")
    n = first.config.n_agents
    contexts = [m.ctx for m in members]
    ctx = replace(
        first.ctx,
        schedule=StackedSchedule(c.schedule for c in contexts),
        sigma=torch.cat([c.sigma for c in contexts]),
        stacked=tuple(replace(c.members[0], rows=slice(r * n, (r + 1) * n)) for r, c in enumerate(contexts)),
        taps=[],
        W=None,
        mixing_source=None,
    )
    ctx.sent = torch.zeros(ctx.n_agents, dtype=torch.long)
    ctx.set_mixing(ctx.schedule.mixing(1))
    algorithm = type(first.algorithm)(first.algorithm.params, ctx)
    return Stack(members, ctx, algorithm, n)
