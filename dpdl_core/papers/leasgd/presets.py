"""The LEASGD settings (spec §2; the paper reports almost none) as configs.

Every value not in the paper is the spec's recommendation: B = 64, η = 0.05, C = 1,
δ = 1e-5, ρ = 4.5 (β = pα = 0.9, EASGD's default, with p = 4), τ = 1, k = 10, weight
decay 1e-4, IID equal shards, plain SGD (momentum 0) for both algorithms. D-PSGD runs on
a ring with W_ii = W_{i,i±1} = 1/3 (Metropolis–Hastings); LEASGD on the fully connected
graph, of which each communication step uses only the leader–follower links.
"""
from __future__ import annotations

from ...runs import ConfigError, ExperimentConfig

__all__ = ["ALGORITHMS", "IID_ALPHA", "MODELS", "NONPRIVATE_CLIP", "SETTINGS", "preset"]

# The two algorithms of the paper: config name → (topology, algo options).
ALGORITHMS = {
    "leasgd": ("fully_connected", {"rho": 4.5, "tau": 1, "k": 10, "leaders_per_follower": 4, "weight_decay": 1e-4}),
    "dp_dpsgd": ("ring", {}),
}
# MLP for MNIST, CNN for CIFAR-10 ("3-layer MLP", "3-layer CNN", Sec. 4).
MODELS = {"mnist": "leasgd_mlp", "cifar10": "leasgd_cnn"}
# IID equal shards: the per-agent Dirichlet split gives every worker ⌊n/m⌋ samples; at
# α_d = 1000 the class proportions are uniform up to sampling noise.
IID_ALPHA = 1000.0
# Non-private runs (Figure 2): no noise and no clipping. The package's algorithms always
# clip per sample, so "no clipping" is a threshold no per-sample gradient reaches.
NONPRIVATE_CLIP = 1e6
SETTINGS = {
    "batch_size": 64,
    "lr": 0.05,
    "clip": 1.0,
    "delta": 1e-5,
    "momentum": 0.0,
    "partition": "per_agent",
    "alpha_d": IID_ALPHA,
    "sigma_rule": "leasgd_common",
}


def preset(dataset: str, algorithm: str = "leasgd", n_agents: int = 5, **changes) -> ExperimentConfig:
    """A config with the spec's settings for ``dataset`` and ``algorithm``.

    Parameters
    ----------
    dataset : {"mnist", "cifar10"}
    algorithm : {"leasgd", "dp_dpsgd"}
    n_agents : int
        m.
    **changes
        Any config field; ``algo`` entries are merged into the preset's options.

    Raises
    ------
    ConfigError
        For another dataset or algorithm, naming the allowed values.
    """
    if dataset not in MODELS:
        raise ConfigError(f"dataset={dataset!r} has no LEASGD preset; allowed values: {sorted(MODELS)}")
    if algorithm not in ALGORITHMS:
        raise ConfigError(f"algorithm={algorithm!r} has no LEASGD preset; allowed values: {sorted(ALGORITHMS)}")
    topology, algo = ALGORITHMS[algorithm]
    base = {
        **SETTINGS,
        "dataset": dataset,
        "model": MODELS[dataset],
        "algorithm": algorithm,
        "topology": topology,
        "n_agents": n_agents,
    }
    base["algo"] = {**algo, **changes.pop("algo", {})}
    base.update(changes)
    return ExperimentConfig.from_dict(base)
