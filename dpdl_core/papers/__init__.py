"""Paper plug-ins: one subpackage per paper (``dpdl``, ``pdsl``, ``leasgd``, ``straggler``).

A paper package holds what only that paper needs: its own algorithm (registered with
:func:`dpdl_core.sim.algorithms.register`), its presets, σ rules, topologies, models,
``profiles.yaml`` (one section per profile: ``smoke``, ``cpu``, ``paper``), reference
numbers, figure and table builders and its claims. What it must expose is written down in
:mod:`dpdl_core.verdicts.paper_contract`. Its notebooks live in ``notebooks/<paper>/``. Adding a
paper is one new folder here (or in a folder named by ``$DPDL_PAPERS_PATH``) plus its
notebooks: the generic core finds it, and no generic module changes.

Papers load lazily and independently: a paper is imported when it is first asked for, and
one that fails to import fails alone — :func:`load_all` warns (:class:`PaperImportWarning`)
and goes on with the others; :func:`get_paper` raises :class:`PaperImportError` naming it.
"""
from __future__ import annotations

import importlib
import os
import pkgutil
import warnings
from pathlib import Path
from types import ModuleType

__all__ = ["PAPERS", "PAPERS_PATH_ENV", "PaperImportError", "PaperImportWarning", "broken_papers", "get_paper",
           "load_all", "paper_dir", "paper_part", "papers_with"]

# Extra folders holding paper packages (os.pathsep-separated), searched after this one.
PAPERS_PATH_ENV = "DPDL_PAPERS_PATH"
__path__.extend(p for p in os.environ.get(PAPERS_PATH_ENV, "").split(os.pathsep) if p)

PAPERS: tuple[str, ...] = tuple(sorted({m.name for m in pkgutil.iter_modules(__path__) if m.ispkg}))
# Papers whose import failed: name -> the error, said once and then on every request.
_BROKEN: dict[str, str] = {}


class PaperImportError(ImportError):
    """A paper package failed to import (the others are unaffected)."""


class PaperImportWarning(UserWarning):
    """:func:`load_all` skipped a paper that failed to import, or ``$DPDL_PAPERS_PATH`` names
    a folder that does not exist."""


def _warn_of_missing_folders() -> None:
    """Warn of each folder of ``$DPDL_PAPERS_PATH`` that does not exist: a typo would
    otherwise just lose that folder's papers."""
    for folder in os.environ.get(PAPERS_PATH_ENV, "").split(os.pathsep):
        if folder and not os.path.isdir(folder):
            warnings.warn(f"${PAPERS_PATH_ENV} names {folder}, which is not a folder: no paper is loaded from it; "
                          f"fix the path (folders holding paper packages, separated by {os.pathsep!r})",
                          PaperImportWarning, stacklevel=3)


_warn_of_missing_folders()


def get_paper(name: str) -> ModuleType:
    """Import paper ``name`` (which registers its algorithms, models, topologies and σ rules).

    Raises
    ------
    ValueError
        For an unknown paper, listing the known ones.
    PaperImportError
        When the paper's package fails to import; the message names the paper and the error.
    """
    if name not in PAPERS:
        raise ValueError(f"paper={name!r} is not known; allowed values: {list(PAPERS)}")
    if name in _BROKEN:
        raise PaperImportError(_BROKEN[name])
    try:
        return importlib.import_module(f"{__name__}.{name}")
    except Exception as exc:  # any error in a paper's code: it must not take the others down
        _BROKEN[name] = f"paper {name!r} failed to import ({paper_dir(name)}): {type(exc).__name__}: {exc}"
        raise PaperImportError(_BROKEN[name]) from exc


def load_all() -> None:
    """Import every paper package; one that fails is skipped with a :class:`PaperImportWarning`."""
    for name in PAPERS:
        if name in _BROKEN:
            continue
        try:
            get_paper(name)
        except PaperImportError as exc:
            warnings.warn(f"{exc}; the other papers are loaded", PaperImportWarning, stacklevel=2)


def broken_papers() -> dict[str, str]:
    """The papers that failed to import so far, with their messages."""
    return dict(_BROKEN)


def paper_dir(name: str) -> Path:
    """The folder of paper ``name`` (its ``profiles.yaml``, ``reference/``, README), found on
    the search path without importing it."""
    for root in __path__:
        path = Path(root) / name
        if (path / "__init__.py").exists():
            return path
    raise ValueError(f"paper={name!r} is not known; allowed values: {list(PAPERS)}")


def papers_with(part: str) -> list[str]:
    """The papers whose package has module ``part`` (``study``, ``claims``, ``statements``),
    in the package and on ``$DPDL_PAPERS_PATH`` alike, found without importing them."""
    return [name for name in PAPERS if (paper_dir(name) / f"{part}.py").is_file()]


def paper_part(name: str, part: str) -> ModuleType:
    """Module ``part`` of paper ``name`` (the paper is loaded first, as :func:`get_paper`)."""
    get_paper(name)
    return importlib.import_module(f"{__name__}.{name}.{part}")
