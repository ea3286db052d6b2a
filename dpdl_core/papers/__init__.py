"""Paper plug-ins: one subpackage per paper (``dpdl``, ``pdsl``, ``leasgd``, ``straggler``).

A paper package holds what only that paper needs: its own algorithm (registered with
:func:`dpdl_core.algorithms.register`), its presets, σ rules, ``profiles.yaml`` (one section
per profile: ``smoke``, ``cpu``, ``paper``), reference numbers, figure and table builders
and claims checks. Its notebooks live in ``notebooks/<paper>/``. Adding a paper is one new
folder here plus its notebooks: the generic core finds it, and no generic module changes.
"""
from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

__all__ = ["PAPERS", "get_paper", "load_all"]

PAPERS: tuple[str, ...] = tuple(sorted(m.name for m in pkgutil.iter_modules(__path__) if m.ispkg))


def get_paper(name: str) -> ModuleType:
    """Import paper ``name`` (which registers its algorithms, models and σ rules)."""
    if name not in PAPERS:
        raise ValueError(f"paper={name!r} is not known; allowed values: {list(PAPERS)}")
    return importlib.import_module(f"{__name__}.{name}")


def load_all() -> None:
    """Import every paper package."""
    for name in PAPERS:
        get_paper(name)
