"""What a profile would run, before anything runs: ``python -m dpdl_core plan``.

A paper package lists the runs its notebooks sweep into a results store with a function
``configs(profile, group=None) -> list[RunGroup]`` on the package (built with the same
builders the notebooks call, so the plan and the notebooks cannot disagree; ``group``
selects one group by name, :func:`select_groups`). A paper without one
sweeps nothing: its notebooks compute in place. :func:`make_plan` counts, per paper and
group, the distinct runs, how many the store already holds, and an estimate of their
CPU-hours from the engine benchmark (:class:`Benchmark`).
"""
from __future__ import annotations

import json
import os
import textwrap
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from ..home import REPO_ROOT
from .config import ExperimentConfig
from .results import ResultStore

__all__ = ["BENCHMARK_PATH", "Benchmark", "BenchmarkRow", "GroupPlan", "Plan", "RunGroup", "format_plan", "make_plan",
           "paper_groups", "select_groups"]

BENCHMARK_PATH = REPO_ROOT / "benchmarks" / "results.json"


@dataclass(frozen=True)
class RunGroup:
    """Runs one notebook builder sweeps, and the store they go to.

    Attributes
    ----------
    name : str
        What runs them (e.g. ``tables``, ``fig02``).
    configs : tuple of ExperimentConfig
    store : ResultStore, optional
        The builder's own store; None: the default results store.
    """

    name: str
    configs: tuple
    store: ResultStore | None = None

    def __post_init__(self):
        object.__setattr__(self, "configs", tuple(self.configs))


def select_groups(groups: Iterable[RunGroup], group: str | None = None) -> list[RunGroup]:
    """``groups``, or only the one named ``group`` (None: all of them): what a paper's
    ``configs(profile, group)`` returns.

    Raises
    ------
    ValueError
        When no group is named ``group``; the message lists the allowed names.
    """
    groups = list(groups)
    if group is None:
        return groups
    chosen = [g for g in groups if g.name == group]
    if not chosen:
        raise ValueError(f"group={group!r} is not a run group; allowed: {[g.name for g in groups]}")
    return chosen


def paper_groups(paper: str, profile: str, group: str | None = None) -> list[RunGroup]:
    """The run groups of ``paper``'s notebooks at ``profile`` (empty when it sweeps nothing),
    or only the one named ``group`` (ValueError naming the allowed groups if none is)."""
    from ..papers import get_paper
    from .profiles import load_profile

    load_profile(profile, paper=paper)  # validates both names
    hook = getattr(get_paper(paper), "configs", None)
    return list(hook(profile, group)) if hook is not None else select_groups([], group)


# -- cost estimate ------------------------------------------------------------------------


@dataclass(frozen=True)
class BenchmarkRow:
    """One case of ``benchmarks/bench_engine.py``: a DPDL round's wall time."""

    case: str
    dataset: str
    topology: str
    n_agents: int
    batch_size: int
    seconds_per_round: float


# The "Engine benchmark" table of docs/benchmarks.md (make bench on the 2-core CI machine, torch 2.14.1,
# B = 216), used when benchmarks/results.json (not committed) has not been written here.
FALLBACK_ROWS = (
    BenchmarkRow("mnist_bipartite_10", "mnist", "bipartite", 10, 216, 0.63),
    BenchmarkRow("mnist_fully_connected_20", "mnist", "fully_connected", 20, 216, 4.49),
    BenchmarkRow("mnist_fully_connected_30", "mnist", "fully_connected", 30, 216, 10.00),
    BenchmarkRow("cifar10_bipartite_10", "cifar10", "bipartite", 10, 216, 2.81),
)
FALLBACK_THREADS = 2
# What a run costs besides its training rounds, on one core. RUN_START_S: data, graph, model and
# engine set-up, sigma calibration, the result's write and the notebook's work around each run
# (the DPDL notebooks at smoke, one worker, one thread, 2 cores beside other jobs, 2026-11-28:
# 936 s for 18 notebooks and 60 runs of 3-4 rounds, less 20 s a notebook, over 60 runs; the
# CIFAR-10 tables notebooks take most of it). EVAL_S_PER_MODEL_IMAGE: one model on one
# test image, by data set and eval_strategy: per_model from docs/benchmarks.md, "Evaluation
# forward" (10 models x 2,000 images in 1.67 s on MNIST, 1.37 s on CIFAR-10); vmap from the DPDL
# study's evaluation (12 s for 10 models x 10,000 MNIST images, 65 s on CIFAR-10:
# dpdl_core/papers/dpdl/study.py, _SECONDS_PER_EVAL).
RUN_START_S = 9.6
EVAL_S_PER_MODEL_IMAGE = {("mnist", "per_model"): 8.4e-5, ("cifar10", "per_model"): 6.9e-5,
                          ("mnist", "vmap"): 1.2e-4, ("cifar10", "vmap"): 6.5e-4}
TEST_IMAGES = 10_000  # MNIST's and CIFAR-10's test sets: what eval_samples None evaluates


@dataclass(frozen=True)
class Benchmark:
    """Measured DPDL round times and the estimate of a run's CPU time built on them.

    A run's CPU-seconds = the seconds per round of the benchmark row of its dataset (the
    same topology and N if benchmarked, else the nearest N), scaled by N × B relative to
    the row's, × rounds × the benchmark's threads, plus its set-up and evaluations
    (:func:`overhead_seconds`). An estimate: the benchmark times a DPDL round (one
    per-sample gradient pass per edge); algorithms with fewer gradient passes are cheaper,
    and PDSL's Shapley games are not in it.

    Attributes
    ----------
    rows : tuple of BenchmarkRow
    threads : int
        Torch threads the benchmark ran with.
    source : str
        Where the rows come from (printed with the plan).
    measured : bool
        False for the fallback (the table of docs/benchmarks.md).
    """

    rows: tuple
    threads: int
    source: str
    measured: bool = True

    @classmethod
    def load(cls, path: str | Path | None = None) -> Benchmark:
        """``path`` (default ``benchmarks/results.json``, written by ``make bench``), or the table
        of docs/benchmarks.md when that file is missing.

        Raises
        ------
        ValueError
            When the file is not what ``benchmarks/bench_engine.py`` writes (naming the file and
            what to do).
        """
        path = Path(path) if path is not None else BENCHMARK_PATH
        if not path.exists():
            source = (f"{path} is missing (run `make bench` to measure this machine); using the engine "
                      "benchmark table of docs/benchmarks.md (2-core CI machine, torch 2.14.1)")
            return cls(FALLBACK_ROWS, FALLBACK_THREADS, source, measured=False)
        try:
            data = json.loads(path.read_text())
            env = data.get("environment", {})
            rows = tuple(BenchmarkRow(r["case"], r["dataset"], r["topology"], int(r["n_agents"]),
                                      int(r["batch_size"]), float(r["engine_round_s"])) for r in data["results"])
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            problem = f"it has no {exc} field" if isinstance(exc, KeyError) else str(exc)
            raise ValueError(f"benchmark file {path} is not an engine benchmark ({problem}); rewrite it with "
                             f"`make bench` (benchmarks/bench_engine.py), or pass another with --benchmark") from None
        return cls(rows, int(env.get("threads", FALLBACK_THREADS)),
                   f"{path} (torch {env.get('torch', '?')}, {env.get('threads', '?')} threads, {env.get('cpu', '?')})")

    def row_for(self, cfg: ExperimentConfig) -> BenchmarkRow | None:
        """The row ``cfg`` is scaled from (None when its dataset was not benchmarked)."""
        same = [r for r in self.rows if r.dataset == cfg.dataset]
        if not same:
            return None
        return min(same, key=lambda r: (abs(r.n_agents - cfg.n_agents), r.topology != cfg.topology))

    def cpu_seconds(self, cfg: ExperimentConfig) -> tuple[float | None, BenchmarkRow | None]:
        """Estimated CPU-seconds of ``cfg`` and the row used (None, None: no row)."""
        row = self.row_for(cfg)
        if row is None:
            return None, None
        scale = (cfg.n_agents * cfg.batch_size) / (row.n_agents * row.batch_size)
        return row.seconds_per_round * scale * cfg.rounds * self.threads + overhead_seconds(cfg), row


def overhead_seconds(cfg: ExperimentConfig) -> float:
    """CPU-seconds of ``cfg`` besides its training rounds: its set-up (:data:`RUN_START_S`) and
    its evaluations (one every ``eval_every`` rounds and one at the end, every agent's model on
    ``eval_samples`` test images)."""
    evaluations = cfg.rounds // cfg.eval_every + 1
    images = cfg.eval_samples or TEST_IMAGES
    per_image = EVAL_S_PER_MODEL_IMAGE.get((cfg.dataset, cfg.eval_strategy), 0.0)
    return RUN_START_S + evaluations * cfg.n_agents * images * per_image


# -- plan ---------------------------------------------------------------------------------


@dataclass
class GroupPlan:
    """Counts of one run group, of a paper's distinct runs (``name="all"``) or of every
    paper's (``paper="total"``).

    Attributes
    ----------
    store : Path or None
        The store the runs go to; None when they go to several.
    runs, stored : int
        Distinct configs, and how many the store holds.
    cpu_hours, cpu_hours_missing : float
        Estimated CPU-hours of all runs and of those not stored, over the runs with a
        benchmark row (``unestimated`` counts the others).
    rows_used : Counter
        Benchmark case → runs estimated from it.
    devices_missing : Counter
        Device → runs not stored (the GPU requests of a Ray sweep).
    """

    paper: str
    name: str
    store: Path | None
    runs: int = 0
    stored: int = 0
    cpu_hours: float = 0.0
    cpu_hours_missing: float = 0.0
    unestimated: int = 0
    rows_used: Counter = field(default_factory=Counter)
    devices_missing: Counter = field(default_factory=Counter)

    @property
    def missing(self) -> int:
        return self.runs - self.stored


def _count(paper: str, name: str, runs: dict, bench: Benchmark) -> GroupPlan:
    """Count ``runs``: (store root, hash) → (config, stored)."""
    roots = {root for root, _ in runs}
    out = GroupPlan(paper, name, roots.pop() if len(roots) == 1 else None, runs=len(runs))
    for cfg, stored in runs.values():
        seconds, row = bench.cpu_seconds(cfg)
        out.stored += stored
        if not stored:
            out.devices_missing[cfg.device] += 1
        if row is None:
            out.unestimated += 1
            continue
        out.rows_used[row.case] += 1
        out.cpu_hours += seconds / 3600
        if not stored:
            out.cpu_hours_missing += seconds / 3600
    return out


@dataclass
class Plan:
    """:func:`make_plan`'s answer.

    Attributes
    ----------
    groups : list of GroupPlan
        Per paper its groups, then its distinct runs (``name="all"``).
    total : GroupPlan
        Distinct runs over every paper.
    no_runs : list of str
        Papers whose notebooks sweep nothing into a results store.
    """

    profile: str
    default_store: Path
    benchmark: Benchmark
    groups: list
    total: GroupPlan
    no_runs: list

    def papers(self) -> list[str]:
        return list(dict.fromkeys(g.paper for g in self.groups))


def make_plan(profile: str, papers: Iterable[str] | None = None, store: ResultStore | None = None,
              benchmark: Benchmark | None = None) -> Plan:
    """Count what ``profile`` runs, per paper and group, without running anything.

    Parameters
    ----------
    papers : iterable of str, optional
        Default: every paper.
    store : ResultStore, optional
        The results store of groups without their own (default ``ResultStore()``).
    benchmark : Benchmark, optional
        Default :meth:`Benchmark.load`.
    """
    from ..papers import PAPERS

    store = store or ResultStore()
    bench = benchmark or Benchmark.load()
    groups, no_runs, everything = [], [], {}
    for paper in papers or PAPERS:
        found = paper_groups(paper, profile)
        if not found:
            no_runs.append(paper)
            continue
        distinct: dict = {}
        for g in found:
            target = g.store or store
            # Keyed by store and hash: the same config in two stores is two runs. (A config's
            # hash is not cached and costs more than the file check: compute it once.)
            hashes = [(c, c.hash) for c in g.configs]
            runs = {(target.root, h): (c, target.has(h)) for c, h in hashes}
            groups.append(_count(paper, g.name, runs, bench))
            distinct.update(runs)
        groups.append(_count(paper, "all", distinct, bench))
        everything.update(distinct)
    return Plan(profile, store.root, bench, groups, _count("total", "all", everything, bench), no_runs)


def _hours(h: float) -> str:
    if h == 0:
        return "0"
    if h < 0.01:
        return "<0.01"
    return f"{h:.2f}" if h < 10 else f"{h:,.1f}" if h < 100 else f"{h:,.0f}"


def _runs(n: int) -> str:
    return f"{n:,d} run" + ("" if n == 1 else "s")


def format_plan(plan: Plan, executor: str = "local") -> str:
    """The plan as text: a table of runs, stored runs and CPU-hours, how the estimate was
    made, and how ``executor`` (``local`` or ``ray``) would run the runs not stored."""
    from ..sim.validation import env_int
    from .executors import THREADS_ENV, LocalExecutor, RayExecutor

    lines = [f"Plan for profile {plan.profile!r}: the runs the notebooks sweep into a results store "
             "(nothing has run).", f"Results store: {plan.default_store} (a group with its own store names it).", ""]
    head = (f"{'paper':10s} {'group':12s} {'runs':>8s} {'stored':>8s} {'to run':>8s} {'CPU-h':>10s} "
            f"{'CPU-h to run':>13s}")
    lines += [head, "-" * len(head)]

    def row(paper: str, name: str, g: GroupPlan) -> str:
        own = "" if g.store in (None, plan.default_store) else f"  store {g.store}"
        return (f"{paper:10s} {name:12s} {g.runs:8,d} {g.stored:8,d} {g.missing:8,d} {_hours(g.cpu_hours):>10s} "
                f"{_hours(g.cpu_hours_missing):>13s}{own}")

    for paper in plan.papers():
        groups = [g for g in plan.groups if g.paper == paper]
        for g in groups:
            if g.name == "all" and len(groups) > 2:
                lines.append(row(paper, "(distinct)", g))
            elif g.name != "all":  # with one group, its line is the paper's
                lines.append(row(paper, g.name, g))
    total = plan.total
    lines += ["-" * len(head), row("total", "(distinct)", total)]
    lines += [f"{p:10s} sweeps no runs into a results store (its notebooks compute in place)" for p in plan.no_runs]
    if total.unestimated:
        lines.append(f"{_runs(total.unestimated)} without a benchmark row for their dataset: not in the CPU-hours")

    bench = plan.benchmark
    used = ", ".join(f"{case} ({_runs(n)})" for case, n in total.rows_used.most_common())
    notes = [f"CPU-hours are an ESTIMATE: the seconds per DPDL round of the engine benchmark row of the run's dataset "
             f"(the same topology and N if benchmarked, else the nearest N), scaled by N x B relative to the row's, x "
             f"rounds x the benchmark's {bench.threads} threads, plus each run's set-up and evaluations (measured per "
             f"test image). PDSL's Shapley games are not counted; algorithms with fewer gradient passes per round than "
             f"DPDL cost less. `figures` adds each notebook's start-up (docs/usage.md, Estimates).",
             f"Benchmark: {bench.source}.", f"Benchmark rows used: {used or 'none'}."]

    cores = os.cpu_count() or 1
    if executor == "local":
        workers, threads = LocalExecutor().pool(max(1, total.missing))
        notes.append(f"Executor local: {workers} worker process(es) x {threads} thread(s) on this machine's {cores} "
                     f"core(s): about {_hours(total.cpu_hours_missing / cores)} h of wall time at perfect scaling.")
    else:
        ray = RayExecutor()
        address = os.environ.get("RAY_ADDRESS")
        threads = env_int(THREADS_ENV, 0, "torch threads of each Ray task") or ("an equal share of the cluster's "
                                                                                 "CPUs (at least 1)")
        gpu = total.devices_missing["cuda"] + total.devices_missing["auto"]
        where = f"the Ray cluster at RAY_ADDRESS={address}" if address else "a Ray started here (no RAY_ADDRESS)"
        gpus = (f"; num_gpus = {ray.gpus_per_task} for the {_runs(gpu)} on device cuda, or auto when the cluster has "
                "GPUs" if gpu else "; every run is on device cpu (no GPU requested)")
        notes.append(f"Executor ray: {total.missing:,d} task(s) on {where}; each requests num_cpus = its torch "
                     f"threads = {threads}{gpus}. A task whose worker dies is retried (max_retries = "
                     f"{ray.max_retries}); this process writes the results store.")
    lines.append("")
    lines += [textwrap.fill(n, 110, subsequent_indent="  ") for n in notes]
    return "\n".join(lines)
