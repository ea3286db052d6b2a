"""The DPDL paper's hyper-parameters (§VI-A) as configs."""
from __future__ import annotations

from ...config import ConfigError, ExperimentConfig

__all__ = ["SETTINGS", "preset"]

SETTINGS = {
    "mnist": {"lr": 0.005, "clip": 2.0, "epsilons": (0.25, 0.5, 1.0)},
    "cifar10": {"lr": 0.03, "clip": 3.0, "epsilons": (2.0, 4.0, 8.0)},
}


def preset(dataset: str, topology: str = "bipartite", **changes) -> ExperimentConfig:
    """A config with the DPDL paper's §VI-A settings for ``dataset`` and ``topology``.

    MNIST: η = 0.005, C = 2; CIFAR-10: η = 0.03, C = 3; B = 216 and β = 0.7 for both;
    DPDL's α = 1.5 on bipartite and fully connected graphs, 2 on rings (``algo.alpha``
    left ``None`` picks it from the topology at run time). ε defaults to the middle of the
    paper's grid.
    """
    if dataset not in SETTINGS:
        raise ConfigError(f"dataset={dataset!r} has no DPDL preset; allowed values: {sorted(SETTINGS)}")
    p = SETTINGS[dataset]
    base = {
        "dataset": dataset,
        "topology": topology,
        "lr": p["lr"],
        "clip": p["clip"],
        "batch_size": 216,
        "momentum": 0.7,
        "epsilon": p["epsilons"][1],
    }
    base.update(changes)
    return ExperimentConfig.from_dict(base)
