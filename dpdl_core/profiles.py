"""Scale profiles (``smoke``, ``cpu``, ``paper``).

Each paper keeps its profiles in ``dpdl_core/papers/<paper>/profiles.yaml``, one top-level
section per profile naming, per notebook group, the grid and scale it runs at; the
package-level notebooks read ``dpdl_core/profiles.yaml``. Notebooks print the choice on
every figure and table.
"""
from __future__ import annotations

from importlib import resources

import yaml

__all__ = ["PROFILES", "load_profile"]

PROFILES = ("smoke", "cpu", "paper")


def load_profile(name: str, paper: str | None = None) -> dict:
    """The section ``name`` of ``paper``'s profiles (or of the package-level ones).

    Raises
    ------
    ValueError
        For an unknown profile or paper, listing the allowed ones.
    """
    if name not in PROFILES:
        raise ValueError(f"profile={name!r} is not known; allowed values: {list(PROFILES)}")
    if paper is None:
        path = resources.files("dpdl_core").joinpath("profiles.yaml")
    else:
        from .papers import get_paper

        get_paper(paper)  # validates the name
        path = resources.files("dpdl_core").joinpath("papers", paper, "profiles.yaml")
    return yaml.safe_load(path.read_text())[name]
