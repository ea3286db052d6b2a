"""Algorithm registry. Adding an algorithm: write a module with a subclass of
:class:`~dpdl_core.algorithms.base.Algorithm` and list it in ``ALGORITHMS``."""
from __future__ import annotations

from dataclasses import asdict, fields

from .base import Algorithm, RunContext
from .dp_cga import DPCGA
from .dp_dpsgd import DPDPSGD
from .dp_netfleet import DPNetFleet
from .dpdl import DPDL
from .muffliato import Muffliato

ALGORITHMS: dict[str, type[Algorithm]] = {cls.name: cls for cls in (DPDL, DPDPSGD, Muffliato, DPNetFleet, DPCGA)}
# Names as the DPDL paper prints them (legends, tables).
DISPLAY_NAMES = {"dpdl": "DPDL", "dp_dpsgd": "DP-DPSGD", "muffliato": "MUFFLIATO", "dp_netfleet": "DP-NETFLEET", "dp_cga": "DP-CGA"}

__all__ = ["ALGORITHMS", "DISPLAY_NAMES", "Algorithm", "RunContext", "get_algorithm", "resolve_params"]


def get_algorithm(name: str) -> type[Algorithm]:
    if name not in ALGORITHMS:
        raise ValueError(f"algorithm={name!r} is not known; allowed values: {sorted(ALGORITHMS)}")
    return ALGORITHMS[name]


def resolve_params(name: str, options: dict) -> dict:
    """Validate ``options`` against the algorithm's ``Params`` and fill in defaults.

    Raises
    ------
    ValueError
        Naming unknown options and the allowed ones, or a bad value.
    """
    cls = get_algorithm(name)
    allowed = {f.name for f in fields(cls.Params)}
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise ValueError(f"unknown option(s) {unknown} for algorithm {name!r}; allowed: {sorted(allowed)}")
    return asdict(cls.Params(**options))
