"""One cell of PDSL's paper grid, every curve: the `paper` profile's settings (Table I's
MNIST scale: B = 250, |Q| = 2,000, 200 rounds, stratified Monte Carlo Shapley with R = 10,
the per-message σ rule) for one topology, one M, one ε and one seed — a GPU-sized slice of
the grid that says whether the paper's ordering appears at its own scale.

Nothing is stored in the results store; each curve prints one JSON line (final and best
average-model test accuracy, the mean training loss of the last 5 rounds, the accountant ε
that the σ really buys, the data that ran, seconds) and the list is written to ``--out``
after every curve, so an interrupted call keeps what finished.

Example (the run reported in docs/results_log.md, on an H100)::

    python benchmarks/pdsl_paper_cell.py --device cuda --out cell.json
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    from dpdl_core.papers.pdsl.figures import grid

    parser = argparse.ArgumentParser(prog="benchmarks/pdsl_paper_cell.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", choices=["mnist", "cifar10"], default="mnist")
    parser.add_argument("--topology", choices=["fully_connected", "bipartite", "ring"], default="fully_connected")
    parser.add_argument("--agents", type=int, default=10, help="M (the paper's 10 or 20)")
    parser.add_argument("--epsilon", type=float, default=0.3, help="nominal epsilon, one of the paper profile's")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=None, help="override the profile's 200 rounds")
    parser.add_argument("--labels", nargs="*", default=None, help="curves to run (default: all), e.g. PDSL DP-CGA")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cuda")
    parser.add_argument("--out", type=Path, required=True, help="JSON list of the curves' rows")
    args = parser.parse_args(argv)

    runs = [r for r in grid(args.dataset, [args.topology], "paper")
            if r.config.epsilon == args.epsilon and r.config.n_agents == args.agents and r.config.seed == args.seed]
    if not runs:
        parser.error(f"no run of the paper grid has epsilon={args.epsilon}, M={args.agents}, seed={args.seed}; "
                     "see dpdl_core/papers/pdsl/profiles.yaml (section paper) for the grid")
    known = [r.label for r in runs]
    unknown = sorted(set(args.labels or []) - set(known))
    if unknown:
        parser.error(f"--labels {unknown} not in the grid; allowed values: {known}")
    from dpdl_core import run

    rows = []
    for r in runs:
        if args.labels and r.label not in args.labels:
            continue
        changes = {"device": args.device, **({"rounds": args.rounds} if args.rounds else {})}
        t0 = time.perf_counter()
        res = run(dataclasses.replace(r.config, **changes), save=False, progress=False)
        h = res.history
        acc = h[h.metric == "avg_test_acc"].sort_values("round")["value"]
        loss = h[h.metric == "train_loss_mean"].sort_values("round")["value"]
        row = {"label": r.label, "dataset": res.meta.get("dataset_label"), "topology": args.topology,
               "n_agents": args.agents, "epsilon": args.epsilon, "seed": args.seed, "rounds": int(h["round"].max()),
               "final_avg_test_acc": float(acc.iloc[-1]), "best_avg_test_acc": float(acc.max()),
               "final_train_loss": float(loss.iloc[-5:].mean()), "diverged": bool(res.meta.get("diverged")),
               "epsilon_rdp": res.meta.get("epsilon_rdp_max"), "sigma": res.meta.get("sigma_max"),
               "seconds": round(time.perf_counter() - t0, 1)}
        print(json.dumps(row), flush=True)
        rows.append(row)
        args.out.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
