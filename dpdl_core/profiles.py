"""Scale profiles (``smoke``, ``cpu``, ``paper``), stored as YAML in ``dpdl_core/profiles``.

Each file names, per notebook, the grid and scale that notebook runs at. Notebooks read
their section with :func:`load_profile` and print the choice on every figure.
"""
from __future__ import annotations

from importlib import resources

import yaml

__all__ = ["PROFILES", "load_profile"]

PROFILES = ("smoke", "cpu", "paper")


def load_profile(name: str) -> dict:
    """The profile ``name`` as a dict.

    Raises
    ------
    ValueError
        For an unknown profile, listing the allowed ones.
    """
    if name not in PROFILES:
        raise ValueError(f"profile={name!r} is not known; allowed values: {list(PROFILES)}")
    text = resources.files("dpdl_core").joinpath("profiles", f"{name}.yaml").read_text()
    return yaml.safe_load(text)
