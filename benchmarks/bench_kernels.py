"""Per-sample kernels against each other and against the plain gradient of the same pairs.

One case is k models reading one batch of B samples (a bipartite DPDL round with N = 10 has
ten such batches of k = 6). Rows, interleaved in one process and the minimum of repeats
kept: the engine's ``vmap`` kernel, the ``per_model`` kernel, the ``bookkeeping`` kernel,
the plain non-private gradient of the same k pairs by autograd (the floor: no per-sample
work at all), and, in micro-batch mode (4 units), the per-client loop of the authors'
code (one backward pass and a global clip per micro-batch). Each row gives seconds, GFLOP/s
(3 × the forward FLOPs of the k·B sample passes), the share of a 1024³ sgemm's rate timed in
the same loop, the share of the rate of "thin GEMMs" (each layer's forward, weight-gradient
and input-gradient GEMMs at its im2col shape, k models, plain ``@`` on preallocated operands:
the same FLOPs as GEMMs of these thin shapes reach; the limit of a kernel that is all GEMM),
its time over the plain gradient's and its time over the book-keeping kernel's (the
kernel's speed-up over that row). Every case runs at each of
``--thread-counts`` (default 1 and 2 torch threads). ``--device cuda`` times every row on
the GPU.

Run: ``python benchmarks/bench_kernels.py [--thread-counts 1,2] [--cases lenet,dpdl_cnn] [--device cpu] [--out FILE]``.
"""
from __future__ import annotations

import argparse

import torch
import torch.nn.functional as F
from results_io import write_results
from timing import interleaved, parse_common

__all__ = ["CASES", "bench_case", "main"]

# (model, dataset, B): LeNet at the DPDL paper's B and at a small B, the CIFAR-10 CNNs; then
# every other model of the four papers at its paper's B (the rule that picks the default
# per-sample kernel, ``strategies.per_sample_for``, rests on these rows).
CASES = (("lenet", "mnist", 216), ("lenet", "mnist", 16), ("dpdl_cnn", "cifar10", 216), ("dpdl_cnn", "cifar10", 16),
         ("dpdl_cnn_authors", "cifar10", 256), ("dpdl_cnn_authors", "cifar10", 16),
         ("dpdl_lenet_authors", "mnist", 256), ("pdsl_mnist", "mnist", 250), ("pdsl_cifar", "cifar10", 250),
         ("leasgd_mlp", "mnist", 64), ("leasgd_cnn", "cifar10", 64))
MODELS_PER_BATCH = 6


def forward_flops(module: torch.nn.Module, shape: tuple[int, ...]) -> float:
    """Multiply-adds × 2 of one sample's forward pass through the Conv2d and Linear layers."""
    flops, h = 0.0, torch.zeros(1, *shape)
    with torch.no_grad():
        for layer in module:
            out = layer(h)
            if isinstance(layer, torch.nn.Conv2d):
                flops += 2 * out[0].numel() * layer.in_channels * layer.kernel_size[0] * layer.kernel_size[1]
            elif isinstance(layer, torch.nn.Linear):
                flops += 2 * layer.in_features * layer.out_features
            h = out
    return flops


def gemm_shapes(module: torch.nn.Module, shape: tuple[int, ...], B: int) -> list[tuple[int, int, int]]:
    """(M, K, N) of each Conv2d and Linear layer's forward GEMM for a batch of B samples
    (a convolution as im2col: M = B·H_out·W_out, K = C_in·k_h·k_w, N = C_out)."""
    out, h = [], torch.zeros(1, *shape)
    with torch.no_grad():
        for layer in module:
            o = layer(h)
            if isinstance(layer, torch.nn.Conv2d):
                out.append((B * o[0, 0].numel(), layer.in_channels * layer.kernel_size[0] * layer.kernel_size[1],
                            layer.out_channels))
            elif isinstance(layer, torch.nn.Linear):
                out.append((B, layer.in_features, layer.out_features))
            h = o
    return out


def thin_gemms(module: torch.nn.Module, shape: tuple[int, ...], B: int, k: int, device: str):
    """A function doing, for each of the k models, each layer's three GEMMs of its forward
    shape (forward, weight gradient, input gradient) on preallocated operands: the same
    FLOPs as the kernels' work, at the rate plain GEMMs of these thin shapes reach."""
    ops = [(torch.randn(m, kk, device=device), torch.randn(kk, n, device=device), torch.randn(m, n, device=device))
           for m, kk, n in gemm_shapes(module, shape, B)]

    def run():
        for _ in range(k):
            for a, w, g in ops:
                a @ w
                a.T @ g
                g @ w.T
    return run


def bench_case(name: str, dataset: str, B: int, device: str, repeats: int, unit: int = 1) -> dict:
    """Seconds, GFLOP/s and sgemm share of every kernel on one case."""
    from dpdl_core import papers
    from dpdl_core.sim.data import input_shape
    from dpdl_core.sim.engine import Engine
    from dpdl_core.sim.models import build_model

    papers.load_all()
    shape = input_shape(dataset)
    module = build_model(name, dataset, seed=0)
    k = MODELS_PER_BATCH
    gen = torch.Generator().manual_seed(0)
    xb = torch.randn(1, B, *shape, generator=gen).to(device)
    yb = torch.randint(0, 10, (1, B), generator=gen).to(device)
    index = torch.zeros(k, dtype=torch.long, device=device)
    engines = {s: Engine(module, device, strategy=s) for s in ("auto", "per_model", "bookkeeping")}
    X = engines["auto"].initial_params(k) + 0.01 * torch.randn(k, engines["auto"].P, generator=gen).to(device)
    fns = {("vmap" if s == "auto" else s): (lambda e=e: e.clipped_sums(X, index, xb, yb, 1.0, unit))
           for s, e in engines.items()}
    layout, plain = engines["auto"].layout, engines["per_model"]

    def plain_gradient():
        for e in range(k):
            plain._model_gradient(X[e], xb[0], yb[0])

    def per_client_loop():
        # The authors' trainer: per micro-batch, a backward pass of its mean loss and a global clip.
        for e in range(k):
            params = {n: t.clone().requires_grad_(True) for n, t in layout.unflatten(X[e]).items()}
            for u in range(B // unit):
                loss = F.cross_entropy(torch.func.functional_call(module, params, (xb[0, u * unit:(u + 1) * unit],)),
                                       yb[0, u * unit:(u + 1) * unit])
                grads = torch.autograd.grad(loss, list(params.values()))
                norm = torch.sqrt(sum(g.pow(2).sum() for g in grads))
                torch.clamp(1.0 / (norm + 1e-6), max=1.0)

    fns["plain gradient"] = plain_gradient
    if unit > 1:
        fns["per-client loop"] = per_client_loop
    fns["thin GEMMs"] = thin_gemms(build_model(name, dataset, seed=0), shape, B, k, device)
    a = torch.randn(1024, 1024, device=device)
    fns["sgemm 1024"] = lambda: a @ a
    times = interleaved(fns, repeats, device)
    work = 3 * forward_flops(module.cpu(), shape) * k * B
    sgemm_rate = 2 * 1024**3 / times.pop("sgemm 1024")
    rows = {}
    for kernel, seconds in times.items():
        rate = work / seconds
        rows[kernel] = {"seconds": seconds, "gflops": rate / 1e9, "share_of_sgemm": rate / sgemm_rate,
                        "share_of_thin_gemms": times["thin GEMMs"] / seconds,
                        "vs_plain": seconds / times["plain gradient"], "vs_bookkeeping": seconds / times["bookkeeping"]}
    return {"model": name, "dataset": dataset, "B": B, "k": k, "unit": unit, "device": device,
            "sgemm_gflops": sgemm_rate / 1e9, "rows": rows}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--thread-counts", default="1,2",
                        help="torch thread counts to run every case at (overrides --threads)")
    parser.add_argument("--cases", default="", help="comma-separated model names to keep (default: every case)")
    args = parse_common(parser, argv)
    keep = set(filter(None, args.cases.split(",")))
    results = []
    for threads in (int(t) for t in args.thread_counts.split(",")):
        torch.set_num_threads(threads)
        for name, dataset, B in CASES:
            if keep and name not in keep:
                continue
            for units in (B, 4) if B >= 64 and B % 4 == 0 else (B,):  # per-sample, and the authors' 4 micro-batches
                r = bench_case(name, dataset, B, args.device, args.repeats, B // units)
                results.append({"threads": threads, **r})
                cells = "  ".join(f"{k}: {v['seconds']:.4f} s ({v['vs_plain']:.2f}x plain, {v['vs_bookkeeping']:.2f}x "
                                  f"book-keeping, {v['share_of_sgemm']:.0%} sgemm, {v['share_of_thin_gemms']:.0%} "
                                  "thin GEMMs)" for k, v in r["rows"].items())
                print(f"{name} B={B} unit={r['unit']} {args.device} threads={threads}: {cells}", flush=True)
    write_results(args.out, results)


if __name__ == "__main__":
    main()
