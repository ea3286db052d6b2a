"""Engine benchmark: DPDL round time, engine vs a per-edge ``vmap(grad)`` loop vs the naive
per-sample ``loss.backward()`` loop, all measured in one process on the same inputs.

Timing: the variants take turns within each repetition and the minimum is reported, so
that load drift on a shared machine hits all of them alike. Reported per case: seconds
per round of each variant, the speed-up ratios, the fraction
of the engine's round spent in the per-sample gradient kernel (``clipped_sums``), the
engine overhead (the rest of the round), and a FLOP estimate of the per-sample work.
The naive loop is timed on a sample of edges and scaled to all edges (stated in the
output) because a full naive round takes minutes.
"""
from __future__ import annotations

import argparse
import copy
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from results_io import write_results

__all__ = ["main", "bench_case"]

CASES = {
    "mnist_bipartite_10": dict(dataset="mnist", topology="bipartite", n_agents=10),
    "mnist_fully_connected_20": dict(dataset="mnist", topology="fully_connected", n_agents=20),
    "mnist_fully_connected_30": dict(dataset="mnist", topology="fully_connected", n_agents=30),
    "cifar10_bipartite_10": dict(dataset="cifar10", topology="bipartite", n_agents=10),
}


def _interleaved(fns: dict, repeats: int) -> dict:
    """Minimum time of each function over ``repeats`` rounds, the functions taking turns
    within each round so that drift in machine load hits all of them alike."""
    for fn in fns.values():
        fn()  # warm-up
    times = {k: [] for k in fns}
    for _ in range(repeats):
        for k, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - t0)
    return {k: min(v) for k, v in times.items()}


def _per_edge_loop_sums(eng, X, data_index, xb, yb, clip):
    """Reference variant: for each edge, ``vmap(grad)`` over its batch's samples with that
    edge's model (no batching across edges), then clip and sum."""
    from torch.func import functional_call, grad, vmap

    def loss(params, x1, y1):
        return F.cross_entropy(functional_call(eng.module, params, (x1.unsqueeze(0),)), y1.unsqueeze(0))

    per_sample = vmap(grad(loss), in_dims=(None, 0, 0))
    out = torch.empty(X.shape[0], eng.P)
    for e in range(X.shape[0]):
        a = data_index[e]
        flat = eng.layout.flatten(per_sample(eng.layout.unflatten(X[e]), xb[a], yb[a]), n_lead=1)
        factor = torch.clamp(clip / (flat.norm(dim=1) + 1e-12), max=1.0)
        out[e] = factor @ flat
    return out


def _naive_sums(module, X, xb, yb, clip):
    """Slowest variant: a module per edge, ``loss.backward()`` per sample."""
    out = torch.empty(X.shape[0], X.shape[1])
    m = copy.deepcopy(module)
    for p in m.parameters():
        p.requires_grad_(True)
    for e in range(X.shape[0]):
        torch.nn.utils.vector_to_parameters(X[e].clone(), m.parameters())
        total = torch.zeros(X.shape[1])
        for b in range(yb.shape[1]):
            m.zero_grad()
            F.cross_entropy(m(xb[e, b : b + 1]), yb[e, b : b + 1]).backward()
            g = torch.cat([p.grad.reshape(-1) for p in m.parameters()])
            total += g * min(1.0, clip / g.norm().item())
        out[e] = total
    return out


def _flops_per_sample(module, x1, y1) -> int:
    from torch.utils.flop_counter import FlopCounterMode

    m = copy.deepcopy(module)
    for p in m.parameters():
        p.requires_grad_(True)
    with FlopCounterMode(display=False) as counter:
        F.cross_entropy(m(x1), y1).backward()
    return int(counter.get_total_flops())


def bench_case(name: str, spec: dict, repeats: int = 3, naive_edges: int = 2, batch_size: int = 216) -> dict:
    """Time one case; see the module docstring for what is reported."""
    from dpdl_core.papers.dpdl import preset
    from dpdl_core.runner import prepare

    cfg = preset(spec["dataset"], spec["topology"], n_agents=spec["n_agents"], batch_size=batch_size, epsilon=None)
    cfg = cfg.replace(sigma_rule="fixed", sigma=1.0, epsilon=None)
    prep = prepare(cfg)
    eng, alg, ctx = prep.engine, prep.algorithm, prep.ctx
    state = alg.init_state(eng.initial_params(cfg.n_agents))
    xb, yb = prep.sample_batches()
    E = len(ctx.edge_i)
    Xe, j = state["x"][ctx.edge_i], ctx.edge_j

    def engine_round():
        alg.step({k: v.clone() for k, v in state.items()}, xb, yb)

    t = _interleaved(
        {
            "round": engine_round,
            "kernel": lambda: eng.clipped_sums(Xe, j, xb, yb, cfg.clip),
            "per_edge": lambda: _per_edge_loop_sums(eng, Xe, j, xb, yb, cfg.clip),
        },
        repeats,
    )
    t_round, t_kernel, t_edge_sums = t["round"], t["kernel"], t["per_edge"]
    k = min(naive_edges, E)
    t0 = time.perf_counter()
    _naive_sums(eng.module, Xe[:k], xb[j[:k]], yb[j[:k]], cfg.clip)
    t_naive_sums = (time.perf_counter() - t0) * E / k
    rest = max(0.0, t_round - t_kernel)  # everything of the round outside the per-sample kernel
    flops = _flops_per_sample(eng.module, xb[0, :1], yb[0, :1]) * E * batch_size
    return {
        "case": name,
        **spec,
        "model": cfg.model,
        "params": eng.P,
        "edges": E,
        "batch_size": batch_size,
        "engine_round_s": t_round,
        "per_edge_loop_round_s": t_edge_sums + rest,
        "naive_round_s": t_naive_sums + rest,
        "naive_extrapolated_from_edges": k,
        "speedup_vs_per_edge": (t_edge_sums + rest) / t_round,
        "speedup_vs_naive": (t_naive_sums + rest) / t_round,
        "kernel_fraction": t_kernel / t_round,
        "engine_overhead_fraction": rest / t_round,
        "per_sample_gflop_per_round": flops / 1e9,
        "achieved_gflops": flops / 1e9 / t_kernel,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="benchmarks/bench_engine.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", nargs="*", default=list(CASES), choices=list(CASES), help="cases to run")
    parser.add_argument("--repeats", type=int, default=5, help="timed repetitions, interleaved (minimum reported)")
    parser.add_argument("--naive-edges", type=int, default=2, help="edges the naive loop is timed on")
    parser.add_argument("--batch-size", type=int, default=216, help="B (the paper's 216 by default)")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's choice)")
    parser.add_argument("--out", type=Path, default=None, help="write JSON results here")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    rows = []
    for name in args.cases:
        row = bench_case(name, CASES[name], args.repeats, args.naive_edges, args.batch_size)
        rows.append(row)
        print(
            f"{name:26s} engine {row['engine_round_s']:.3f} s/round | per-edge loop {row['per_edge_loop_round_s']:.3f} s "
            f"({row['speedup_vs_per_edge']:.2f}x) | naive {row['naive_round_s']:.1f} s ({row['speedup_vs_naive']:.0f}x) | "
            f"kernel {100 * row['kernel_fraction']:.0f}% | overhead {100 * row['engine_overhead_fraction']:.0f}% | "
            f"{row['achieved_gflops']:.1f} GFLOP/s",
            flush=True,
        )
    write_results(args.out, rows)
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main(sys.argv[1:]))
