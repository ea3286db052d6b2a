"""The DPDL paper (Yuan, Xiao, Wang, Li): Algorithm 1, its σ rules, presets, figures,
tables, gradient-inversion threat models and claims checks. See README.md beside this file."""
from . import algorithm, models, privacy  # noqa: F401  (register DPDL, the authors' models, the σ rules)
from .presets import SETTINGS, VARIANTS, preset

TITLE = "DPDL: Towards Differential Privacy Preservation in Decentralized Stochastic Learning on Non-IID Data"

__all__ = ["SETTINGS", "TITLE", "VARIANTS", "configs", "preset", "summary_markdown"]


def configs(profile: str, group: str | None = None) -> list:
    """The runs this paper's notebooks sweep at ``profile``, by group, or only ``group``
    (``python -m dpdl_core plan``): :func:`.results.configs`."""
    from .results import configs as groups  # the builders pull in matplotlib: import on use

    return groups(profile, group)


def summary_markdown(profile: str) -> str:
    """The reproduced-vs-paper summary of the accuracy tables' stored runs (``python -m
    dpdl_core summary``): :func:`.results.summary_markdown`; FileNotFoundError when none is stored."""
    from .results import summary_markdown as summary

    return summary(profile)
