"""Engine benchmark: DPDL round time, engine vs a per-edge ``vmap(grad)`` loop vs the naive
per-sample ``loss.backward()`` loop, all measured in one process on the same inputs.

Timing: the variants take turns within each repetition and the minimum is reported, so
that load drift on a shared machine hits all of them alike. Reported per case: seconds
per round of each variant, the speed-up ratios, the fraction
of the engine's round spent in the per-sample gradient kernel (``clipped_sums``), the
engine overhead (the rest of the round), a FLOP estimate of the per-sample work, its
GFLOP/s against a 1024³ sgemm timed in the same interleaved loop, and the strategy the
engine chose. A last row times ``runner.run`` against bare training rounds and attributes
the difference (:func:`bench_run_overhead`).
The naive loop is timed on a sample of edges and scaled to all edges (stated in the
output) because a full naive round takes minutes. ``--device cuda`` runs every variant and
the sgemm on the GPU (timed after a synchronize); the ``run()`` row stays on the CPU.
"""
from __future__ import annotations

import argparse
import copy
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from results_io import write_results
from timing import interleaved, sync

__all__ = ["main", "bench_case"]

CASES = {
    "mnist_bipartite_10": dict(dataset="mnist", topology="bipartite", n_agents=10),
    "mnist_fully_connected_20": dict(dataset="mnist", topology="fully_connected", n_agents=20),
    "mnist_fully_connected_30": dict(dataset="mnist", topology="fully_connected", n_agents=30),
    "cifar10_bipartite_10": dict(dataset="cifar10", topology="bipartite", n_agents=10),
    # The DPDL authors' setting: their LeNet (3 FC layers), B = 256 at N = 10.
    "mnist_bipartite_10_authors": dict(dataset="mnist", topology="bipartite", n_agents=10, model="dpdl_lenet_authors",
                                       batch_size=256),
}
# Micro-batches per batch in the micro-batch clipping mode (the authors' 4).
MICROBATCHES = 4


def _per_edge_loop_sums(eng, X, data_index, xb, yb, clip):
    """Reference variant: for each edge, ``vmap(grad)`` over its batch's samples with that
    edge's model (no batching across edges), then clip and sum."""
    from torch.func import functional_call, grad, vmap

    def loss(params, x1, y1):
        return F.cross_entropy(functional_call(eng.module, params, (x1.unsqueeze(0),)), y1.unsqueeze(0))

    per_sample = vmap(grad(loss), in_dims=(None, 0, 0))
    out = torch.empty(X.shape[0], eng.P, device=X.device)
    for e in range(X.shape[0]):
        a = data_index[e]
        flat = eng.layout.flatten(per_sample(eng.layout.unflatten(X[e]), xb[a], yb[a]), n_lead=1)
        factor = torch.clamp(clip / (flat.norm(dim=1) + 1e-12), max=1.0)
        out[e] = factor @ flat
    return out


def _naive_sums(module, X, xb, yb, clip):
    """Slowest variant: a module per edge, ``loss.backward()`` per sample."""
    out = torch.empty(X.shape[0], X.shape[1], device=X.device)
    m = copy.deepcopy(module)
    for p in m.parameters():
        p.requires_grad_(True)
    for e in range(X.shape[0]):
        torch.nn.utils.vector_to_parameters(X[e].clone(), m.parameters())
        total = torch.zeros(X.shape[1], device=X.device)
        for b in range(yb.shape[1]):
            m.zero_grad()
            F.cross_entropy(m(xb[e, b : b + 1]), yb[e, b : b + 1]).backward()
            g = torch.cat([p.grad.reshape(-1) for p in m.parameters()])
            total += g * min(1.0, clip / g.norm().item())
        out[e] = total
    return out


def _microbatch_loop_sums(module, X, xb, yb, clip, n_micro=MICROBATCHES):
    """A per-client loop in the authors' style (our code): per edge, the batch cut into
    ``n_micro`` consecutive micro-batches, one ``loss.backward()`` of each micro-batch's mean
    loss, ``clip_grad_norm_`` to ``clip`` (the global L2 norm), summed. Same result as the
    engine's ``clipped_sums(..., unit=B/n_micro)``."""
    out = torch.empty(X.shape[0], X.shape[1], device=X.device)
    m = copy.deepcopy(module)
    for p in m.parameters():
        p.requires_grad_(True)
    size = yb.shape[1] // n_micro
    for e in range(X.shape[0]):
        torch.nn.utils.vector_to_parameters(X[e].clone(), m.parameters())
        total = torch.zeros(X.shape[1], device=X.device)
        for u in range(n_micro):
            m.zero_grad()
            sl = slice(u * size, (u + 1) * size)
            F.cross_entropy(m(xb[e, sl]), yb[e, sl]).backward()
            torch.nn.utils.clip_grad_norm_(m.parameters(), clip)
            total += torch.cat([p.grad.reshape(-1) for p in m.parameters()])
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


def _sgemm(n: int = 1024, device="cpu"):
    """A closure timing one n×n×n fp32 matmul (2n³ FLOP): the machine's dense roofline,
    measured interleaved with the variants so that it sees the same load."""
    a, b = torch.randn(n, n, device=device), torch.randn(n, n, device=device)
    out = torch.empty(n, n, device=device)
    return lambda: torch.mm(a, b, out=out), 2 * n**3


def bench_case(name: str, spec: dict, repeats: int = 3, naive_edges: int = 2, batch_size: int = 216,
               compiled: bool = False, device: str = "cpu") -> dict:
    """Time one case; see the module docstring for what is reported. ``compiled`` adds the
    kernel of an ``Engine(compile=True)`` to the interleaved variants (its compilation
    happens in the warm-up call and is reported separately)."""
    from dpdl_core.papers.dpdl import preset
    from dpdl_core.runs.runner import prepare

    batch_size = spec.get("batch_size", batch_size)
    cfg = preset(spec["dataset"], spec["topology"], n_agents=spec["n_agents"], batch_size=batch_size, epsilon=None,
                 **({"model": spec["model"]} if "model" in spec else {}))
    # "The engine" of every row is the vmap kernel, the yardstick of docs/benchmarks.md's
    # engine tables; the default book-keeping kernel is timed beside it.
    cfg = cfg.replace(sigma_rule="fixed", sigma=1.0, epsilon=None, device=device, per_sample_strategy="vmap")
    prep = prepare(cfg)
    eng, alg, ctx = prep.engine, prep.algorithm, prep.ctx
    state = alg.init_state(eng.initial_params(cfg.n_agents))
    xb, yb = prep.sample_batches()
    E = len(ctx.edge_i)
    Xe, j = state["x"][ctx.edge_i], ctx.edge_j

    def engine_round():
        alg.step({k: v.clone() for k, v in state.items()}, xb, yb)

    sgemm, sgemm_flop = _sgemm(4096 if device == "cuda" else 1024, device)
    variants = {
        "round": engine_round,
        "kernel": lambda: eng.clipped_sums(Xe, j, xb, yb, cfg.clip),
        "per_edge": lambda: _per_edge_loop_sums(eng, Xe, j, xb, yb, cfg.clip),
        "kernel_microbatch": lambda: eng.clipped_sums(Xe, j, xb, yb, cfg.clip, unit=batch_size // MICROBATCHES),
        "microbatch_loop": lambda: _microbatch_loop_sums(eng.module, Xe, xb[j], yb[j], cfg.clip),
        "sgemm": sgemm,
    }
    from dpdl_core.sim.engine import Engine

    # The per-model kernel (config per_sample_strategy: per_model) on the same module.
    peng = Engine(copy.deepcopy(eng.module), eng.device, strategy="per_model")
    variants["per_model_kernel"] = lambda: peng.clipped_sums(Xe, j, xb, yb, cfg.clip)
    beng = Engine(copy.deepcopy(eng.module), eng.device, strategy="bookkeeping")
    variants["bookkeeping_kernel"] = lambda: beng.clipped_sums(Xe, j, xb, yb, cfg.clip)
    compile_s = None
    if compiled:
        ceng = Engine(copy.deepcopy(eng.module), eng.device, compile=True)
        t0 = time.perf_counter()
        ceng.clipped_sums(Xe, j, xb, yb, cfg.clip)  # compiles every (models, batch) shape of the round
        compile_s = time.perf_counter() - t0
        variants["compiled_kernel"] = lambda: ceng.clipped_sums(Xe, j, xb, yb, cfg.clip)
    t = interleaved(variants, repeats, device)
    t_round, t_kernel, t_edge_sums = t["round"], t["kernel"], t["per_edge"]
    sgemm_gflops = sgemm_flop / 1e9 / t["sgemm"]
    counts = torch.bincount(j, minlength=cfg.n_agents).tolist()
    strategies = sorted({eng.choose_strategy(batch_size, c) for c in counts if c})
    k = min(naive_edges, E)
    t0 = time.perf_counter()
    _naive_sums(eng.module, Xe[:k], xb[j[:k]], yb[j[:k]], cfg.clip)
    sync(device)
    t_naive_sums = (time.perf_counter() - t0) * E / k
    rest = max(0.0, t_round - t_kernel)  # everything of the round outside the per-sample kernel
    flops = _flops_per_sample(eng.module, xb[0, :1], yb[0, :1]) * E * batch_size
    return {
        "case": name,
        **spec,
        "device": device,
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
        # Micro-batch clipping: the engine's kernel against the per-client loop, both plus the
        # rest of the round (the same for both modes).
        "engine_microbatch_round_s": t["kernel_microbatch"] + rest,
        "microbatch_loop_round_s": t["microbatch_loop"] + rest,
        "speedup_vs_microbatch_loop": (t["microbatch_loop"] + rest) / (t["kernel_microbatch"] + rest),
        # The same multiply-adds as the per-sample kernel (one forward and backward per sample),
        # so both micro-batch variants read against the sgemm rate like it.
        "microbatch_kernel_fraction_of_sgemm": flops / 1e9 / t["kernel_microbatch"] / sgemm_gflops,
        "microbatch_loop_fraction_of_sgemm": flops / 1e9 / t["microbatch_loop"] / sgemm_gflops,
        "kernel_fraction": t_kernel / t_round,
        "engine_overhead_fraction": rest / t_round,
        "per_sample_gflop_per_round": flops / 1e9,
        "achieved_gflops": flops / 1e9 / t_kernel,
        "sgemm_gflops": sgemm_gflops,
        "kernel_fraction_of_sgemm": flops / 1e9 / t_kernel / sgemm_gflops,
        "sgemm_roofline_round_s": flops / 1e9 / sgemm_gflops + rest,
        "strategy": "+".join(strategies),
        "per_model_round_s": t["per_model_kernel"] + rest,
        "per_model_speedup_vs_engine": t_round / (t["per_model_kernel"] + rest),
        "bookkeeping_round_s": t["bookkeeping_kernel"] + rest,
        "bookkeeping_speedup_vs_engine": t_round / (t["bookkeeping_kernel"] + rest),
        "models_per_batch": sorted(set(counts)),
        **({} if compile_s is None else {
            "compile_s": compile_s,
            "compiled_round_s": t["compiled_kernel"] + rest,
            "compiled_speedup_vs_engine": t_round / (t["compiled_kernel"] + rest),
            "compiled_gflops": flops / 1e9 / t["compiled_kernel"],
        }),
    }


class _Timers:
    """Wall time accumulated in named functions while active: each ``(owner, attr, label)``
    is wrapped (and restored on exit). Nested wrapped calls count in both."""

    def __init__(self, targets):
        self.targets, self.saved, self.seconds, self.calls = targets, [], {}, {}

    def __enter__(self):
        for owner, attr, label in self.targets:
            fn = getattr(owner, attr)
            self.saved.append((owner, attr, owner.__dict__.get(attr, fn) if isinstance(owner, type) else fn))

            def timed(*args, _fn=fn, _label=label, **kwargs):
                t0 = time.perf_counter()
                try:
                    return _fn(*args, **kwargs)
                finally:
                    self.seconds[_label] = self.seconds.get(_label, 0.0) + time.perf_counter() - t0
                    self.calls[_label] = self.calls.get(_label, 0) + 1

            setattr(owner, attr, timed)
        return self

    def __exit__(self, *exc):
        for owner, attr, fn in reversed(self.saved):
            setattr(owner, attr, fn)


def bench_run_overhead(rounds: int = 20, repeats: int = 3, batch_size: int = 216, full_rounds: int = 500,
                       variant: str = "paper") -> dict:
    """``runner.run`` of a short MNIST DPDL N=10 bipartite config (``variant``: the paper's
    setting at ``batch_size`` with a fixed σ, or the DPDL authors' code with its own batch
    size, micro-batch clipping and σ rule) against the same number of
    bare training rounds (``loop.training_rounds``: schedule, batches, ``algorithm.step``),
    interleaved in one process (minimum over ``repeats``). The run writes to a temporary
    store with a checkpoint every 10 rounds and keeps the config's evaluation settings
    (``eval_every`` 10 on the full test set). Its time is attributed with timers around
    prepare, the training step, batch sampling, evaluation, history rows, checkpoints and
    the final store write; ``other`` is the rest (tensor→numpy copies, finiteness checks,
    the DataFrame, meta). ``run_over_engine_{full_rounds}`` extrapolates to a
    ``full_rounds``-round run: one-off costs (prepare, store write) amortised, per-round
    and per-eval costs kept at their rates."""
    import tempfile

    from dpdl_core.papers.dpdl import preset
    from dpdl_core.runs import runner
    from dpdl_core.runs.results import ResultStore
    from dpdl_core.runs.slots import RunSlot
    from dpdl_core.sim.algorithms import get_algorithm
    from dpdl_core.sim.algorithms.base import RunContext
    from dpdl_core.sim.engine import Engine
    from dpdl_core.sim.loop import training_rounds

    if variant == "authors":
        cfg = preset("mnist", "bipartite", variant="authors", n_agents=10, rounds=rounds, checkpoint_every=10)
    else:
        cfg = preset("mnist", "bipartite", n_agents=10, batch_size=batch_size, epsilon=None)
        cfg = cfg.replace(sigma_rule="fixed", sigma=1.0, epsilon=None, rounds=rounds, checkpoint_every=10)
    prep = runner.prepare(cfg)
    state0 = prep.algorithm.init_state(prep.engine.initial_params(cfg.n_agents))
    tmp = tempfile.TemporaryDirectory(prefix="bench_run_")
    store = ResultStore(tmp.name)
    targets = [
        (runner, "prepare", "prepare"),
        (get_algorithm(cfg.algorithm), "step", "step"),
        (runner.Prepared, "sample_batches", "sample_batches"),
        (RunContext, "begin_round", "begin_round"),
        (Engine, "evaluate", "evaluate"),
        (runner, "consensus_distance", "evaluate"),
        (runner, "_rows", "history_rows"),
        (RunSlot, "checkpoint", "checkpoint"),  # torch.save and the atomic write
        (ResultStore, "save", "store_save"),
    ]
    best = {}

    def timed_run():
        with _Timers(targets) as tm:
            t0 = time.perf_counter()
            runner.run(cfg, store=store, force=True, save=True, progress=False)
            total = time.perf_counter() - t0
        if not best or total < best["total"]:
            best.update(total=total, seconds=dict(tm.seconds), calls=dict(tm.calls))

    def bare_rounds():
        state = {k: v.clone() for k, v in state0.items()}
        for _ in training_rounds(prep, state, 1, rounds):
            pass

    try:
        t = interleaved({"run": timed_run, "engine": bare_rounds}, repeats)
    finally:
        tmp.cleanup()
    sec, calls = best["seconds"], best["calls"]
    # checkpoint = torch.save + atomic write (the result file is CSV: store_save has no torch.save)
    parts = {k: sec.get(k, 0.0) for k in ("prepare", "step", "sample_batches", "begin_round", "evaluate",
                                          "history_rows", "checkpoint", "store_save")}
    parts["other"] = max(0.0, best["total"] - sum(parts.values()))
    engine_round = t["engine"] / rounds
    n_eval = calls.get("evaluate", 0) // 3  # evaluate(X), evaluate(mean), consensus_distance per eval round
    n_ckpt = max(1, calls.get("checkpoint", 0) // 2)
    one_off = parts["prepare"] + parts["store_save"]
    per_round = (best["total"] - one_off - parts["evaluate"] - parts["checkpoint"]) / rounds
    per_eval = parts["evaluate"] / max(1, n_eval)
    per_ckpt = parts["checkpoint"] / n_ckpt if calls.get("checkpoint") else 0.0
    default_ckpt_every = type(cfg).__dataclass_fields__["checkpoint_every"].default
    full = (full_rounds * per_round + one_off + per_eval * (full_rounds // cfg.eval_every)
            + per_ckpt * ((full_rounds - 1) // default_ckpt_every)) / full_rounds
    return {
        "case": "run_overhead_mnist_bipartite_10" + ("_authors" if variant == "authors" else ""),
        "variant": variant,
        "rounds": rounds,
        "batch_size": cfg.batch_size,
        "eval_every": cfg.eval_every,
        "eval_samples": len(prep.y_eval),
        "checkpoint_every": cfg.checkpoint_every,
        "run_s": best["total"],
        "engine_rounds_s": t["engine"],
        "engine_round_s": engine_round,
        "run_round_s": best["total"] / rounds,
        "run_over_engine": best["total"] / t["engine"],
        "breakdown_s": parts,
        "per_eval_s": per_eval,
        "per_checkpoint_s": per_ckpt,
        f"run_round_s_{full_rounds}": full,
        f"run_over_engine_{full_rounds}": full / engine_round,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="benchmarks/bench_engine.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", nargs="*", default=list(CASES), choices=list(CASES), help="cases to run")
    parser.add_argument("--repeats", type=int, default=5, help="timed repetitions, interleaved (minimum reported)")
    parser.add_argument("--naive-edges", type=int, default=2, help="edges the naive loop is timed on")
    parser.add_argument("--batch-size", type=int, default=216, help="B (the paper's 216 by default)")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's choice)")
    parser.add_argument("--compiled", action="store_true",
                        help="also time the torch.compile'd kernel (Engine(compile=True)); "
                             "compiling takes about a minute per case")
    parser.add_argument("--run-rounds", type=int, default=20, help="rounds of the run() overhead case (0: skip it)")
    parser.add_argument("--run-variant", choices=["paper", "authors"], default="paper",
                        help="the run() overhead case: DPDL as the paper states it, or the authors' code's variant")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                        help="where the round, the kernels and the sgemm run (the run() row stays on the CPU)")
    parser.add_argument("--out", type=Path, default=None, help="write JSON results here")
    args = parser.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: no CUDA GPU is visible to torch here; use --device cpu")
    if args.threads:
        torch.set_num_threads(args.threads)
    rows = []
    for name in args.cases:
        row = bench_case(name, CASES[name], args.repeats, args.naive_edges, args.batch_size, args.compiled, args.device)
        rows.append(row)
        print(
            f"{name:26s} [{row['strategy']}] engine {row['engine_round_s']:.3f} s/round | per-edge loop "
            f"{row['per_edge_loop_round_s']:.3f} s ({row['speedup_vs_per_edge']:.2f}x) | naive "
            f"{row['naive_round_s']:.1f} s "
            f"({row['speedup_vs_naive']:.0f}x) | kernel {100 * row['kernel_fraction']:.0f}% | overhead "
            f"{100 * row['engine_overhead_fraction']:.0f}% | {row['per_sample_gflop_per_round']:.1f} GFLOP/round, "
            f"{row['achieved_gflops']:.1f} GFLOP/s = {100 * row['kernel_fraction_of_sgemm']:.0f}% of sgemm "
            f"({row['sgemm_gflops']:.1f} GFLOP/s; roofline {row['sgemm_roofline_round_s']:.3f} s/round)",
            flush=True,
        )
        print(f"{'':26s} micro-batch clipping: engine {row['engine_microbatch_round_s']:.3f} s/round "
              f"({100 * row['microbatch_kernel_fraction_of_sgemm']:.0f}% of sgemm) | per-client loop "
              f"{row['microbatch_loop_round_s']:.3f} s "
              f"({100 * row['microbatch_loop_fraction_of_sgemm']:.0f}% of sgemm) | "
              f"engine/loop {row['speedup_vs_microbatch_loop']:.2f}x", flush=True)
        print(f"{'':26s} per-model kernel (per_sample_strategy: per_model): {row['per_model_round_s']:.3f} s/round "
              f"({row['per_model_speedup_vs_engine']:.2f}x the engine)", flush=True)
        print(f"{'':26s} book-keeping kernel (the default): {row['bookkeeping_round_s']:.3f} s/round "
              f"({row['bookkeeping_speedup_vs_engine']:.2f}x the engine)", flush=True)
        if "compiled_round_s" in row:
            print(f"{'':26s} torch.compile: {row['compiled_round_s']:.3f} s/round "
                  f"({row['compiled_speedup_vs_engine']:.2f}x the engine, {row['compiled_gflops']:.1f} GFLOP/s) "
                  f"after {row['compile_s']:.0f} s of compilation", flush=True)
    run_row = None
    if args.run_rounds:
        run_row = bench_run_overhead(args.run_rounds, max(2, min(args.repeats, 3)), args.batch_size,
                                     variant=args.run_variant)
        rows.append(run_row)
        b = run_row["breakdown_s"]
        print(
            f"run() MNIST N=10 bipartite ({args.run_variant}, B = {run_row['batch_size']}), "
            f"{run_row['rounds']} rounds: {run_row['run_round_s']:.3f} s/round vs engine "
            f"{run_row['engine_round_s']:.3f} s/round ({run_row['run_over_engine']:.2f}x; a 500-round run "
            f"{run_row['run_over_engine_500']:.2f}x)\n  breakdown (s): "
            + ", ".join(f"{k} {v:.3f}" for k, v in b.items())
            + f"\n  per eval {run_row['per_eval_s']:.3f} s (every {run_row['eval_every']} rounds, "
            f"{run_row['eval_samples']} samples), per checkpoint {run_row['per_checkpoint_s']:.4f} s",
            flush=True,
        )
    print("targets:")
    by = {r["case"]: r for r in rows}
    if "mnist_bipartite_10" in by:
        v = by["mnist_bipartite_10"]["engine_round_s"]
        print(f"  MNIST N=10 bipartite <= 0.45 s/round: {'met' if v <= 0.45 else 'NOT met'} ({v:.3f} s)")
    case_rows = [r for r in rows if "speedup_vs_per_edge" in r]
    if case_rows:
        worst = min(r["speedup_vs_per_edge"] for r in case_rows)
        print(f"  >= 1.2x the per-edge loop on every case: {'met' if worst >= 1.2 else 'NOT met'} (min {worst:.2f}x)")
        frac = min(r["kernel_fraction_of_sgemm"] for r in case_rows)
        print(f"  per-sample kernel >= 50% of sgemm GFLOP/s: {'met' if frac >= 0.5 else 'NOT met'} "
              f"(min {100 * frac:.0f}%)")
        mb = min(r["speedup_vs_microbatch_loop"] for r in case_rows)
        print(f"  >= 2x the per-client micro-batch loop (micro-batch clipping): {'met' if mb >= 2 else 'NOT met'} "
              f"(min {mb:.2f}x)")
        print("  (naive loop ratio reported, not a target)")
    if run_row is not None:
        v = run_row["run_over_engine_500"]
        print(f"  run() <= 1.15x the engine's round (500-round run): {'met' if v <= 1.15 else 'NOT met'} ({v:.2f}x; "
              f"{run_row['rounds']}-round run measured {run_row['run_over_engine']:.2f}x)")
    write_results(args.out, rows)
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main(sys.argv[1:]))
