"""Stacked-runs benchmark: run-rounds per second of R runs trained as one stack against the
same runs trained one after the other, for R in {1, 4, 16, 64}.

Two measures per case, all variants in one process taking turns within each repetition
(minimum reported, so that load drift on a shared machine hits all of them alike):

- **rounds**: the training rounds alone (runs prepared beforehand): the engine's and the
  loop's throughput.
- **end to end**: :func:`dpdl_core.runs.runner.run_stack` with nothing stored (``save=False``):
  preparation (data split, σ calibration), the rounds and the final evaluation, as a sweep
  pays them.

The plain runs are timed on ``min(R, --solo-runs)`` runs and scaled: a plain run's cost does
not depend on R. Cases are DPDL's smoke and ``cpu`` profile sizes (MNIST LeNet, N = 10
bipartite) and the paper's (B = 216); runs in a stack differ in seed (and so in data split,
initial model, batches and noise). ``--device cuda`` runs everything on the GPU.
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch
from results_io import write_results
from timing import sync

__all__ = ["CASES", "main"]

CASES = {
    # DPDL's smoke profile (tables, MNIST): what CI's notebooks run.
    "smoke": dict(dataset="mnist", n_agents=10, topology="bipartite", batch_size=16, train_samples=1000,
                  eval_samples=200, epsilon=0.5, sigma_rule="authors_code"),
    # DPDL's cpu profile (tables, MNIST): `make figures`.
    "cpu": dict(dataset="mnist", n_agents=10, topology="bipartite", batch_size=64, eval_samples=2000, epsilon=0.5,
                sigma_rule="authors_code"),
    # The paper's setting (Table I, MNIST).
    "paper": dict(dataset="mnist", n_agents=10, topology="bipartite", batch_size=216, eval_samples=10000,
                  epsilon=0.5, sigma_rule="authors_code"),
}


def _configs(case: str, algorithm: str, rounds: int, R: int, device: str):
    from dpdl_core.runs.config import ExperimentConfig

    base = {**CASES[case], "algorithm": algorithm, "rounds": rounds, "eval_every": rounds, "device": device,
            "checkpoint_every": 0}
    return [ExperimentConfig.from_dict({**base, "seed": s}) for s in range(R)]


def _rounds_only(configs, device: str):
    """A callable that trains ``configs`` as one stack for their rounds (prepared once; the
    state restarts from x_0 each call, the random streams go on)."""
    from dpdl_core.runs.runner import prepare
    from dpdl_core.runs.stacking import build_stack
    from dpdl_core.sim.loop import training_rounds

    stack = build_stack([prepare(c) for c in configs])
    X0 = stack.initial_models()

    def go():
        state = stack.algorithm.init_state(X0)
        for _ in training_rounds(stack, state, 1, configs[0].rounds):
            pass
        sync(device)

    return go


def _end_to_end(configs, device: str):
    from dpdl_core.runs.runner import run_stack

    def go():
        run_stack(configs, save=False, progress=False)
        sync(device)

    return go


def _timed(fns: dict, repeats: int) -> dict:
    for fn in fns.values():
        fn()  # warm-up (data loading, first kernels)
    times = {k: [] for k in fns}
    for _ in range(repeats):
        for k, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - t0)
    return {k: min(v) for k, v in times.items()}


def bench_case(case: str, algorithm: str, stacks: list[int], rounds: int, repeats: int, solo_runs: int,
               device: str) -> list[dict]:
    """Rows ``{case, measure, R, seconds, run_rounds_per_s, speedup}`` for one case."""
    rows = []
    for measure, make in (("rounds", _rounds_only), ("end to end", _end_to_end)):
        n_solo = min(max(stacks), solo_runs)
        solo_cfgs = _configs(case, algorithm, rounds, n_solo, device)
        plain = [make([c], device) for c in solo_cfgs]
        fns = {"plain": lambda plain=plain: [fn() for fn in plain]}
        fns.update({R: make(_configs(case, algorithm, rounds, R, device), device) for R in stacks})
        times = _timed(fns, repeats)
        per_run_round = times["plain"] / (n_solo * rounds)
        for R in stacks:
            rate = R * rounds / times[R]
            rows.append(dict(case=case, algorithm=algorithm, measure=measure, R=R, rounds=rounds,
                             seconds=times[R], run_rounds_per_s=rate, plain_run_rounds_per_s=1 / per_run_round,
                             speedup=rate * per_run_round))
            print(f"{case:>5} {algorithm} {measure:>10} R={R:>3}: {rate:7.2f} run-rounds/s, plain "
                  f"{1 / per_run_round:6.2f}/s, {rows[-1]['speedup']:.2f}x", flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="benchmarks/bench_stacked.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", nargs="*", default=["smoke", "cpu"], choices=list(CASES), help="sizes to run")
    parser.add_argument("--algorithms", nargs="*", default=["dpdl"], help="stackable algorithms to run")
    parser.add_argument("--stacks", nargs="*", type=int, default=[1, 4, 16, 64], help="values of R")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per run")
    parser.add_argument("--repeats", type=int, default=2, help="timed repetitions, interleaved (minimum reported)")
    parser.add_argument("--solo-runs", type=int, default=4, help="plain runs timed (and scaled) per case")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's choice)")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu", help="where everything runs")
    parser.add_argument("--out", type=Path, default=None, help="write JSON results here")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda, but torch sees no CUDA device; run on the CPU (the default)")
    rows = []
    for case in args.cases:
        for algorithm in args.algorithms:
            rows += bench_case(case, algorithm, args.stacks, args.rounds, args.repeats, args.solo_runs, args.device)
    for row in rows:
        row["device"] = torch.cuda.get_device_name() if args.device == "cuda" else "cpu"
    write_results(args.out, rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
