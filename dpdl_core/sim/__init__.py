"""The simulation wing: what one training run computes, and nothing about storing or judging it.

Engine and per-sample kernels, algorithms, graphs and schedules, models, data, privacy
accounting, seeding, the training loop, the gradient-inversion attack and its metrics. It
imports nothing outside itself except :mod:`dpdl_core.home` and the paper loader
(:mod:`dpdl_core.papers`). The names below are its face: what the other wings and the
papers use.
"""
from ..home import lazy_face

_PUBLIC = {
    "Engine": "engine",
    "ParamLayout": "engine",
    "consensus_distance": "engine",
    "gaussian_noise": "engine",
    "gossip": "engine",
    "ALGORITHMS": "algorithms",
    "Algorithm": "algorithms",
    "RunContext": "algorithms",
    "Tap": "algorithms",
    "known_algorithms": "algorithms",
    "display_name": "algorithms",
    "get_algorithm": "algorithms",
    "register": "algorithms",
    "resolve_params": "algorithms",
    "DPDPSGD": "algorithms.dp_dpsgd",
    "TOPOLOGIES": "topology",
    "Topology": "topology",
    "TopologyError": "topology",
    "make_topology": "topology",
    "register_topology": "topology",
    "topologies": "topology",
    "SCHEDULES": "schedules",
    "Schedule": "schedules",
    "make_schedule": "schedules",
    "register_schedule": "schedules",
    "MODELS": "models",
    "build_model": "models",
    "conv_block": "models",
    "count_parameters": "models",
    "default_model": "models",
    "register_model": "models",
    "two_block_side": "models",
    "DATASETS": "data",
    "DataUnavailableError": "data",
    "Dataset": "data",
    "DatasetSpec": "data",
    "FULL_DATA_ENV": "data",
    "MIRROR_ENV": "data",
    "default_data_dir": "data",
    "denormalize": "data",
    "load_dataset": "data",
    "mirror_dir": "data",
    "register_dataset": "data",
    "PrivacyError": "privacy",
    "SIGMA_RULES": "privacy",
    "SigmaReport": "privacy",
    "SigmaRequest": "privacy",
    "rdp_epsilon": "privacy",
    "rdp_sigma": "privacy",
    "register_sigma_rule": "privacy",
    "InversionConfig": "attacks",
    "METRIC_NOTE": "image_metrics",
    "Progress": "progress",
    "progress_enabled": "progress",
    "check_choice": "validation",
    "check_int": "validation",
    "training_rounds": "loop",
}
__all__ = sorted(_PUBLIC)
__getattr__, __dir__ = lazy_face(__name__, _PUBLIC)
