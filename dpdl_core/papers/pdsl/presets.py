"""The PDSL paper's settings (§VI-A, L316–336) as configs, for PDSL and its four baselines.

Stated by the paper: batch 250; MNIST α = 0.5, γ = 0.001; CIFAR-10 α = 0.7, γ = 0.01;
Dir(μ·1) with μ = 0.25; M ∈ {10, 20}; fully connected, bipartite and ring graphs; Q = 2,000
test images shared by all agents; ε ∈ {0.08, 0.1, 0.3} (MNIST) and {0.5, 0.7, 1} (CIFAR-10).
Not stated, chosen as the spec recommends (§3): δ = 1e-5; C = 2 (MNIST) and 3 (CIFAR-10),
as in the DPDL sister paper; T = 200; the 16/32-channel CNNs ``pdsl_mnist`` and
``pdsl_cifar``; σ by the per-message Gaussian rule σ_b = 2C√(2 ln(1.25/δ))/ε for every
method (Theorem 1's σ is infinite for Algorithm 1 as written: ``docs/pdsl.md``);
DP-NET-FLEET with K = 5 local steps.
"""
from __future__ import annotations

from ...runs import ConfigError, ExperimentConfig

__all__ = ["ALGORITHMS", "SETTINGS", "TOPOLOGIES", "preset"]

SETTINGS = {
    "mnist": {"lr": 0.001, "momentum": 0.5, "clip": 2.0, "model": "pdsl_mnist", "epsilons": (0.08, 0.1, 0.3)},
    "cifar10": {"lr": 0.01, "momentum": 0.7, "clip": 3.0, "model": "pdsl_cifar", "epsilons": (0.5, 0.7, 1.0)},
}
TOPOLOGIES = ("fully_connected", "bipartite", "ring")
# PDSL first, then the baselines in the order of the paper's tables.
ALGORITHMS = ("pdsl", "dp_dpsgd", "dp_cga", "muffliato", "dp_netfleet")
# Options the spec fixes where the paper is silent.
BASELINE_OPTIONS = {"dp_netfleet": {"local_steps": 5}}


def preset(dataset: str, algorithm: str = "pdsl", topology: str = "fully_connected", **changes) -> ExperimentConfig:
    """A config with the PDSL paper's settings for ``dataset``.

    Parameters
    ----------
    dataset : {"mnist", "cifar10"}
    algorithm : str
        ``pdsl`` or a baseline; baselines run at PDSL's settings (spec §3).
    topology : {"fully_connected", "bipartite", "ring"}
    **changes
        Any config field (``epsilon``, ``n_agents``, ``rounds``, ``algo``, ...); ``algo``
        is merged into the preset's options.

    Raises
    ------
    ConfigError
        For a dataset without a preset.
    """
    if dataset not in SETTINGS:
        raise ConfigError(f"dataset={dataset!r} has no PDSL preset; allowed values: {sorted(SETTINGS)}")
    p = SETTINGS[dataset]
    base = {
        "dataset": dataset,
        "model": p["model"],
        "algorithm": algorithm,
        "algo": dict(BASELINE_OPTIONS.get(algorithm, {})),
        "topology": topology,
        "n_agents": 10,
        "alpha_d": 0.25,
        "epsilon": p["epsilons"][-1],
        "delta": 1e-5,
        "sigma_rule": "per_message",
        "rounds": 200,
        "batch_size": 250,
        "lr": p["lr"],
        "momentum": p["momentum"],
        "clip": p["clip"],
        "validation_samples": 2000,
        "eval_every": 5,
    }
    base["algo"].update(changes.pop("algo", {}))
    base.update(changes)
    return ExperimentConfig.from_dict(base)
