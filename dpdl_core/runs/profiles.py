"""Scale profiles (``smoke``, ``cpu``, ``paper``).

Each paper keeps its profiles in ``dpdl_core/papers/<paper>/profiles.yaml``, one top-level
section per profile naming, per notebook group, the grid and scale it runs at; the
package-level notebooks read ``dpdl_core/runs/profiles.yaml``. Notebooks print the choice on
every figure and table.
"""
from __future__ import annotations

from importlib import resources

import yaml

__all__ = ["PROFILES", "active_profile", "load_profile"]

PROFILES = ("smoke", "cpu", "paper")
# The last profile loaded: the one a notebook runs at, whose folder its outputs go to
# (:func:`dpdl_core.verdicts.plotting.figures_dir`).
_ACTIVE: list[str] = []


def load_profile(name: str, paper: str | None = None) -> dict:
    """The section ``name`` of ``paper``'s profiles (or of the package-level ones).

    Raises
    ------
    ValueError
        For an unknown profile or paper, listing the allowed ones.
    """
    if name not in PROFILES:
        raise ValueError(f"profile={name!r} is not known; allowed values: {list(PROFILES)}")
    _ACTIVE[:] = [name]
    if paper is None:
        path = resources.files("dpdl_core.runs").joinpath("profiles.yaml")
    else:
        from ..papers import paper_dir

        path = paper_dir(paper) / "profiles.yaml"  # validates the name; a paper may live outside the package
    return yaml.safe_load(path.read_text())[name]


def active_profile() -> str | None:
    """The profile :func:`load_profile` last loaded in this process, or ``None``."""
    return _ACTIVE[0] if _ACTIVE else None
