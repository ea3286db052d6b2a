"""Command line: ``python -m dpdl_core {run,figures,report,summary,plan} --help``."""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

__all__ = ["main"]


def _cmd_run(args) -> int:
    from .config import ConfigError, ExperimentConfig
    from .data import DataFileError, DataUnavailableError
    from .results import ResultStore
    from .runner import run

    try:
        cfg = ExperimentConfig.from_yaml(args.config) if args.config else ExperimentConfig()
        cfg = cfg.with_overrides(args.set)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.print_config:
        print(cfg.to_yaml(), end="")
        return 0
    try:
        result = run(cfg, store=ResultStore(args.results) if args.results else None, force=args.force)
    except (DataUnavailableError, DataFileError) as exc:  # the data's fault, and the message says what to do
        print(f"error: {exc}", file=sys.stderr)
        return 2
    curves = result.curves()
    summary = {
        "hash": result.hash,
        "cached": result.cached,
        "rounds": int(curves.index.max()),
        "final_train_loss_mean": float(curves["train_loss_mean"].dropna().iloc[-1]),
        "final_avg_test_acc": result.final("avg_test_acc"),
        "sigma_mean": result.meta.get("sigma_mean"),
        "epsilon_rdp_max": result.meta.get("epsilon_rdp_max"),
        "dataset": result.meta.get("dataset_label"),
        "wall_seconds": round(result.meta.get("wall_seconds", 0.0), 1),
    }
    print(json.dumps(summary, indent=2))
    return 0


def _cmd_figures(args) -> int:
    from .pipeline import execute_notebooks

    try:
        timings = execute_notebooks(args.profile, args.kernel, papers=args.paper or None, only=args.only or None)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    total = sum(t for _, t in timings)
    print(f"[figures] {len(timings)} notebooks, profile {args.profile}, {total:.0f} s in total")
    return 0


def _cmd_report(args) -> int:
    from .pipeline import build_report

    try:
        print(build_report(args.profile, out=args.out, figures=args.figures))
    except (FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


def _cmd_summary(args) -> int:
    from .papers.dpdl.results import summary_markdown

    print(summary_markdown(args.profile), end="")
    return 0


def _cmd_plan(args) -> int:
    from .plan import Benchmark, format_plan, make_plan
    from .results import ResultStore

    try:
        store = ResultStore(args.results) if args.results else None
        plan = make_plan(args.profile, papers=args.paper or None, store=store, benchmark=Benchmark.load(args.benchmark))
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(format_plan(plan, executor=args.executor))
    return 0


def _cmd_study(args) -> int:
    from .config import ConfigError
    from .data import DataFileError, DataUnavailableError
    from .studies import SubsetDataError, describe_runs, load_study, run_study, study_papers

    papers = args.paper or study_papers()
    try:
        studies = [load_study(p) for p in papers]
        if args.action == "plan":
            print("\n\n".join(describe_runs(s) for s in studies))
            return 0
        if args.threads:
            import torch

            torch.set_num_threads(args.threads)
        computed = 0
        for s in studies:
            computed += run_study(s, allow_subset=args.allow_subset, keys=args.key or None, max_runs=args.max_runs,
                                  log=lambda line: print(line, flush=True))
    except (ConfigError, SubsetDataError, DataUnavailableError, DataFileError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"[study] {computed} runs computed; every run of {', '.join(papers)} is stored"
          if args.max_runs is None and not args.key else f"[study] {computed} runs computed")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dpdl_core", description="Replication package: DPDL, PDSL, LEASGD and the straggler-resilient scheme.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("run", help="train one configuration (loaded from the results store if already run)")
    p.add_argument("config", nargs="?", help="YAML config file (default: ExperimentConfig defaults)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a field, e.g. --set epsilon=1.0 --set algo.alpha=2 (repeatable)")
    p.add_argument("--results", help="results folder (default data/results or $DPDL_RESULTS_DIR)")
    p.add_argument("--force", action="store_true", help="recompute even if the results store has this run")
    p.add_argument("--print-config", action="store_true", help="print the resolved config as YAML and exit")
    p.set_defaults(func=_cmd_run)

    p = sub.add_parser("figures", help="execute the notebooks with papermill at a profile")
    p.add_argument("--profile", default="cpu", choices=["smoke", "cpu", "paper"])
    p.add_argument("--kernel", default="dpdl-replication", help="Jupyter kernel name (make setup registers it)")
    p.add_argument("--paper", nargs="*", help="paper folders of notebooks/ to run (default: all), e.g. dpdl pdsl")
    p.add_argument("--only", nargs="*", help="notebook names (without .ipynb) to run")
    p.set_defaults(func=_cmd_figures)

    p = sub.add_parser("report", help="static HTML site: every figure and table of a profile by paper, and the "
                       "executed notebooks", description="Build one offline site (index.html) with every figure and "
                       "table of the profile, grouped by paper, each with the data that produced it, and the notebooks "
                       "executed by `make figures` rendered to HTML.")
    p.add_argument("--profile", default="cpu", choices=["smoke", "cpu", "paper"])
    p.add_argument("--out", type=Path, help="site folder, replaced by every build (default build/report)")
    p.add_argument("--figures", type=Path, help="folder of the figures and tables (default $DPDL_FIGURES_DIR or figures/)")
    p.set_defaults(func=_cmd_report)

    p = sub.add_parser("summary", help="DPDL paper: reproduced-vs-paper accuracy summary of a profile's stored runs")
    p.add_argument("--profile", default="cpu", choices=["smoke", "cpu", "paper"])
    p.set_defaults(func=_cmd_summary)

    p = sub.add_parser(
        "plan", help="count a profile's runs, those already stored and their estimated CPU-hours (runs nothing)",
        description="Before running a profile: per paper and notebook group, the runs its notebooks sweep, how many "
                    "the results store holds, and an estimate of their CPU-hours scaled from the engine benchmark "
                    "(benchmarks/results.json, else the README's table).")
    p.add_argument("--profile", default="cpu", choices=["smoke", "cpu", "paper"])
    p.add_argument("--paper", nargs="*", help="papers to plan (default: all), e.g. dpdl pdsl")
    p.add_argument("--executor", choices=["local", "ray"], default=os.environ.get("DPDL_EXECUTOR", "local"),
                   help="how the sweep would run: local worker processes or a Ray cluster ($RAY_ADDRESS) "
                        "(default $DPDL_EXECUTOR or local)")
    p.add_argument("--results", help="results folder (default data/results or $DPDL_RESULTS_DIR)")
    p.add_argument("--benchmark", help="engine benchmark JSON (default benchmarks/results.json)")
    p.set_defaults(func=_cmd_plan)

    p = sub.add_parser(
        "study", help="paper-scale studies: plan (what is stored, what is left) or run (resumable) -> results/<paper>/",
        description="Each paper's study is the smallest set of runs at the paper's own scale that decides its claims "
                    "(dpdl_core/papers/<paper>/study.py). `run` computes what results/<paper>/ lacks, decisive runs "
                    "first, one at a time; stop it at any moment and run the same command again to resume.")
    p.add_argument("action", choices=["plan", "run"])
    p.add_argument("--paper", nargs="*", help="papers (default: every paper with a study)")
    p.add_argument("--key", action="append", help="run only this study key (repeatable; see `study plan`)")
    p.add_argument("--max-runs", type=int, help="stop after computing this many runs")
    p.add_argument("--threads", type=int, default=1, help="torch threads (default 1: leaves a core free)")
    p.add_argument("--allow-subset", action="store_true",
                   help="run on subset data (refused by default; captions then name the subset)")
    p.set_defaults(func=_cmd_study)

    args = parser.parse_args(argv)
    return args.func(args)
