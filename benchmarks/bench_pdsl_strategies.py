"""PDSL's execution strategies benchmark: the two ways of computing each heavy part of a PDSL
round, measured in one process on the same inputs.

``batch_grad``
    The messages of PDSL as written (eqs 9-13 clip whole-batch gradients): the gradients of
    M models on one batch of B images, with the config's ``batch_grad_strategy`` ``vmap``
    (``grad`` vmapped over the models) and ``per_model`` (plain autograd, one model at a
    time, channels-last). A fully connected round computes M such groups.
``value``
    v of eq (16): the accuracy on |Q| validation images of K coalition models, with PDSL's
    ``value_strategy`` ``stacked`` (the GEMM evaluator of ``papers/pdsl/evaluation.py``)
    and ``per_model`` (``Engine.evaluate(strategy="per_model")``).

The variants take turns within each repetition and the minimum is kept, so that load drift
hits both alike; the ratio is what to read (absolute times on the 2-core machines drift by
±50% between sessions). Each row also gives the largest difference between the variants'
results (relative, for gradients; in images, for accuracies).
"""
from __future__ import annotations

import argparse

import torch
from results_io import write_results
from timing import interleaved, parse_common

import dpdl_core.papers  # noqa: F401  (registers the papers' models)
from dpdl_core.papers.pdsl.evaluation import StackedEvaluator
from dpdl_core.sim.engine import Engine
from dpdl_core.sim.models import build_model

__all__ = ["main", "bench_batch_grad", "bench_value"]

SHAPES = {"mnist": (1, 28, 28), "cifar10": (3, 32, 32)}
# PDSL's models at the study's sizes: M = 10 models per batch of B = 250, K = 64 coalition
# models per call (the study's chunk) on |Q| = 500.
CASES = (("pdsl_mnist", "mnist"), ("pdsl_cifar", "cifar10"))


def bench_batch_grad(model: str, dataset: str, M: int = 10, B: int = 250, repeats: int = 3,
                     device: str = "cpu") -> dict:
    """Seconds of M models' whole-batch gradients on one batch, per ``batch_grad_strategy``."""
    torch.manual_seed(0)
    engines = {s: Engine(build_model(model, dataset, seed=0), device, batch_grad_strategy=s)
               for s in Engine.BATCH_GRAD_STRATEGIES}
    X = engines["vmap"].initial_params(M) + 0.05 * torch.randn(M, engines["vmap"].P, device=device)
    xb = torch.randn(1, B, *SHAPES[dataset], device=device)
    yb = torch.randint(0, 10, (1, B), device=device)
    index = torch.zeros(M, dtype=torch.long, device=device)
    out = {s: eng.batch_gradients(X, index, xb, yb)[0] for s, eng in engines.items()}
    best = interleaved({s: (lambda e=eng: e.batch_gradients(X, index, xb, yb)) for s, eng in engines.items()},
                        repeats, device)
    diff = ((out["per_model"] - out["vmap"]).norm(dim=1) / out["vmap"].norm(dim=1)).max()
    return {"part": "batch_grad", "model": model, "models": M, "batch": B, "vmap_s": best["vmap"],
            "per_model_s": best["per_model"], "speedup": best["vmap"] / best["per_model"], "max_rel_diff": float(diff)}


def bench_value(model: str, dataset: str, K: int = 64, images: int = 500, repeats: int = 3,
                device: str = "cpu") -> dict:
    """Seconds of K models' accuracies on ``images`` images, per ``value_strategy``."""
    torch.manual_seed(0)
    eng = Engine(build_model(model, dataset, seed=0), device)
    X = eng.initial_params(K) + 0.05 * torch.randn(K, eng.P, device=device)
    x, y = torch.randn(images, *SHAPES[dataset], device=device), torch.randint(0, 10, (images,), device=device)
    stacked = StackedEvaluator(eng, x, y, image_batch=2000)
    fns = {"stacked": lambda: stacked(X), "per_model": lambda: eng.evaluate(X, x, y, strategy="per_model")[1]}
    out = {k: fn() for k, fn in fns.items()}
    best = interleaved(fns, repeats, device)
    return {"part": "value", "model": model, "models": K, "images": images, "stacked_s": best["stacked"],
            "per_model_s": best["per_model"], "speedup": best["stacked"] / best["per_model"],
            "max_images_differ": int(((out["per_model"] - out["stacked"]).abs() * images).round().max())}


# Each part's benchmark and how its row reads.
PARTS = ((bench_batch_grad, "batch gradients {model:<10} M={models} B={batch}: vmap {vmap_s:.2f} s, "
                            "per_model {per_model_s:.2f} s: {speedup:.2f}x; diff {max_rel_diff:.1e}"),
         (bench_value, "Shapley values  {model:<10} K={models} |Q|={images}: stacked {stacked_s:.2f} s, per_model "
                       "{per_model_s:.2f} s: {speedup:.2f}x; accuracies differ by at most "
                       "{max_images_differ} image(s)"))


def main(argv=None) -> list[dict]:
    args = parse_common(argparse.ArgumentParser(description=__doc__,
                                                formatter_class=argparse.RawDescriptionHelpFormatter), argv)
    rows = []
    for model, dataset in CASES:
        for bench, line in PARTS:
            rows.append(bench(model, dataset, repeats=args.repeats, device=args.device))
            print(line.format(**rows[-1]), flush=True)
    write_results(args.out, rows)
    return rows


if __name__ == "__main__":
    main()
