"""Algorithm registry.

Adding an algorithm is one new module with a decorated subclass of
:class:`~dpdl_core.sim.algorithms.base.Algorithm`::

    @register
    class MyAlgorithm(Algorithm):
        name = "my_algorithm"        # the config's ``algorithm`` value
        display_name = "MY-ALGO"     # legends and tables
        Params = MyParams            # frozen dataclass of options (the config's ``algo``)

The baselines shared by several papers live here; a paper's own method lives in its
package under :mod:`dpdl_core.papers` and registers the same way when the paper loads.
"""
from __future__ import annotations

from dataclasses import asdict, fields

from ..registry import load_plugins
from .base import ALGORITHMS, Algorithm, RunContext, Tap, register

__all__ = ["ALGORITHMS", "Algorithm", "RunContext", "Tap", "known_algorithms", "display_name", "get_algorithm",
           "register", "resolve_params"]

def known_algorithms() -> dict[str, type[Algorithm]]:
    """Every registered algorithm, the papers' own included."""
    load_plugins()
    return ALGORITHMS


def get_algorithm(name: str) -> type[Algorithm]:
    known = known_algorithms()
    if name not in known:
        raise ValueError(f"algorithm={name!r} is not known; allowed values: {sorted(known)}")
    return known[name]


def display_name(name: str) -> str:
    """The name a paper prints for algorithm ``name`` (e.g. ``dp_dpsgd`` → ``DP-DPSGD``)."""
    return get_algorithm(name).display_name


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


# The shared baselines register on import.
from . import dp_cga, dp_dpsgd, dp_netfleet, muffliato  # noqa: E402,F401
