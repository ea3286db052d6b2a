"""Test-set evaluation benchmark: the engine's two ``eval_strategy`` values on the models the
studies evaluate, measured in one process on the same inputs.

For each model, M stacked models (the agents of a study run) are evaluated on ``--images``
test images with ``vmap`` (one call over all models) and ``per_model`` (one model at a time,
channels-last convolutions). The two take turns within each repetition and the minimum is
reported, so that load drift hits both alike; the ratio is what to read (absolute times on
the 2-core machines drift by ±50% between sessions). Each row also gives the largest relative
difference of the two strategies' losses and whether any accuracy differs.
"""
from __future__ import annotations

import argparse
import time

import torch
from results_io import write_results
from timing import parse_common, sync

import dpdl_core.papers  # noqa: F401  (registers the papers' models)
from dpdl_core.sim.engine import Engine
from dpdl_core.sim.models import build_model

__all__ = ["main", "bench_model"]

# (model, dataset, M): the models of the studies' runs, M as in their runs (agents per run).
CASES = (
    ("leasgd_cnn", "cifar10", 5),
    ("leasgd_cnn", "cifar10", 15),
    ("dpdl_cnn", "cifar10", 10),
    ("pdsl_cifar", "cifar10", 10),
    ("lenet", "mnist", 10),
    ("pdsl_mnist", "mnist", 10),
    ("leasgd_mlp", "mnist", 5),
)
SHAPES = {"mnist": (1, 28, 28), "cifar10": (3, 32, 32)}


def bench_model(model: str, dataset: str, M: int, images: int, repeats: int, device: str = "cpu") -> dict:
    """Seconds of each strategy for M models on ``images`` random images (min of ``repeats``)."""
    torch.manual_seed(0)
    engines = {s: Engine(build_model(model, dataset, seed=0), device, eval_strategy=s) for s in Engine.EVAL_STRATEGIES}
    X = engines["vmap"].initial_params(M) + 0.01 * torch.randn(M, engines["vmap"].P, device=device)
    x, y = torch.randn(images, *SHAPES[dataset]), torch.randint(0, 10, (images,))
    out = {s: eng.evaluate(X, x, y) for s, eng in engines.items()}  # warm-up, and the values compared
    times = {s: [] for s in engines}
    for _ in range(repeats):
        for s, eng in engines.items():
            sync(device)
            t0 = time.perf_counter()
            eng.evaluate(X, x, y)
            sync(device)
            times[s].append(time.perf_counter() - t0)
    best = {s: min(v) for s, v in times.items()}
    (lv, av), (lp, ap) = out["vmap"], out["per_model"]
    return {"model": model, "dataset": dataset, "models": M, "images": images,
            "vmap_s": best["vmap"], "per_model_s": best["per_model"], "speedup": best["vmap"] / best["per_model"],
            "max_rel_loss_diff": float(((lp - lv).abs() / lv.abs()).max()), "accuracy_differs": bool((ap != av).any())}


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", type=int, default=2000, help="test images per evaluation (default 2000)")
    args = parse_common(parser, argv)
    rows = []
    for model, dataset, M in CASES:
        row = bench_model(model, dataset, M, args.images, args.repeats, args.device)
        print(f"{model:<11} M={M:<3} vmap {row['vmap_s']:.2f} s, per_model {row['per_model_s']:.2f} s: "
              f"{row['speedup']:.2f}x; loss diff {row['max_rel_loss_diff']:.1e}, "
              f"accuracy {'differs' if row['accuracy_differs'] else 'equal'}", flush=True)
        rows.append(row)
    write_results(args.out, rows)
    return rows


if __name__ == "__main__":
    main()
