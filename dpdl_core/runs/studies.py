"""Paper-scale studies: the smallest set of runs at a paper's own scale that decides its claims.

A paper declares its study in ``dpdl_core/papers/<paper>/study.py`` as a function
``study() -> Study``. One resumable command (``python -m dpdl_core study run``, ``make
studies``) runs what the study's store lacks, in the study's priority order, one run at a
time, into the committed store ``results/<paper>/`` (hash-keyed, checksummed: the
:class:`~dpdl_core.runs.results.ResultStore` format). A run stopped at any moment resumes from its
checkpoint; a finished run is one file, to be committed as it lands. The papers' study
notebooks render from that store without recomputing.

A study run is either a decentralized training run (an :class:`ExperimentConfig`, run by
:func:`dpdl_core.runs.runner.run`) or a paper's own computation (a :class:`Job`: a function and
its JSON spec, e.g. the straggler paper's token-ring simulations).
"""
from __future__ import annotations

import contextlib
import hashlib
import importlib
import inspect
import itertools
import json
import os
import signal
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ..home import REPO_ROOT
from ..papers import paper_part, papers_with
from ..sim.algorithms import get_algorithm
from ..sim.data.acquisition import SubsetDataError
from ..sim.strategies import BATCH_GRAD_STRATEGIES, EVAL_STRATEGIES, PER_SAMPLE_KERNELS
from .config import ConfigError, ExperimentConfig
from .results import ResultStore
from .slots import RunSlot

__all__ = ["STUDIES_ROOT", "STUDY_ROOT_ENV", "Job", "Study", "StudyRun", "SubsetDataError", "execution",
           "finish_line", "load_study", "run_study", "runs_left", "study_papers", "verify_partials", "verify_store"]

STUDY_ROOT_ENV = "DPDL_STUDIES_DIR"
STUDIES_ROOT = REPO_ROOT / "results"


@dataclass(frozen=True)
class Job:
    """A paper's own computation: ``function`` (``"module:name"``) called with ``spec``.

    The function returns ``(history, meta)``: a DataFrame with columns round, agent, metric,
    value (the store's format) and a JSON-able dict. Its hash is that of the function's name
    and the spec, so the same spec is the same stored result.
    """

    function: str
    spec: dict

    @property
    def hash(self) -> str:
        text = json.dumps({"function": self.function, "spec": self.spec}, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def to_dict(self) -> dict:
        return {"function": self.function, **self.spec}

    def compute(self, checkpoint_dir: Path | None = None) -> tuple[pd.DataFrame, dict]:
        """Call the function; one that takes ``checkpoint_dir`` (a long job that can resume)
        gets the folder to keep its partial work in."""
        module, name = self.function.split(":")
        function = getattr(importlib.import_module(module), name)
        if checkpoint_dir is not None and "checkpoint_dir" in inspect.signature(function).parameters:
            return function(self.spec, checkpoint_dir=checkpoint_dir)
        return function(self.spec)


# Config fields that change how a run is computed, never what (results equal to float
# rounding), with their allowed values: a run stored under any of them counts as its twin.
EXECUTION_FIELDS = {"eval_strategy": EVAL_STRATEGIES, "batch_grad_strategy": BATCH_GRAD_STRATEGIES,
                    "per_sample_strategy": PER_SAMPLE_KERNELS}


def _algo_variants(work: ExperimentConfig) -> list[dict]:
    """``work.algo`` as declared, then with each execution option of its algorithm set to
    each allowed value, in every combination."""
    variants = [dict(work.algo)]
    for name, values in get_algorithm(work.algorithm).execution_options.items():
        variants = [v for base in variants for v in (base, *({**base, name: value} for value in values))]
    return variants


_TWINS: dict[str, tuple[ExperimentConfig, ...]] = {}


def execution(work: ExperimentConfig | Job) -> str:
    """How ``work`` is computed: its :data:`EXECUTION_FIELDS` values, ``/``-separated in that
    order (``per_model/vmap/bookkeeping``); empty for a Job that trains nothing."""
    config = work.to_dict() if isinstance(work, ExperimentConfig) else work.spec.get("config")
    if not isinstance(config, dict):
        return ""
    return "/".join(str(config.get(f)) for f in EXECUTION_FIELDS)


def _job_twins(job: Job) -> tuple[Job, ...]:
    """A Job whose spec holds a training ``config``, as declared, then with that config's
    :data:`EXECUTION_FIELDS` at every allowed value (in every combination)."""
    config = job.spec.get("config")
    if not isinstance(config, dict):
        return (job,)
    choices = [dict.fromkeys((config.get(f), *values)) for f, values in EXECUTION_FIELDS.items()]
    twins = {}
    for combo in itertools.product(*choices):
        twin = Job(job.function, {**job.spec, "config": {**config, **dict(zip(EXECUTION_FIELDS, combo))}})
        twins.setdefault(twin.hash, twin)
    return tuple(twins.values())


def _twins(work: ExperimentConfig | Job) -> tuple[ExperimentConfig | Job, ...]:
    """:meth:`StudyRun.twins`, computed once per declared config (a study asks often)."""
    if not isinstance(work, ExperimentConfig):
        return _job_twins(work)
    if work.hash in _TWINS:
        return _TWINS[work.hash]
    twins = {}
    choices = [dict.fromkeys((getattr(work, f), *values)) for f, values in EXECUTION_FIELDS.items()]
    for device in dict.fromkeys((work.device, "cuda")):
        for combo in itertools.product(*choices):
            base = work.replace(device=device, **dict(zip(EXECUTION_FIELDS, combo)))
            for algo in _algo_variants(base):
                twin = base.replace(algo=algo) if algo != base.algo else base
                twins.setdefault(twin.hash, twin)
    _TWINS[work.hash] = tuple(twins.values())
    return _TWINS[work.hash]


@dataclass(frozen=True)
class StudyRun:
    """One run of a study.

    Attributes
    ----------
    key : str
        Readable, unique within the study, ``/``-separated (e.g. ``mnist/code_hp/dpdl/seed0``).
    purpose : str
        The claim or question the run serves, one line.
    priority : int
        Lower runs first, across all studies (``study run`` with several papers): 0-1 decide
        DPDL's main claim, 2 the straggler panels, 3-4 DPDL's seed spread and the paper's
        stated settings, 5-6 the PDSL cell and DPDL's CIFAR-10 cell, 7-8 LEASGD and the
        remaining seeds and controls, 9-16 the other cells, the best-faith searches and the
        statements' runs (decisive runs first).
    work : ExperimentConfig or Job
    estimate_s : float
        Estimated seconds on one core of the 2-core reference machine (for ``plan``).
    tags : dict
        What the run varies, as columns for the study's tables (e.g. ``setting``, ``mode``,
        ``algorithm``, ``seed``); not hashed.
    estimator : callable, optional
        Seconds of any of the run's :meth:`twins` (``work -> seconds``), for a study whose
        execution options change the cost several-fold: :meth:`Study.status` then sets a
        stored run's wall time beside the estimate of the twin that ran, not of the declared
        work. Without it every twin is estimated at ``estimate_s``.
    """

    key: str
    purpose: str
    priority: int
    work: ExperimentConfig | Job
    estimate_s: float = 0.0
    tags: dict = field(default_factory=dict, compare=False)
    estimator: Callable[[ExperimentConfig | Job], float] | None = field(default=None, compare=False, repr=False)

    def estimate_of(self, work: ExperimentConfig | Job) -> float:
        """Estimated seconds of ``work``, the declared work or one of its :meth:`twins`."""
        return self.estimate_s if self.estimator is None else float(self.estimator(work))

    @property
    def hash(self) -> str:
        return self.work.hash

    def on(self, device: str | None) -> ExperimentConfig | Job:
        """The run's work on ``device`` (``cuda``: its GPU twin); a Job always runs as declared."""
        if device is None or not isinstance(self.work, ExperimentConfig) or device == self.work.device:
            return self.work
        return self.work.replace(device=device)

    def twins(self) -> tuple[ExperimentConfig | Job, ...]:
        """The run's work as declared, then the same run executed otherwise: on a GPU
        (``device`` cuda), with any value of the :data:`EXECUTION_FIELDS` and of its
        algorithm's ``execution_options``, in every combination. Those fields
        are hashed (the histories differ at float rounding), so a run made any of those ways
        is stored under its own config; each counts as this run. A Job's twins are those
        of the training config its spec holds, if any (:func:`_job_twins`); it runs on the
        device it declares."""
        return _twins(self.work)

    def hashes(self) -> tuple[str, ...]:
        """The hashes this run may be stored under (:meth:`twins`), the declared one first."""
        return tuple(w.hash for w in self.twins())

    def found(self, store: ResultStore) -> str | None:
        """The hash under which ``store`` holds this run (the declared work first), or None."""
        return next((h for h in self.hashes() if store.has(h)), None)

    def partial(self, store: ResultStore) -> Path | None:
        """The run's unfinished work in ``store``, or None: a training run's checkpoint file,
        a job's folder of partial work (``checkpoints/<hash>/``)."""
        return next((p for h in self.hashes() if (p := RunSlot(store, h).partial()) is not None), None)

    def to_compute(self, store: ResultStore, device: str | None = None) -> ExperimentConfig | Job:
        """The work a ``study run`` on ``device`` computes: the twin on that device whose
        checkpoint (a job's: partial work) ``store`` holds (a run begun before its declaration
        changed how it is executed resumes as it began), else the declared work on ``device``."""
        work = self.on(device)
        for twin in self.twins():
            if getattr(twin, "device", None) == getattr(work, "device", None) and \
                    RunSlot(store, twin.hash).partial() is not None:
                return twin
        return work

    def stored_work(self, store: ResultStore) -> ExperimentConfig | Job | None:
        """The work as ``store`` holds it (the twin that ran), or None."""
        h = self.found(store)
        return None if h is None else next(w for w in self.twins() if w.hash == h)

    @property
    def dataset(self) -> str | None:
        return self.work.dataset if isinstance(self.work, ExperimentConfig) else self.work.spec.get("dataset")


@dataclass(frozen=True)
class Study:
    """A paper's study: its runs, and the data they need.

    Attributes
    ----------
    paper : str
        The paper's package name; the store is ``results/<paper>/``.
    title : str
    runs : tuple of StudyRun
    notes : str
        Where the study departs from the paper's scale, and why (shown by ``plan``).
    order : int
        Among runs of equal priority, studies of lower order run first.
    """

    paper: str
    title: str
    runs: tuple[StudyRun, ...]
    notes: str = ""
    order: int = 0

    def __post_init__(self):
        keys = [r.key for r in self.runs]
        dup = sorted({k for k in keys if keys.count(k) > 1})
        if dup:
            raise ValueError(f"study {self.paper!r}: run keys given twice: {dup}")

    def ordered(self) -> list[StudyRun]:
        """The runs in the order they are computed (priority, then declaration order)."""
        return sorted(self.runs, key=lambda r: r.priority)

    def store(self, root: str | Path | None = None) -> ResultStore:
        """The study's store: ``<root>/<paper>``, root ``$DPDL_STUDIES_DIR`` or ``results/``.

        Raises
        ------
        ValueError
            When ``$DPDL_STUDIES_DIR`` names no folder: read as empty stores, a typo would
            make ``answer`` rewrite the README from nothing.
        """
        env = os.environ.get(STUDY_ROOT_ENV)
        if root is None and env and not Path(env).is_dir():
            raise ValueError(f"${STUDY_ROOT_ENV}={env} is not a folder; point it at a folder holding the studies' "
                             f"<paper>/ stores (create it first for new studies), or unset it for {STUDIES_ROOT}")
        root = Path(root or env or STUDIES_ROOT)
        return ResultStore(root / self.paper)

    def status(self, store: ResultStore | None = None) -> pd.DataFrame:
        """One row per run: key, hash, ``kind`` (``training`` or ``job``: only training runs
        have a row in :meth:`finals`), priority, stored, estimated and measured seconds, the
        ``device`` a stored run was made on, ``execution``: how it was computed (:func:`execution`),
        ``partial``: how far an unfinished run's checkpoint got (``round t/T``, ``partial work``
        for a job), else empty, and ``done``: the share of its rounds a CPU worker resumes past
        (0 without such a checkpoint). A stored run's estimate is that of the twin that ran
        (:meth:`StudyRun.estimate_of`), the one its wall time measures."""
        store = store or self.store()
        rows = []
        for r in self.ordered():
            work = r.stored_work(store)
            h = None if work is None else work.hash
            meta = store.read_header(h)["meta"] if h else {}
            partial, done = ("", 0.0) if h else _progress(r, store)
            rows.append({"key": r.key, "hash": h or r.hash,
                         "kind": "training" if isinstance(r.work, ExperimentConfig) else "job",
                         "priority": r.priority, "stored": h is not None,
                         "estimate_s": r.estimate_of(work or r.work), "wall_s": meta.get("wall_seconds"),
                         "device": meta.get("device", "cpu") if h else None, "machine": meta.get("machine"),
                         "execution": execution(work or r.work), "purpose": r.purpose,
                         "partial": partial, "done": done})
        return pd.DataFrame(rows)

    def finals(self, store: ResultStore | None = None) -> pd.DataFrame:
        """One row per stored training run: its key, the last round's metrics (agent metrics
        averaged over agents) and the metadata a table cites (σ, accountant ε, data, machine)."""
        store = store or self.store()
        rows = []
        for r in self.ordered():
            h = r.found(store)
            if not isinstance(r.work, ExperimentConfig) or h is None:
                continue
            header, hist = store.load_run(h)
            meta = header["meta"]
            last = hist[hist["round"] == hist["round"].max()]
            evaluated = hist[hist["metric"] == "avg_test_acc"]["round"].max()
            at_eval = hist[hist["round"] == evaluated]
            row = {"key": r.key, **r.tags, "hash": h, "rounds_run": int(hist["round"].max())}
            for metric, frame in (("avg_test_acc", at_eval), ("test_acc", at_eval), ("train_loss_mean", last)):
                values = frame.loc[frame["metric"] == metric, "value"]
                row[metric] = float(values.mean()) if len(values) else float("nan")
            row.update({k: meta.get(k) for k in ("sigma_mean", "epsilon_rdp_max", "diverged", "dataset_label",
                                                 "wall_seconds", "machine", "device", "commit")})
            rows.append(row)
        return pd.DataFrame(rows)



def _progress(run: StudyRun, store: ResultStore) -> tuple[str, float]:
    """How far an unfinished run's checkpoint got (``round t/T``, saying so where a GPU twin's
    is, which only a GPU resumes), ``partial work`` for a job's folder, ``unusable checkpoint``
    for one the run would set aside, or ""; and the share t/T of the rounds a CPU worker
    resumes past (0 for all but a CPU-resumable training checkpoint)."""
    path = run.partial(store)
    if path is None:
        return "", 0.0
    if path.is_dir():
        return "partial work", 0.0
    h = path.name.split(".")[0]
    saved, _ = RunSlot(store, h).read_checkpoint()
    if saved is None:
        return "unusable checkpoint", 0.0
    text = f"round {saved['round']}/{run.work.rounds}"
    if any(w.hash == h and str(getattr(w, "device", "")).startswith("cuda") for w in run.twins()):
        return f"{text} on a GPU: a GPU resumes it", 0.0
    return text, saved["round"] / run.work.rounds


def verify_partials(study: Study, store: ResultStore | None = None) -> int:
    """Check the unfinished work kept in the store's ``checkpoints/`` (committed so
    that a long run resumes on another machine): each
    entry is a declared run's, that run is not stored yet, and a training run's checkpoint
    is one that run would resume from. Returns the number of entries checked.

    Raises
    ------
    ValueError
        Naming the entry and what is wrong with it.
    """
    store = store or study.store()
    folder = store.checkpoint_dir
    if not folder.is_dir():
        return 0
    runs = {h: r for r in study.runs for h in r.hashes()}
    checked = 0
    for entry in sorted(folder.iterdir()):
        if entry.name.startswith(".") or entry.name.endswith(".refused"):
            continue  # a killed writer's temp file, a checkpoint set aside: git ignores both
        h = entry.name.split(".")[0]
        r = runs.get(h)
        if r is None:
            raise ValueError(f"{entry}: no run of the {study.paper} study has the hash {h}")
        if r.found(store):
            raise ValueError(f"{entry}: run {r.key} is stored; its checkpoint should have been removed")
        if isinstance(r.work, ExperimentConfig):
            if entry.is_dir() or entry.suffix != ".pt":
                raise ValueError(f"{entry}: a training run's checkpoint is one file <hash>.pt")
            saved, problem = RunSlot(store, h).read_checkpoint()
            if saved is None:
                raise ValueError(f"{entry}: run {r.key} would not resume from it: {problem}")
        elif not entry.is_dir():
            raise ValueError(f"{entry}: a job's partial work is a folder <hash>/")
        checked += 1
    return checked


def study_papers() -> list[str]:
    """The papers that declare a study (a ``study`` module in their package), in the
    package and on ``$DPDL_PAPERS_PATH``."""
    return papers_with("study")


def load_study(paper: str) -> Study:
    """The study of ``paper`` (its ``papers/<paper>/study.py``)."""
    papers = study_papers()
    if paper not in papers:
        raise ConfigError(f"paper={paper!r} has no study; allowed values: {papers}")
    return paper_part(paper, "study").study()


def check_full_data(runs: Iterable[StudyRun], allow_subset: bool = False) -> dict[str, str]:
    """Refuse subset data for the runs' datasets (``meta.subset`` of the file found).

    Returns the data label per dataset. With ``allow_subset`` a subset is accepted (every
    caption of the study then says so, from each run's stored ``dataset_label``).
    """
    from ..sim.data import DATASETS, describe, load_dataset
    from ..sim.data.acquisition import MIRROR_ENV

    labels = {}
    for name in sorted({r.dataset for r in runs if r.dataset in DATASETS}):  # a paper's own data checks itself
        meta = load_dataset(name).meta
        if meta.get("subset") and not allow_subset:
            raise SubsetDataError(
                f"the study needs the full {name} data, but the file found ({meta.get('source')}) is a subset "
                f"({describe(meta)}). Point ${MIRROR_ENV} at the complete mirror (make studies "
                f"DATA_MIRROR=../shared/data_full), or pass --allow-subset to run on the subset anyway "
                f"(every caption then says so).")
        labels[name] = describe(meta)
    return labels


def run_study(
    studies: Study | Iterable[Study],
    *,
    root: str | Path | None = None,
    allow_subset: bool = False,
    keys: Iterable[str] | None = None,
    max_runs: int | None = None,
    device: str | None = None,
    log: Callable[[str], None] = print,
) -> int:
    """Compute the runs that the studies' stores lack, one at a time, lowest priority first.

    Priorities are global across studies, so that the runs which decide the papers' main
    claims land first whatever paper they belong to (ties: the order of ``studies``).

    Parameters
    ----------
    root : path, optional
        Folder of the stores (default ``$DPDL_STUDIES_DIR`` or ``results/``).
    keys : iterable of str, optional
        Only these runs (``paper:key`` or, for one study, ``key``; default: all).
    max_runs : int, optional
        Stop after computing this many runs.
    device : str, optional
        ``cuda``: run the training runs on the GPU (each is then stored under its GPU twin's
        config, which the study accepts as the run; Jobs stay on the CPU).
    log : callable
        Receives one line per started and finished run (with the count and elapsed time).

    Returns
    -------
    int
        The number of runs computed (stored) by this call.
    """
    from .runner import run

    studies = [studies] if isinstance(studies, Study) else list(studies)
    stores = {s.paper: s.store(root) for s in studies}
    order = {s.paper: i for i, s in enumerate(studies)}
    runs = sorted(((s, r) for s in studies for r in s.runs), key=lambda sr: (sr[1].priority, order[sr[0].paper]))
    runs = _named(studies, runs, keys)
    todo = [(s, r) for s, r in runs if r.found(stores[s.paper]) is None]
    check_full_data([r for _, r in todo[:max_runs]], allow_subset)
    done, t_start = 0, time.perf_counter()
    for i, (s, r) in enumerate(todo, 1):
        if max_runs is not None and done >= max_runs:
            break
        store = stores[s.paper]
        work = r.to_compute(store, device)
        # Another worker (a second `study run` on the other core) may be on this run (as any
        # of its twins), or have stored it since the list was made: go on to the next
        # instead of waiting for it.
        if r.found(store) is not None or any(RunSlot(store, h).busy() for h in r.hashes()):
            log(f"[study {i}/{len(todo)}] skipped {s.paper}:{r.key} ({work.hash}): another worker has it")
            continue
        minutes = r.estimate_of(work) / 60
        log(f"[study {i}/{len(todo)}] {s.paper}:{r.key} ({work.hash}, p{r.priority}, ~{minutes:.0f} min): {r.purpose}")
        t0 = time.perf_counter()
        if isinstance(work, ExperimentConfig):
            diverged = run(work, store=store).meta.get("diverged")
        else:
            _compute_job(work, store)
            diverged = False
        for h in r.hashes():  # a twin's unfinished work (a GPU lane's run cut short) is moot now
            if h != work.hash:
                RunSlot(store, h).tidy_if_free()
        done += 1
        log(f"[study {i}/{len(todo)}] stored {s.paper}:{r.key} -> {store.path(work.hash)} in "
            f"{time.perf_counter() - t0:.0f} s{' (diverged)' if diverged else ''}; "
            f"{time.perf_counter() - t_start:.0f} s so far")
    return done


def _named(studies: list[Study], runs: list[tuple[Study, StudyRun]],
           keys: Iterable[str] | None) -> list[tuple[Study, StudyRun]]:
    """The pairs of ``runs`` that ``keys`` names (``paper:key`` or, for one study, ``key``;
    None: all of them).

    Raises
    ------
    ConfigError
        Naming the keys that are no run of ``studies``.
    """
    if keys is None:
        return runs
    wanted = set(keys)
    names = {f"{s.paper}:{r.key}" for s, r in runs} | ({r.key for _, r in runs} if len(studies) == 1 else set())
    unknown = sorted(wanted - names)
    if unknown:
        raise ConfigError(f"keys: {unknown} are not runs of the studies {sorted(s.paper for s in studies)}; "
                          "`python -m dpdl_core study plan` lists them")
    return [(s, r) for s, r in runs if r.key in wanted or f"{s.paper}:{r.key}" in wanted]


def runs_left(studies: Iterable[Study], root: str | Path | None = None, keys: Iterable[str] | None = None) -> list[str]:
    """``paper:key`` of every run of ``studies`` (or of those ``keys`` names, as in
    :func:`run_study`) not stored yet, study by study, each study's runs in priority order."""
    studies = list(studies)
    stores = {s.paper: s.store(root) for s in studies}
    runs = _named(studies, [(s, r) for s in studies for r in s.ordered()], keys)
    return [f"{s.paper}:{r.key}" for s, r in runs if r.found(stores[s.paper]) is None]


def finish_line(studies: Iterable[Study], computed: int, left: list[str], *, keys: Iterable[str] | None = None,
                max_runs: int | None = None) -> str:
    """What `study run` says when it ends: the runs it computed and then, with ``left`` from
    :func:`runs_left` (same ``keys``): that every run is now stored, or how many are left when
    it stopped at ``max_runs``, or else (it went through the whole queue) which runs another
    worker held (:func:`run_study` skips them rather than wait)."""
    runs = f"[study] {computed} run{'' if computed == 1 else 's'} computed"
    if not left:
        named = "named by --key" if keys else f"of {', '.join(s.paper for s in studies)}"
        return f"{runs}; every run {named} is stored"
    if max_runs is not None and computed >= max_runs:
        return f"{runs} (--max-runs {max_runs}); {len(left)} not stored yet: the same command goes on"
    return (f"{runs}; {len(left)} not stored yet, held by another worker: "
            f"{', '.join(left)} (`python -m dpdl_core study plan` shows how far it got)")


@contextlib.contextmanager
def _ctrl_c_stops():
    """Ctrl-C (SIGINT) raises KeyboardInterrupt while a job computes, as it stops a training
    run (``runner.StopRequest``). A worker started in the background by a script (``cmd &``)
    inherits SIGINT ignored, so without this `pkill -INT` stopped its training runs but not
    its jobs. Only the main thread can take signals; elsewhere nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:  # None: the previous handler was not set from Python
        signal.signal(signal.SIGINT, signal.default_int_handler if previous is None else previous)


def _compute_job(job: Job, store: ResultStore) -> None:
    """Compute and store ``job`` through its slot, under its lease (another process may be on
    it); its partial work is a folder beside the runs' checkpoints, removed once it is stored."""
    from .provenance import provenance

    made_by, t0 = provenance(), time.perf_counter()
    slot = RunSlot(store, job.hash)
    with slot.held() as found:
        if found is not None:
            return
        with _ctrl_c_stops():
            history, meta = job.compute(slot.partial_dir)
        slot.finish(job.to_dict(), history, {**meta, "wall_seconds": time.perf_counter() - t0, **made_by})


def hours_left(status: pd.DataFrame) -> tuple[float, float | None]:
    """The estimated core-hours of the runs not stored (``status``: :meth:`Study.status`; a run
    resumed from a checkpoint counts its rounds still to go, ``done``), and the same at the
    pace measured so far: scaled by the CPU-made stored runs' measured over
    estimated seconds (None before any such run with a wall time is stored). The pace carries
    whatever the stored runs shared their machine with, which the estimates (idle core) do not;
    runs made on a GPU (``device`` cuda) say nothing of a core's pace and are left out."""
    to_go = status["estimate_s"] * (1 - status["done"]) if "done" in status else status["estimate_s"]
    left = to_go[~status["stored"]].sum() / 3600
    on_cpu = ~status["device"].fillna("cpu").astype(str).str.startswith("cuda") if "device" in status else True
    timed = status[status["stored"] & on_cpu & status["wall_s"].notna() & (status["estimate_s"] > 0)]
    if timed.empty:
        return left, None
    return left, left * timed["wall_s"].astype(float).sum() / timed["estimate_s"].sum()


def describe_runs(study: Study, store: ResultStore | None = None) -> str:
    """Text table of the study's runs for ``plan --study``."""
    st = study.status(store)
    left, paced = hours_left(st)
    pace = "" if paced is None else f" ({paced:.1f} at the stored runs' measured pace)"
    lines = [f"{study.title}: {int(st['stored'].sum())}/{len(st)} runs stored in {(store or study.store()).root}",
             f"estimated {left:.1f} core-hours left{pace}; "
             f"measured {st['wall_s'].dropna().sum() / 3600:.1f} h for the stored runs"]
    if study.notes:
        lines.append(study.notes)
    for row in st.itertuples():
        took = f"{row.wall_s / 60:6.1f} min" if row.stored and row.wall_s else f"~{row.estimate_s / 60:5.0f} min"
        took += " (GPU)" if row.stored and str(row.device).startswith("cuda") else ""
        to_go = f", ~{row.estimate_s * (1 - row.done) / 60:.0f} min to go" if row.done else ""
        resumes = f" (checkpoint: {row.partial}{to_go})" if row.partial else ""
        lines.append(f"  {'x' if row.stored else ' '} p{row.priority} {row.key:<58} {row.hash} {took}{resumes}")
    return "\n".join(lines)


def verify_store(study: Study, store: ResultStore | None = None) -> int:
    """Read every stored run of ``study`` back (its checksum verified by the store) and check
    that its stored config hashes to the run's hash; return the number of runs checked.

    Raises
    ------
    ValueError
        When a stored config does not hash to its run's hash (the file is not that run's).
    """
    store = store or study.store()
    checked = 0
    for r in study.runs:
        h = r.found(store)
        if h is None:
            continue
        header, hist = store.load_run(h)
        config = header["config"]
        if isinstance(r.work, ExperimentConfig):
            again = ExperimentConfig.from_stored(config).hash
        else:
            again = Job(config["function"], {k: v for k, v in config.items() if k != "function"}).hash
        if again != h or hist.empty:
            raise ValueError(f"{store.path(h)}: its config hashes to {again}, not {h}, or it has no rows")
        checked += 1
    return checked
