"""Execute the notebooks with papermill (``make figures``) and build the HTML report.

Notebooks live in ``notebooks/<folder>/`` (``overview`` and one folder per paper). Sources
are never modified: executed copies go to ``build/notebooks/<profile>/<folder>/``. Figures
and tables are written by the notebooks into ``figures/<profile>/`` through
:mod:`dpdl_core.verdicts.plotting`, so that profiles never overwrite each other.

While a notebook runs, the progress lines of its sweeps and runs (runs done of the total,
elapsed, ETA: :class:`dpdl_core.sim.progress.Progress`) are relayed, indented, under its
``[k/n]`` line. A notebook that fails is reported in a few lines (the error's last lines, which say what to
fix, and the executed copy to open for the whole traceback); the outputs it did not rewrite
are moved to ``figures/<profile>/stale/``, out of the report, and the other notebooks run;
a cell that met a full disk or a read-only file system stops them all (one ``error:`` line).
Ctrl-C ends the command with one paragraph naming the notebook and the command that goes on
(:func:`_interrupted`); each kernel's own stderr goes to ``<executed notebook>.kernel.log``.
"""
from __future__ import annotations

import logging
import os
import re
import shutil
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from ..home import REPO_ROOT
from .notebook_index import notebook_folders, notebook_paths

__all__ = ["FiguresReport", "build_report", "execute_notebooks", "notebook_paths", "set_aside_stale"]

ROOT = REPO_ROOT
# Lines of a failing cell's error shown by `make figures`; the executed notebook has the rest.
ERROR_LINES = 4
# The kernel's log: at ERROR, not its "running over TCP without encryption" warning, which
# concerns remote kernels, not one papermill starts on this machine.
KERNEL_ARGUMENTS = ["--IPKernelApp.log_level=ERROR"]


@dataclass
class FiguresReport:
    """What :func:`execute_notebooks` did.

    Attributes
    ----------
    timings : (folder/name, seconds) per notebook executed, failed ones included
    failed : folder/name of the notebooks that raised
    figures : the profile's figures folder
    """

    timings: list[tuple[str, float]] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    figures: Path = Path()


class _ProgressRelay:
    """A notebook's stderr as papermill streams it (``stderr_file``): its progress lines
    (those of :meth:`dpdl_core.sim.progress.Progress.line`) go on to stdout, indented; the rest
    stays in the executed notebook only."""

    def __init__(self):
        self._partial = ""

    def write(self, text: str) -> None:
        lines = (self._partial + text).split("\n")
        self._partial = lines.pop()
        for line in lines:
            if ", elapsed " in line:
                print("    " + line.strip(), flush=True)

    def flush(self) -> None:
        sys.stdout.flush()


def _check_kernel(kernel: str) -> None:
    """Raise ValueError naming the installed kernels when ``kernel`` is not one of them."""
    from jupyter_client.kernelspec import KernelSpecManager

    installed = sorted(KernelSpecManager().find_kernel_specs())
    if kernel not in installed:
        raise ValueError(f"Jupyter kernel {kernel!r} is not installed; run `make setup` (it registers "
                         f"'dpdl-replication') or pass --kernel with one of {installed}")


@contextmanager
def _kernel_environment(profile: str):
    """The environment the notebooks' kernels inherit: the profile whose folder their outputs
    go to, and progress as log lines (a widget bar would be stored in the executed notebook)
    unless ``$DPDL_PROGRESS`` says otherwise; at the ``paper`` profile, full data required
    (the paper's scale on a subset would be mislabelled evidence) unless ``$DPDL_REQUIRE_FULL_DATA``
    is already set (``make figures PROFILE=paper ALLOW_SUBSET=1`` sets it to 0)."""
    from ..sim.data import FULL_DATA_ENV
    from ..sim.progress import PROGRESS_ENV
    from .plotting import PROFILE_ENV

    saved = {k: os.environ.get(k) for k in (PROFILE_ENV, PROGRESS_ENV, FULL_DATA_ENV)}
    os.environ[PROFILE_ENV] = profile
    os.environ.setdefault(PROGRESS_ENV, "log")
    if profile == "paper":
        os.environ.setdefault(FULL_DATA_ENV, "1")
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def set_aside_stale(notebook: Path, figures: Path, since: float) -> list[Path]:
    """Move the outputs of ``notebook`` in ``figures`` not written since ``since`` (a time
    stamp) to ``figures/stale/``, where the report does not look; return their new paths.

    An output belongs to the notebook :func:`dpdl_core.verdicts.site.attribute` names for it."""
    from .site import attribute

    sources = {f: sorted((notebook.parents[1] / f).glob("*.ipynb")) for f in notebook_folders(notebook.parents[1])}
    moved = []
    for path in sorted(figures.glob("*.*")):
        if (path.is_file() and path.stat().st_mtime < since
                and attribute(path.stem, sources) == (notebook.parent.name, notebook.stem)):
            (figures / "stale").mkdir(exist_ok=True)
            moved.append(Path(shutil.move(path, figures / "stale" / path.name)))
    return moved


# What a notebook's cell raises when Ctrl-C reached its kernel (the runner's, after checkpointing).
INTERRUPT_NAMES = ("KeyboardInterrupt", "RunInterrupted")


def _kernel_manager(log: Path):
    """The kernel manager class papermill starts a notebook's kernel with: the kernel process's
    own stderr (its log, and its tracebacks when Ctrl-C stops it mid-message) goes to ``log``,
    not to the terminal; what the cells print stays in the executed notebook."""
    from jupyter_client.manager import AsyncKernelManager

    class LoggedKernelManager(AsyncKernelManager):
        async def _async_launch_kernel(self, kernel_cmd, **kw):
            with open(log, "ab") as stream:  # the kernel holds its own copy of the descriptor
                kw["stderr"] = stream
                return await super()._async_launch_kernel(kernel_cmd, **kw)

    return LoggedKernelManager


class _CtrlC(logging.Filter):
    """Ctrl-C while papermill runs a kernel: noted (``seen``), raised as ``KeyboardInterrupt``
    as usual, and from then on papermill's and asyncio's log records dropped (the kernel
    that papermill shuts down "died while waiting", and its pending cell's task is never
    awaited): the user has asked to stop, and :func:`_interrupted` says what that left."""

    LOGGERS = ("papermill", "asyncio")

    def __init__(self):
        super().__init__()
        self.seen = False

    def filter(self, record) -> bool:
        return not self.seen

    def __call__(self, signum, frame):
        self.seen = True
        raise KeyboardInterrupt

    @contextmanager
    def installed(self):
        import signal
        import threading

        main = threading.current_thread() is threading.main_thread()
        previous = signal.signal(signal.SIGINT, self) if main else None
        for name in self.LOGGERS:
            logging.getLogger(name).addFilter(self)
        try:
            yield self
        finally:
            if main:
                signal.signal(signal.SIGINT, previous)
            if not self.seen:  # else kept: asyncio reports the unawaited task when it is collected
                for name in self.LOGGERS:
                    logging.getLogger(name).removeFilter(self)


def _interrupted(notebooks: list[Path], k: int, profile: str, papers: list[str] | None, elapsed: float) -> str:
    """One paragraph for Ctrl-C in notebook ``k`` (1-based): where, what is kept, how to go on."""
    from ..sim.progress import format_seconds

    left = notebooks[k - 1:]
    folders = sorted({nb.parent.name for nb in left})
    every = notebook_folders(notebooks[0].parents[1])
    paper = f" --paper {' '.join(folders)}" if papers or folders != every else ""
    nb = notebooks[k - 1]
    return (f"interrupted in {nb.parent.name}/{nb.name} ({k}/{len(notebooks)}, profile {profile}) after "
            f"{format_seconds(elapsed)}. Stored runs are kept and a run cut short resumes from its last checkpoint. "
            f"To go on, run the same command again, or only the notebooks not finished: python -m dpdl_core figures "
            f"--profile {profile}{paper} --only {' '.join(dict.fromkeys(n.stem for n in left))}")


# A cell's write error that every later notebook would meet too: [Errno N] text: 'path'.
_STORAGE_RE = re.compile(r"\[Errno (28|30|122)\] ([^:\n]+): '([^'\n]+)'")


def _stop_on_full_disk(exc, name: str) -> None:
    """Stop ``make figures`` at a notebook whose cell could not write (a full disk, a read-only
    file system, a quota; or a run that could not store its result): the other notebooks would
    fail the same way. Raises OSError (the path and errno of the cell's error) or ValueError (a
    run kept in its checkpoint: the runner's message, which says what to free); returns otherwise."""
    if exc.ename == "ResultNotSaved":
        raise ValueError(f"{exc.evalue} (in notebook {name}; the notebooks after it were not run)")
    match = _STORAGE_RE.search(str(exc.evalue))
    if match:
        code, text, path = match.groups()
        raise OSError(int(code), text, path)


def _failure_lines(exc, executed: Path) -> list[str]:
    """A failed cell in a few lines: where, the error's last lines (they say what to fix), where the rest is."""
    text = f"{exc.ename}: {exc.evalue}".strip().splitlines()
    shown = text[-ERROR_LINES:]
    return [f"  cell {exc.exec_count}: " + shown[0], *("  " + ln for ln in shown[1:]),
            f"  the whole traceback: {executed}"]


def _check_environment() -> None:
    """Read every environment variable the notebooks' sweeps read, so that a typo is one error
    here (the mirror, executor, workers, stack size) rather than a failure in each notebook."""
    from ..runs.executors import LocalExecutor, get_executor
    from ..runs.stacking import max_stack
    from ..sim.data.acquisition import mirror_dir

    mirror_dir()
    get_executor()
    LocalExecutor().pool(1)
    max_stack()


# The notebooks that render the committed paper-scale studies, computing nothing.
COMMITTED_NOTEBOOKS = ("study_paper_scale",)
# Wall seconds of a notebook besides the runs it sweeps: kernel start, imports, data, drawing.
# NOTEBOOK_START_S: the DPDL notebooks at smoke that compute in place or sweep runs of a few
# rounds took 17-24 s each (2 cores, one torch thread, beside other jobs; 2026-11-28).
# COMMITTED_NOTEBOOK_S: a study notebook reading and drawing a paper-scale store took 27-46 s,
# the four 2 min 31 s (`make figures`, docs/results_log.md, 2026-11-28).
NOTEBOOK_START_S = 20.0
COMMITTED_NOTEBOOK_S = 35.0


def execute_notebooks(profile: str, kernel: str, papers: list[str] | None = None, only: list[str] | None = None,
                      out_dir: Path | None = None, notebook_dir: Path | None = None) -> FiguresReport:
    """Run the notebooks of ``papers`` (default all) with ``profile`` injected, printing
    ``[k/n] folder/name`` with the elapsed time and an ETA before each: the larger of the
    estimate of the notebooks' start-up and the runs they still have to compute
    (:func:`_notebook_seconds`) less the time elapsed, and the mean time per notebook so far.

    Raises
    ------
    ValueError
        For an unknown profile, paper or kernel, a name of ``only`` that is no notebook of
        ``papers``, or a bad value of an environment variable the notebooks read (checked
        here, before the first notebook, not in every kernel in turn).
    """
    from ..runs.profiles import load_profile

    load_profile(profile)  # fail early on a bad name
    candidates = notebook_paths(notebook_dir, papers=papers)
    names = sorted({nb.stem for nb in candidates})
    unknown = sorted(set(only or ()) - set(names))
    if unknown:
        raise ValueError(f"--only {' '.join(unknown)} matches no notebook of {papers or 'any paper'}; the names "
                         f"(without .ipynb) are: {names}")
    notebooks = [nb for nb in candidates if not only or nb.stem in only]
    _check_kernel(kernel)
    _check_environment()
    # Imported once the arguments are known to be good: papermill and matplotlib take seconds.
    import papermill as pm
    from papermill.exceptions import PapermillExecutionError

    from ..sim.progress import format_seconds
    from .plotting import figures_dir
    out_dir = out_dir or ROOT / "build" / "notebooks" / profile
    report = FiguresReport(figures=figures_dir(profile))
    folders = sorted({nb.parent.name for nb in notebooks})
    planned = _notebook_seconds(notebooks, profile, folders, only)
    if planned:
        which = "these notebooks" if only else f"the notebooks of {', '.join(folders)}"
        what = ("rendering committed runs" if only and set(only) <= set(COMMITTED_NOTEBOOKS) else
                f"their start-up and the runs not yet stored: python -m dpdl_core plan --profile {profile}")
        print(f"[figures] plan: {which} take about {format_seconds(planned)} on this machine ({what}; an estimate, "
              "see docs/usage.md)", flush=True)
    started = time.perf_counter()
    with _kernel_environment(profile):
        for k, nb in enumerate(notebooks, 1):
            name = f"{nb.parent.name}/{nb.name}"
            elapsed = time.perf_counter() - started
            by_mean = elapsed / (k - 1) * (len(notebooks) - k + 1) if k > 1 else 0.0
            by_plan = max(0.0, planned - elapsed)
            eta = f", ETA {format_seconds(max(by_mean, by_plan))}" if k > 1 or planned else ""
            print(f"[{k}/{len(notebooks)}] {name} (profile {profile}), elapsed {format_seconds(elapsed)}{eta}",
                  flush=True)
            executed = out_dir / nb.parent.name / nb.name
            executed.parent.mkdir(parents=True, exist_ok=True)
            t0, stamp = time.perf_counter(), time.time()
            ctrl_c = _CtrlC()
            try:
                with ctrl_c.installed():
                    pm.execute_notebook(str(nb), str(executed), parameters={"profile": profile}, kernel_name=kernel,
                                        cwd=str(nb.parent), progress_bar=False, extra_arguments=KERNEL_ARGUMENTS,
                                        stderr_file=_ProgressRelay(),
                                        kernel_manager_class=_kernel_manager(executed.with_suffix(".kernel.log")))
            except BaseException as exc:
                # Ctrl-C: in this process, in the kernel first (its cell raised it), or seen here while
                # papermill was shutting the kernel down (which then raises something else).
                named = isinstance(exc, PapermillExecutionError) and exc.ename in INTERRUPT_NAMES
                if isinstance(exc, KeyboardInterrupt) or named or ctrl_c.seen:
                    raise KeyboardInterrupt(_interrupted(notebooks, k, profile, papers,
                                                         time.perf_counter() - started)) from None
                if not isinstance(exc, PapermillExecutionError):
                    raise
                _stop_on_full_disk(exc, name)
                report.failed.append(name)
                stale = set_aside_stale(nb, report.figures, stamp)
                lines = _failure_lines(exc, executed)
                if stale:
                    lines.append(f"  {len(stale)} earlier output(s) of it moved to {report.figures / 'stale'}")
                print(f"[{k}/{len(notebooks)}] {name} FAILED after {format_seconds(time.perf_counter() - t0)}:",
                      *lines, sep="\n", flush=True)
            else:
                print(f"[{k}/{len(notebooks)}] {name} done in {format_seconds(time.perf_counter() - t0)}", flush=True)
            report.timings.append((name, time.perf_counter() - t0))
    return report


def _notebook_seconds(notebooks: list[Path], profile: str, folders: list[str], only: list[str] | None) -> float:
    """Wall seconds the ``notebooks`` are expected to take: each one's start-up (a study
    notebook, which renders a committed store at every profile, its whole render) and the runs
    they sweep that are not stored (:func:`_planned_seconds`)."""
    start = sum(COMMITTED_NOTEBOOK_S if nb.stem in COMMITTED_NOTEBOOKS else NOTEBOOK_START_S for nb in notebooks)
    if only and set(only) <= set(COMMITTED_NOTEBOOKS):
        return start
    return start + (_planned_seconds(profile, folders, notebooks if only else None) or 0.0)


def _notebook_claims(stem: str, group: str) -> bool:
    """Whether notebook ``stem`` sweeps the runs of the plan's group ``group``: a group named
    after a notebook's key (``fig02``, ``tab01``) belongs to it, ``figures`` to every ``fig*``
    notebook and ``tables`` to every ``tab*`` one."""
    return stem.startswith(group) or (group, stem[:3]) in (("figures", "fig"), ("tables", "tab"))


def _planned_seconds(profile: str, folders: list[str], notebooks: list[Path] | None = None) -> float | None:
    """Wall seconds ``plan`` estimates for the runs of ``folders``' papers that are not stored
    (CPU-hours over this machine's cores), or None when it has nothing to say (no paper
    among them, no run to compute, or the estimate fails: the ETA then comes from the
    notebooks' own times).

    ``notebooks``: only these notebooks run (``--only``), so only their runs count: per group,
    its runs to compute × the share of the group's notebooks that run (a notebook sweeping no
    group of the plan computes in place, or renders stored runs, and adds nothing)."""
    from ..papers import PAPERS

    papers = [f for f in folders if f in PAPERS]
    if not papers:
        return None
    try:
        from ..runs.plan import make_plan

        plan = make_plan(profile, papers=papers)
        if notebooks is None:
            hours = plan.total.cpu_hours_missing
        else:
            hours = 0.0
            for paper in papers:
                every = [nb.stem for nb in sorted((notebooks[0].parents[1] / paper).glob("*.ipynb"))]
                chosen = {nb.stem for nb in notebooks if nb.parent.name == paper}
                if chosen >= set(every):
                    hours += next(g.cpu_hours_missing for g in plan.groups if g.paper == paper and g.name == "all")
                    continue
                for g in plan.groups:
                    owners = [s for s in every if _notebook_claims(s, g.name)] if g.paper == paper else []
                    if g.name != "all" and owners:
                        hours += g.cpu_hours_missing * len(chosen & set(owners)) / len(owners)
    except Exception:  # an estimate only: never a reason to stop make figures
        return None
    return hours * 3600 / max(1, os.cpu_count() or 1) if hours > 0 else None


def build_report(profile: str, out: Path | None = None, figures: Path | None = None) -> Path:
    """Build the report site of ``profile`` (see :mod:`dpdl_core.verdicts.site`) from
    ``<figures>/<profile>/``; return its ``index.html``.

    Parameters
    ----------
    out : site folder (default ``build/report``), replaced by every build
    figures : folder of one subfolder of outputs per profile (default
        :func:`dpdl_core.verdicts.plotting.figures_root`)

    Raises
    ------
    FileNotFoundError
        When nothing has been executed at ``profile`` (run ``make figures PROFILE=...`` first).
    """
    from .plotting import figures_root
    from .site import build_site

    return build_site(profile, (figures or figures_root()) / profile, ROOT / "build" / "notebooks" / profile,
                      ROOT / "notebooks", out or ROOT / "build" / "report")
