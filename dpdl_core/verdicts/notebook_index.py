"""The notebooks of the package by folder (``notebooks/overview`` and one folder per paper):
what ``make figures`` executes and the report site renders. Imports nothing of the package,
so the pipeline and the site share it without importing each other."""
from __future__ import annotations

from pathlib import Path

from ..home import REPO_ROOT

__all__ = ["notebook_folders", "notebook_paths"]

ROOT = REPO_ROOT


def notebook_folders(notebook_dir: Path | None = None) -> list[str]:
    """The folders of ``notebooks/``: ``overview`` first, then the papers."""
    names = sorted(p.name for p in (notebook_dir or ROOT / "notebooks").iterdir()
                   if p.is_dir() and not p.name.startswith("."))
    return sorted(names, key=lambda n: n != "overview")


def notebook_paths(notebook_dir: Path | None = None, papers: list[str] | None = None) -> list[Path]:
    """Notebooks of the given folders (default all), folder by folder, in name order.

    Raises
    ------
    ValueError
        For a folder that does not exist, listing the allowed ones.
    """
    root = notebook_dir or ROOT / "notebooks"
    folders = notebook_folders(root)
    unknown = sorted(set(papers or []) - set(folders))
    if unknown:
        raise ValueError(f"paper={unknown} has no notebook folder; allowed values: {folders}")
    return [nb for f in folders if not papers or f in papers for nb in sorted((root / f).glob("*.ipynb"))]
