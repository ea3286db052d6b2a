"""Command line: ``python -m dpdl_core {run,figures,report,summary,plan,study,answer,list,results} --help``
(installed as the ``dpdl`` command too).

Every module beyond the standard library is imported inside the command that needs it, so
``--help`` and argument errors answer at once (torch alone takes seconds to import).

Errors: a user error (bad config, missing data, a folder that cannot be written, an
unknown name; a full disk or a read-only file system, naming the file) prints one ``error: ...``
line saying what to do and exits with 2; Ctrl-C
exits with 130 saying how to resume; anything else prints one line and exits with 1, as does a
`study run` that computed nothing because another worker holds every run left. An argument a
command does not take shows that command's usage (and ``--paper`` for a bare paper name), an
option it does not read is refused, and an empty name or path (an unset shell variable) is an
error rather than "the default"; a reader that stops early (``| head``) ends the command quietly
with 141.
``--debug`` shows the traceback instead.
"""
from __future__ import annotations

import argparse
import errno
import json
import math
import os
import sys
from pathlib import Path

__all__ = ["UserError", "main"]

PROFILE_CHOICES = ["smoke", "cpu", "paper"]
EXECUTOR_CHOICES = ["local", "ray"]  # executors.EXECUTORS, not imported here: --help answers before torch
EXECUTOR_ENV = "DPDL_EXECUTOR"
LIST_KINDS = ["fields", "algorithms", "datasets", "topologies"]
LISTING_HINT = ("Fields, algorithms, datasets and topologies: python -m dpdl_core list "
                "fields|algorithms|datasets|topologies")


# The write errors that are the machine's state, not a bug: the folder to free or change is named.
_STORAGE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG})


class UserError(Exception):
    """A mistake of the caller, reported as one line and exit code 2."""


def _user_error_types() -> tuple[type, ...]:
    """The exceptions that are the caller's to fix. ``ValueError`` covers the config, data,
    profile and name checks (each message names the allowed values)."""
    types: list[type] = [UserError, ValueError, FileNotFoundError, PermissionError, NotADirectoryError]
    # Only modules a command already imported can have raised their errors.
    for module, name in (("dpdl_core.sim.data.acquisition", "DataUnavailableError"),
                         ("dpdl_core.runs.studies", "SubsetDataError"),
                         ("dpdl_core.runs.runner", "ResultNotSaved"),
                         ("jupyter_client.kernelspec", "NoSuchKernel")):
        if module in sys.modules:
            types.append(getattr(sys.modules[module], name))
    return tuple(types)


def _finite(value):
    """``value`` with every non-finite float replaced by ``None`` (JSON ``null``, not ``Infinity``)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def _print_json(value) -> None:
    print(json.dumps(_finite(value), indent=2, allow_nan=False))


def _results_store(path: str | None, *, create: bool = True, require: bool = True, read_only: bool = False):
    """The results store at ``path`` (default ``$DPDL_RESULTS_DIR`` or ``data/results``),
    checked to be a folder this process can write (``create``), or one that exists
    (``require``; else a missing folder reads as an empty store); ``read_only``: opened so
    that reading it changes nothing (:class:`~dpdl_core.runs.results.ResultStore`)."""
    from .runs.results import RESULTS_ENV, ResultStore, default_results_dir

    root = Path(path) if path else default_results_dir()
    origin = ("--results" if path
              else f"${RESULTS_ENV}" if os.environ.get(RESULTS_ENV) else "the default results folder")
    fix = "pass --results DIR or set $DPDL_RESULTS_DIR to a folder you can write"
    if root.exists() and not root.is_dir():
        raise UserError(f"results folder {root} ({origin}) is a file, not a folder; {fix}")
    if not root.exists():
        if not create and not require:
            return ResultStore(root)
        if not create:
            raise UserError(f"results folder {root} ({origin}) does not exist; run something first or {fix}")
        try:
            root.mkdir(parents=True)
        except OSError as exc:
            raise UserError(f"results folder {root} ({origin}) cannot be created ({exc.strerror}); {fix}") from None
    if create:
        import tempfile

        try:  # a real write: os.access says yes to root on a read-only file system
            tempfile.TemporaryFile(dir=root).close()
        except OSError as exc:
            raise UserError(f"results folder {root} ({origin}) is read-only ({exc.strerror}); {fix}") from None
    return ResultStore(root, read_only=read_only)


def _cmd_run(args) -> int:
    from .runs.config import ExperimentConfig, precheck

    precheck(args.config, args.set)  # a typo or a bad number answers before torch loads
    cfg = ExperimentConfig.from_yaml(args.config) if args.config else ExperimentConfig()
    cfg = cfg.with_overrides(args.set)
    if args.print_config:
        print(cfg.to_yaml(), end="")
        return 0
    if cfg.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise UserError("device=cuda but torch sees no CUDA GPU here; use --set device=cpu, or device=auto "
                            "(the GPU when there is one)")
    from .runs.runner import run

    store = _results_store(args.results)
    result = run(cfg, store=store, force=args.force)
    curves = result.curves()
    _print_json({
        "hash": result.hash,
        "cached": result.cached,
        "rounds": int(curves.index.max()),
        "diverged": bool(result.meta.get("diverged", False)),
        "final_train_loss_mean": float(curves["train_loss_mean"].dropna().iloc[-1]),
        "final_avg_test_acc": result.final("avg_test_acc"),
        "sigma_mean": result.meta.get("sigma_mean"),
        "epsilon_rdp_max": result.meta.get("epsilon_rdp_max"),
        "dataset": result.meta.get("dataset_label"),
        "wall_seconds": round(result.meta.get("wall_seconds", 0.0), 1),
        "result_file": str(store.path(result.hash)),
    })
    return 0


def _papers(values: list[str] | None) -> list[str] | None:
    """The papers of ``--paper``, given with spaces or commas (``dpdl pdsl``, ``dpdl,pdsl``, as
    `make`'s ``PAPER=``); ``None`` when the option is not given. An option given with no name
    (``--paper ""``, ``--paper ,``: an unset shell variable) is an error, not "every paper"."""
    if values is None:
        return None
    names = [p.strip() for item in values for p in item.split(",") if p.strip()]
    if not names:
        from .papers import PAPERS

        raise UserError(f"--paper {' '.join(values)!r} names no paper; name one or more of {list(PAPERS)}, or leave "
                        "--paper out for every paper")
    return names


def _cmd_figures(args) -> int:
    from .sim.progress import format_seconds
    from .verdicts.pipeline import COMMITTED_NOTEBOOKS, execute_notebooks

    only = None if args.only is None else [name.strip() for name in args.only if name.strip()]
    if only == []:
        raise UserError("--only names no notebook; name one or more (without .ipynb, e.g. --only "
                        "fig01_mnist_bipartite), or leave --only out for every notebook")
    if args.committed:
        if only is not None or args.profile is not None:
            raise UserError("--committed renders the committed paper-scale studies (their notebooks "
                            f"{', '.join(COMMITTED_NOTEBOOKS)}, profile paper); drop --only and --profile, or drop "
                            "--committed to compute at a profile")
        print("[figures] the paper-scale answer from the committed runs (results/<paper>/), computing nothing; "
              "to recompute at a reduced scale: make figures PROFILE=cpu (or smoke)", flush=True)
        args.profile, only = "paper", list(COMMITTED_NOTEBOOKS)
    args.profile = args.profile or "cpu"
    papers = _papers(args.paper)
    if args.committed and papers:
        from .runs.studies import study_papers

        papers = [p for p in papers if p in study_papers()] or papers
    report = execute_notebooks(args.profile, args.kernel, papers=papers, only=only)
    total = sum(t for _, t in report.timings)
    print(f"[figures] {len(report.timings)} notebooks, profile {args.profile}, {format_seconds(total)} in total; "
          f"outputs in {report.figures}")
    if report.failed:
        print(f"error: {len(report.failed)} notebook(s) failed: {', '.join(report.failed)} (see the messages "
              f"above; their earlier outputs were moved to {report.figures / 'stale'})", file=sys.stderr)
        return 1
    return 0


def _cmd_report(args) -> int:
    from .verdicts.pipeline import build_report

    if args.figures is not None and not args.figures.is_dir():
        raise UserError(f"--figures {args.figures} is not a folder; pass the folder `make figures` writes "
                        f"(default figures/, one subfolder per profile), or run `make figures PROFILE={args.profile}` "
                        f"first")
    print(build_report(args.profile, out=args.out, figures=args.figures))
    return 0


def _cmd_summary(args) -> int:
    from . import papers
    from .verdicts.plotting import PROFILE_ENV

    os.environ[PROFILE_ENV] = args.profile  # the summary is one of this profile's outputs
    texts, missing = [], []
    for name in papers.PAPERS:  # the papers with a summary_markdown hook (the paper contract)
        hook = getattr(papers.get_paper(name), "summary_markdown", None)
        try:
            texts += [hook(args.profile)] if hook is not None else []
        except FileNotFoundError as exc:  # nothing of that paper's stored yet
            missing.append(str(exc))
    if not texts:
        raise UserError("; ".join(missing) or "no paper has a summary")
    print("\n".join(texts), end="")
    return 0


def _cmd_plan(args) -> int:
    from .runs.plan import Benchmark, format_plan, make_plan

    if args.study:
        _only_for(args, ("profile", "executor", "results", "benchmark"), "`plan` without --study",
                  "`plan --study` lists every run of the papers' studies")
        from .runs.studies import describe_runs, load_study, study_papers

        print("\n\n".join(describe_runs(load_study(p)) for p in _papers(args.paper) or study_papers()))
        return 0
    executor = args.executor or os.environ.get(EXECUTOR_ENV) or "local"
    if executor not in EXECUTOR_CHOICES:
        raise UserError(f"${EXECUTOR_ENV}={executor!r} is not an executor; allowed values: {EXECUTOR_CHOICES} "
                        "(or pass --executor)")
    if args.benchmark and not Path(args.benchmark).exists():  # the default's absence means "use the docs' table"
        raise UserError(f"--benchmark {args.benchmark} does not exist; pass a file written by "
                        "`benchmarks/bench_engine.py --out FILE`, or leave --benchmark out")
    store = _results_store(args.results, create=False, require=False) if args.results else None
    if store is not None and not store.root.exists():
        print(f"note: --results {store.root} does not exist yet, so every run counts as to run", file=sys.stderr)
    plan = make_plan(args.profile or "cpu", papers=_papers(args.paper), store=store,
                     benchmark=Benchmark.load(args.benchmark))
    print(format_plan(plan, executor=executor))
    return 0


def _only_for(args, names: tuple[str, ...], where: str, instead: str) -> None:
    """Refuse the options of ``names`` that were given (not None or False): they only apply
    to ``where``, and saying so beats ignoring them."""
    given = [f"--{name.replace('_', '-')}" for name in names if getattr(args, name) not in (None, False)]
    if given:
        verb = "applies" if len(given) == 1 else "apply"
        raise UserError(f"{', '.join(given)} only {verb} to {where}; {instead}")


def _cmd_study(args) -> int:
    from .runs.studies import describe_runs, finish_line, load_study, run_study, runs_left, study_papers

    papers = _papers(args.paper) or study_papers()
    studies = sorted((load_study(p) for p in papers), key=lambda s: s.order)
    if args.action == "plan":
        _only_for(args, _STUDY_RUN_ONLY, "`study run`", "`study plan` lists every run of the papers named with --paper")
        print("\n\n".join(describe_runs(s) for s in studies))
        return 0
    import torch

    torch.set_num_threads(args.threads or 1)
    if args.device == "cuda":
        if not torch.cuda.is_available():
            raise UserError("--device cuda but torch sees no CUDA GPU here; leave --device out to run on the CPU")
    computed = run_study(studies, allow_subset=args.allow_subset, keys=args.key or None, max_runs=args.max_runs,
                         device=args.device, log=lambda line: print(line, flush=True))
    left = runs_left(studies, keys=args.key)
    print(finish_line(studies, computed, left, keys=args.key, max_runs=args.max_runs))
    return 1 if computed == 0 and left else 0  # it did nothing: another worker holds every run left


def _cmd_answer(args) -> int:
    if args.check:
        _only_for(args, ("allow_incomplete",), "writing the answer", "`answer --check` writes nothing")
    from .verdicts.answer import answer_rows, missing_runs, shown, write_answer

    rows = answer_rows()
    changed = write_answer(check=args.check, allow_incomplete=args.allow_incomplete, rows=rows)
    names = ", ".join(shown(p) for p in changed)
    if args.check:
        if changed:
            print(f"error: {names} differ from what the committed studies give; run `python -m dpdl_core answer`",
                  file=sys.stderr)
            return 1
        print("[answer] README and docs/answer.md match the committed studies")
        return 0
    print(f"[answer] wrote {names}" if changed else "[answer] README and docs/answer.md were already up to date")
    gap = missing_runs(rows[1])
    if gap:
        print(f"note: the answer leaves out what missing runs decide: {gap}", file=sys.stderr)
    return 0


def _field_types(doc: str) -> dict[str, str]:
    """``name -> type`` from the ``Attributes`` section of a numpy-style docstring."""
    types = {}
    for line in doc.splitlines():
        names, sep, kind = line.strip().partition(" : ")
        if sep and line.startswith("    ") and not line.startswith("        "):
            types.update({n.strip(): kind.strip() for n in names.split(",")})
    return types


def _cmd_list(args) -> int:
    import dataclasses

    if args.kind == "fields":
        from .runs.config import ExperimentConfig

        types = _field_types(ExperimentConfig.__doc__ or "")
        rows = []
        for f in dataclasses.fields(ExperimentConfig):
            default = "{...}" if f.default is dataclasses.MISSING else repr(f.default)
            rows.append((f.name, default, types.get(f.name, "")))
        width = max(len(r[0]) for r in rows)
        print(f"{'field':<{width}}  default / type  (set one with --set FIELD=VALUE; algo.NAME=VALUE for options)")
        for name, default, kind in rows:
            print(f"{name:<{width}}  {default}" + (f"  ({kind})" if kind else ""))
    elif args.kind == "algorithms":
        from .sim.algorithms import known_algorithms

        for name, cls in sorted(known_algorithms().items()):
            options = ", ".join(f.name for f in dataclasses.fields(cls.Params))
            print(f"{name:<12} {cls.display_name:<12} options (algo.NAME): {options or 'none'}")
    elif args.kind == "datasets":
        from .sim.data import DATASETS, datasets

        for name in datasets():  # the papers' datasets too (it loads them)
            spec = DATASETS[name]
            print(f"{name:<12} {spec.pretty}")
    else:
        from .sim.topology import topologies

        print("\n".join(topologies()))
    return 0


def _find_hash(store, prefix: str, results: str | None) -> str:
    """The stored run whose hash starts with ``prefix`` (exactly one); else an error saying
    how many match, or that the run is not finished (its checkpoint), and how to list them
    (``results``: the ``--results`` given, kept in that hint)."""
    found = [h for h in store.hashes() if h.startswith(prefix)]
    if len(found) == 1:
        return found[0]
    unfinished = sorted(p.stem for p in store.checkpoint_dir.glob("*.pt") if p.stem.startswith(prefix))
    if not found and unfinished:
        from .runs.slots import RunSlot

        saved, problem = RunSlot(store, unfinished[0]).read_checkpoint()
        state = f"has rounds 1-{saved['round']}" if saved else f"cannot be resumed ({problem})"
        raise UserError(f"run {unfinished[0]} is not finished: its checkpoint in {store.checkpoint_dir} {state}; "
                        "the command that started the run resumes it (a study's: `python -m dpdl_core study run`)")
    what = "no stored run" if not found else f"{len(found)} stored runs ({', '.join(found[:5])})"
    listing = "python -m dpdl_core results list" + (f" --results {results}" if results else "")
    raise UserError(f"{what} in {store.root} match {prefix!r}; `{listing}` shows the hashes")


def _final_metrics(history) -> dict:
    """The last value of every network-wide metric of a history."""
    net = history[history["agent"] == -1].sort_values("round")
    return {m: float(g["value"].iloc[-1]) for m, g in net.groupby("metric")}


def _results_table(store):
    """One row per stored run: hash, file, flattened config, scalar metadata and final metrics."""
    import pandas as pd

    index = store.configs()
    finals = []
    for h in index["hash"]:
        finals.append({f"final.{k}": v for k, v in _final_metrics(store.load_run(h)[1]).items()})
    table = pd.concat([index, pd.DataFrame(finals, index=index.index)], axis=1)
    table.insert(1, "file", [str(store.path(h)) for h in index["hash"]])
    return table


def _cmd_results(args) -> int:
    if args.action != "show" and args.hash is not None:
        raise UserError(f"results {args.action} takes no hash (got {args.hash!r}); `results show {args.hash}` shows "
                        "one run")
    if args.action != "export":
        _only_for(args, ("format", "out"), "`results export`", f"`results {args.action}` prints to the terminal")
    if args.out is not None:
        _check_out(args.out)
    # Reading must not move a damaged file (it may be a committed one): name it instead.
    store = _results_store(args.results, create=False, read_only=True)
    for path, why in store.damaged().items():
        print(f"note: {path} is damaged ({why}); left in place and left out (restore it, e.g. "
              f"`git checkout -- {path}` for a committed run, or delete it so that its run is computed again)",
              file=sys.stderr)
    if args.action == "show":
        if not args.hash:
            raise UserError("results show needs a hash (or its first characters): "
                            "python -m dpdl_core results show HASH")
        h = _find_hash(store, args.hash, args.results)
        header, history = store.load_run(h)
        _print_json({"hash": h, "file": str(store.path(h)), "config": header["config"],
                     "final": _final_metrics(history), "meta": header["meta"]})
        return 0
    if not store.hashes():
        raise UserError(f"no runs are stored in {store.root}; `python -m dpdl_core run` stores one")
    if args.action == "list":
        cols = ["hash", "dataset", "algorithm", "topology", "n_agents", "epsilon", "rounds", "seed", "meta.diverged"]
        index = store.configs()
        print(index[[c for c in cols if c in index.columns]].to_string(index=False))
        print(f"{len(index)} runs in {store.root}; details: python -m dpdl_core results show HASH", file=sys.stderr)
        return 0
    table = _results_table(store)
    if (args.format or "csv") == "csv":
        if args.out:
            table.to_csv(args.out, index=False)
        else:
            table.to_csv(sys.stdout, index=False)
    else:
        import importlib.util

        if importlib.util.find_spec("pyarrow") is None:
            raise UserError("--format parquet needs pyarrow, which is not installed; use --format csv, or "
                            "install pyarrow in this environment")
        if not args.out:
            raise UserError("--format parquet writes a file: pass --out FILE.parquet")
        table.to_parquet(args.out, index=False)
    if args.out:
        print(f"{len(table)} runs written to {args.out}", file=sys.stderr)
    return 0


def _check_out(out: Path) -> None:
    """Refuse an ``--out`` file that cannot be written, before any work: a folder, or a file
    in a folder that does not exist."""
    if out.is_dir():
        raise UserError(f"--out {out} is a folder; pass a file name in it, e.g. --out {out / 'runs.csv'}")
    if not out.parent.is_dir():
        raise UserError(f"--out {out}: the folder {out.parent} does not exist; create it or write elsewhere")


# The `study` options that only `study run` reads.
_STUDY_RUN_ONLY = ("key", "max_runs", "threads", "device", "allow_subset")


def _positive_int(text: str) -> int:
    """An argument that must be a whole number of at least 1 (argparse says which one is not)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of at least 1, got {text!r}")
    return value


def _nonempty(text: str) -> str:
    """A name or path that must not be empty (an unset shell variable would otherwise read as
    "not given" and fall back to a default)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("must not be empty")
    return text


def _nonempty_path(text: str) -> Path:
    return Path(_nonempty(text))


def _parser() -> argparse.ArgumentParser:
    debug = argparse.ArgumentParser(add_help=False)
    debug.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                       help="show the full traceback of an error")
    parser = argparse.ArgumentParser(
        prog="python -m dpdl_core", parents=[debug],
        description="Replication package: DPDL, PDSL, LEASGD and the straggler-resilient scheme. The same "
                    "commands are installed as `dpdl` (e.g. `dpdl run --help`).")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("run", parents=[debug], help="train one configuration (loaded from the results store if "
                       "already run)", epilog=LISTING_HINT + ". Ctrl-C stops after the current round; the same "
                       "command resumes.")
    p.add_argument("config", nargs="?", type=_nonempty, help="YAML config file (default: ExperimentConfig defaults)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a field, e.g. --set epsilon=1.0 --set algo.alpha=2 (repeatable)")
    p.add_argument("--results", type=_nonempty, help="results folder (default data/results or $DPDL_RESULTS_DIR)")
    p.add_argument("--force", action="store_true", help="recompute even if the results store has this run")
    p.add_argument("--print-config", action="store_true", help="print the resolved config as YAML and exit")
    p.set_defaults(func=_cmd_run, late_positional="config")

    p = sub.add_parser("figures", parents=[debug], help="execute the notebooks with papermill at a profile",
                       description="Execute the notebooks of every paper (or --paper) with papermill at a profile, "
                       "computing the runs they need; or, with --committed, render the paper-scale studies from the "
                       "committed runs in results/<paper>/ (a few minutes, computing nothing).")
    p.add_argument("--profile", choices=PROFILE_CHOICES, help="the scale to compute at (default cpu)")
    p.add_argument("--committed", action="store_true",
                   help="render every paper's committed paper-scale study (figures/paper/), computing nothing")
    p.add_argument("--kernel", default="dpdl-replication", type=_nonempty,
                   help="Jupyter kernel name (make setup registers it)")
    p.add_argument("--paper", nargs="+", help="paper folders of notebooks/ to run (default: all), e.g. dpdl pdsl "
                   "or dpdl,pdsl")
    p.add_argument("--only", nargs="+", help="notebook names (without .ipynb) to run")
    p.set_defaults(func=_cmd_figures)

    p = sub.add_parser("report", parents=[debug], help="static HTML site: every figure and table of a profile by "
                       "paper, and the executed notebooks", description="Build one offline site (index.html) with "
                       "every figure and table of the profile, grouped by paper, each with the data that produced "
                       "it, and the notebooks executed by `make figures` rendered to HTML.")
    p.add_argument("--profile", default="cpu", choices=PROFILE_CHOICES)
    p.add_argument("--out", type=_nonempty_path, help="site folder, replaced by every build (default build/report)")
    p.add_argument("--figures", type=_nonempty_path, help="folder holding one subfolder of figures and tables per "
                   "profile (default $DPDL_FIGURES_DIR or figures/)")
    p.set_defaults(func=_cmd_report)

    p = sub.add_parser("summary", parents=[debug],
                       help="each paper's reproduced-vs-paper summary of a profile's stored runs "
                            "(papers with a summary)")
    p.add_argument("--profile", default="cpu", choices=PROFILE_CHOICES)
    p.set_defaults(func=_cmd_summary)

    p = sub.add_parser(
        "plan", parents=[debug],
        help="count a profile's runs, those already stored and their estimated CPU-hours (runs nothing)",
        description="Before running a profile: per paper and notebook group, the runs its notebooks sweep, how many "
                    "the results store holds, and an estimate of their CPU-hours scaled from the engine benchmark "
                    "(benchmarks/results.json, else the table in docs/benchmarks.md).")
    p.add_argument("--profile", choices=PROFILE_CHOICES, help="the profile to plan (default cpu)")
    p.add_argument("--paper", nargs="+", help="papers to plan (default: all), e.g. dpdl pdsl or dpdl,pdsl")
    p.add_argument("--executor", choices=EXECUTOR_CHOICES,
                   help="how the sweep would run: local worker processes or a Ray cluster ($RAY_ADDRESS) "
                        f"(default ${EXECUTOR_ENV} or local)")
    p.add_argument("--results", type=_nonempty, help="results folder (default data/results or $DPDL_RESULTS_DIR)")
    p.add_argument("--benchmark", type=_nonempty, help="engine benchmark JSON (default benchmarks/results.json)")
    p.add_argument("--study", action="store_true", help="plan the paper-scale studies instead: each run, stored or "
                   "not, with its estimated and measured time (same as `study plan`)")
    p.set_defaults(func=_cmd_plan)

    p = sub.add_parser(
        "study", parents=[debug],
        help="paper-scale studies: plan (what is stored, what is left) or run (resumable) -> results/<paper>/",
        description="Each paper's study is the smallest set of runs at the paper's own scale that decides its claims "
                    "(dpdl_core/papers/<paper>/study.py). `run` computes what results/<paper>/ lacks, decisive runs "
                    "first, one at a time; stop it at any moment and run the same command again to resume. A run "
                    "another worker is computing is skipped; `run` exits 1 when that left it nothing to compute. "
                    "$DPDL_STUDIES_DIR moves the stores' root from results/ to another folder.")
    p.add_argument("action", choices=["plan", "run"])
    p.add_argument("--paper", nargs="+", help="papers (default: every paper with a study), e.g. dpdl pdsl or dpdl,pdsl")
    p.add_argument("--key", action="append", help="run only this study key (repeatable; see `study plan`)")
    p.add_argument("--max-runs", type=_positive_int, help="stop after computing this many runs")
    p.add_argument("--threads", type=_positive_int, help="torch threads (default 1: leaves a core free)")
    p.add_argument("--device", choices=["cuda"], help="run the training runs on the GPU (stored under their GPU "
                   "twin's config; CI replays them on the CPU to a tolerance)")
    p.add_argument("--allow-subset", action="store_true",
                   help="run on subset data (refused by default; captions then name the subset)")
    p.set_defaults(func=_cmd_study)

    p = sub.add_parser(
        "answer", parents=[debug], help="write the 'Does it replicate?' table (README, docs/answer.md) from the "
        "committed studies", description="Judge every claim the committed study stores (results/<paper>/) can "
        "decide and write the table between the README's answer markers and docs/answer.md; --check only compares. "
        "The stores are read from results/ ($DPDL_STUDIES_DIR moves that root) and never changed: a damaged or "
        "deleted run file is an error naming the command that restores it, and the answer is not written from "
        "stores holding fewer runs than the studies declare unless --allow-incomplete is given.")
    p.add_argument("--check", action="store_true", help="exit 1 if the files differ from what the stores give")
    p.add_argument("--allow-incomplete", action="store_true",
                   help="write even from stores that lack runs the studies declare (it says which)")
    p.set_defaults(func=_cmd_answer)

    p = sub.add_parser("list", parents=[debug], help="the config fields (with defaults), algorithms, datasets or "
                       "topologies `run --set` accepts")
    p.add_argument("kind", choices=LIST_KINDS)
    p.set_defaults(func=_cmd_list)

    p = sub.add_parser("results", parents=[debug], help="stored runs: list, show one, export all (CSV or Parquet)",
                       description="Read the results store back: `list` one line per run, `show HASH` (or its "
                                   "first characters) the config, final metrics and metadata, `export` one row per "
                                   "run (flattened config, metadata, final metrics).")
    p.add_argument("action", choices=["list", "show", "export"])
    p.add_argument("hash", nargs="?", help="run hash or its first characters (show)")
    p.add_argument("--results", type=_nonempty, help="results folder (default data/results or $DPDL_RESULTS_DIR)")
    p.add_argument("--format", choices=["csv", "parquet"], help="export format (default csv)")
    p.add_argument("--out", type=_nonempty_path, help="export file (default: CSV on stdout)")
    p.set_defaults(func=_cmd_results, late_positional="hash")
    for command in sub.choices.values():
        command.set_defaults(command_parser=command)
    parser.commands = list(sub.choices)
    return parser


def _take_late_positional(args: argparse.Namespace, extra: list[str]) -> list[str]:
    """``extra`` less the command's optional positional when it came after an option: argparse
    fills an optional positional (empty) together with the ones before it, so in
    ``results show --results DIR 04c7`` the hash would otherwise be "unrecognized"."""
    name = getattr(args, "late_positional", None)
    if name and getattr(args, name) is None and extra and not extra[0].startswith("-"):
        if not extra[0].strip():
            args.command_parser.error(f"argument {name}: must not be empty")
        setattr(args, name, extra[0])
        return extra[1:]
    return extra


def _reject_extra(args: argparse.Namespace, extra: list[str]) -> None:
    """Exit 2 on arguments the command does not take, showing that command's usage (not the
    top level's) and, for a bare paper name, the option that takes it."""
    message = f"unrecognized arguments: {' '.join(extra)}"
    if hasattr(args, "paper"):
        from .papers import PAPERS

        named = [token for token in extra if token and set(token.split(",")) <= set(PAPERS)]
        if named:
            message += f"; papers are named with --paper, e.g. --paper {' '.join(named)}"
    args.command_parser.error(message)


def main(argv: list[str] | None = None) -> int:
    """Run one command; return its exit code (0 done, 1 failed or nothing done, 2 user error, 130
    interrupted, 141 its output's reader closed early)."""
    parser = _parser()
    argv = sys.argv[1:] if argv is None else argv
    first = next((token for token in argv if token != "--debug"), "")
    if first.startswith("-") and first not in ("-h", "--help"):  # else argparse only says a command is missing
        parser.error(f"unrecognized arguments: {first}; a command comes first: {', '.join(parser.commands)} "
                     "(each with --help)")
    args, extra = parser.parse_known_args(argv)
    extra = _take_late_positional(args, extra)
    if extra:
        _reject_extra(args, extra)
    debug = getattr(args, "debug", False)
    try:
        return args.func(args)
    except KeyboardInterrupt as exc:
        if debug:
            raise
        message = str(exc) or "interrupted; run the same command again to resume from the last checkpoint"
        print(f"\n{message}", file=sys.stderr)
        return 130
    except BrokenPipeError:
        if debug:
            raise
        # The reader stopped early (`... | head`): not an error. Point stdout at /dev/null so
        # the interpreter's final flush does not fail too, and exit as a SIGPIPE-killed tool.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except Exception as exc:
        if debug:
            raise
        if isinstance(exc, _user_error_types()):
            print(f"error: {exc}", file=sys.stderr)
            return 2
        if isinstance(exc, OSError) and exc.errno in _STORAGE_ERRNOS:  # disk full, read-only, quota
            print(f"error: cannot write {exc.filename or 'a file'}: {exc.strerror}; free space there (or choose a "
                  "folder you can write) and run the same command again", file=sys.stderr)
            return 2
        print(f"error: {type(exc).__name__}: {exc} (an internal error; rerun with --debug for the traceback)",
              file=sys.stderr)
        return 1
