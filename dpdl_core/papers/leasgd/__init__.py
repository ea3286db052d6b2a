"""LEASGD (Cheng, Yu, Hu, Yan, Li, Li, Chen, 2018): leader–follower elastic averaging SGD
with differential privacy — the algorithm, its σ rule, presets, Figure 2, Table 1 and the
claims checks. See README.md beside this file."""
from . import algorithm, models, privacy  # noqa: F401  (register LEASGD, its models, the leasgd_common σ rule)
from .presets import preset

TITLE = "LEASGD: an Efficient and Privacy-Preserving Decentralized Algorithm for Distributed Learning"

__all__ = ["TITLE", "configs", "preset"]


def configs(profile: str, group: str | None = None) -> list:
    """The runs this paper's notebooks sweep at ``profile``, by group, or only ``group``
    (``python -m dpdl_core plan``): :func:`.figures.configs`."""
    from .figures import configs as groups  # the builders pull in matplotlib: import on use

    return groups(profile, group)
