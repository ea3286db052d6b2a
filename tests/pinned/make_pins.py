"""Pin the stored histories of small runs of every algorithm.

Float32 kernels differ in their last bits between CPUs (the vendor's and torch's code paths
for AVX2 and AVX-512): the same code gives different last bits on another machine. So the
pins are kept per platform (:func:`platform_signature`), and ``tests/test_pinned.py``
requires today's code to reproduce this platform's pin bit for bit, and every platform to
agree with the reference pin ``histories.csv.gz`` to float rounding. A refactoring that
changes what a run computes is caught either way.

Add this machine's pin (nothing else changes)::

    .venv/bin/python tests/pinned/make_pins.py

Re-pin everything only for an intended change of results, and say which in the commit
message: ``make_pins.py --reference`` rewrites ``histories.csv.gz`` and ``cases.json``
(then delete ``platforms/`` and re-pin each platform).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd
import torch

HERE = Path(__file__).resolve().parent
BASE = dict(dataset="mnist", n_agents=6, topology="bipartite", batch_size=16, rounds=4, train_samples=600,
            eval_samples=200, eval_every=2, sigma_rule="authors_code", epsilon=0.5, checkpoint_every=0)
CASES = {
    "dpdl": dict(algorithm="dpdl"),
    "dpdl_ring_rdp": dict(algorithm="dpdl", topology="ring", sigma_rule="rdp", epsilon=1.0),
    "dpdl_cifar10": dict(algorithm="dpdl", dataset="cifar10", rounds=2, lr=0.03, clip=3.0, epsilon=4.0),
    "dp_dpsgd": dict(algorithm="dp_dpsgd"),
    "dp_dpsgd_nonprivate": dict(algorithm="dp_dpsgd", epsilon=None),
    "muffliato": dict(algorithm="muffliato"),
    "dp_netfleet": dict(algorithm="dp_netfleet"),
    "dp_cga_batch_matched": dict(algorithm="dp_cga", algo={"clip": "batch", "noise": "matched"}),
    # Monte Carlo Shapley values, so that the pin covers the algorithm's generator.
    "pdsl_stratified": dict(algorithm="pdsl", model="pdsl_mnist", sigma_rule="per_message", validation_samples=100,
                            algo={"estimator": "stratified", "permutations": 4}),
    # Pools re-split at rounds 1 and 3.
    "leasgd": dict(algorithm="leasgd", topology="fully_connected", model="leasgd_mlp", sigma_rule="leasgd_common",
                   lr=0.05, clip=1.0, algo={"k": 2}),
}
# Metrics every run has always recorded (later additions are not pinned).
METRICS = ("train_loss", "train_loss_mean", "train_loss_min", "train_loss_max", "test_acc", "test_loss",
           "avg_test_acc", "avg_test_loss", "consensus")


def case_configs() -> dict[str, dict]:
    return {name: {**BASE, **change} for name, change in CASES.items()}


def history(config: dict) -> pd.DataFrame:
    from dpdl_core import run
    from dpdl_core.runs.config import ExperimentConfig

    res = run(ExperimentConfig.from_stored(config), save=False, progress=False)
    h = res.history
    return h[h["metric"].isin(METRICS)].reset_index(drop=True)


def platform_signature() -> str:
    """What decides the last bits of a run here: CPU vendor, torch's CPU capability, torch."""
    vendor = "unknown"
    try:
        vendor = next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                      if line.startswith("vendor_id"))
    except (OSError, StopIteration):
        pass
    return f"{vendor}-{torch.backends.cpu.get_cpu_capability()}-torch{torch.__version__}".replace("/", "_")


def main(argv: list[str] | None = None) -> int:
    reference = "--reference" in (sys.argv[1:] if argv is None else argv)
    torch.set_num_threads(2)
    frames = []
    for name, cfg in case_configs().items():
        frames.append(history(cfg).assign(case=name))
        print(name, file=sys.stderr)
    out = pd.concat(frames, ignore_index=True)
    # float.hex keeps every bit: the test compares exactly.
    out["value"] = out["value"].map(float.hex)
    if reference:
        out.to_csv(HERE / "histories.csv.gz", index=False)
        (HERE / "cases.json").write_text(json.dumps(case_configs(), indent=1, sort_keys=True) + "\n")
    else:
        (HERE / "platforms").mkdir(exist_ok=True)
        out.to_csv(HERE / "platforms" / f"{platform_signature()}.csv.gz", index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
