"""PDSL (Wang, Yuan, Wang, Li): Shapley-weighted private decentralized learning — Algorithm 1,
its σ rules (Theorem 1 and the per-message Gaussian rule), presets, figures and tables.
See README.md beside this file."""
from . import algorithm, models, privacy  # noqa: F401  (register PDSL, its models and σ rules)
from .presets import SETTINGS, preset

TITLE = "PDSL: Privacy-Preserved Decentralized Stochastic Learning with Heterogeneous Data Distribution"

__all__ = ["SETTINGS", "TITLE", "configs", "preset"]


def configs(profile: str, group: str | None = None) -> list:
    """The runs this paper's notebooks sweep at ``profile``, by group, or only ``group``
    (``python -m dpdl_core plan``): :func:`.figures.configs`."""
    from .figures import configs as groups  # the builders pull in matplotlib: import on use

    return groups(profile, group)
