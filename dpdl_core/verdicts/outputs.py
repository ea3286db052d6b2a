"""The one type every paper's notebook builder returns (:class:`Output`): the files it
wrote, the claims it checked, and what its notebook shows.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from .claims import COLUMNS

__all__ = ["Output"]


@dataclass(frozen=True)
class Output:
    """What a notebook builder returns.

    Attributes
    ----------
    files : tuple of Path
        The outputs it wrote under ``figures/<profile>/``, named ``<paper>_<key>.*``
        (figures ``.pdf``/``.png``, tables ``.md``/``.tex``, data files; the metadata
        ``.json`` beside each is not listed); empty when it saved nothing.
    claims : DataFrame
        :func:`~dpdl_core.verdicts.claims.claims_frame` of the claims it checked (no rows where it
        checks none).
    tables : mapping of str to DataFrame
        The data its notebook shows or asserts on, by name (e.g. ``table``, ``runs``).
    figure : matplotlib Figure, optional
        The figure it drew (None for a table).
    text : str
        What its notebook prints: a table's Markdown, a figure's caption or notes.
    """

    files: tuple
    claims: pd.DataFrame
    tables: Mapping[str, pd.DataFrame] = field(default_factory=dict)
    figure: Any = None
    text: str = ""

    def __post_init__(self):
        object.__setattr__(self, "files", tuple(Path(f) for f in self.files))
        if not isinstance(self.claims, pd.DataFrame) or list(self.claims.columns) != list(COLUMNS):
            raise TypeError(f"claims must be a claims_frame (columns {list(COLUMNS)}), "
                            f"got {type(self.claims).__name__}")
        bad = sorted(k for k, v in self.tables.items() if not isinstance(v, pd.DataFrame))
        if bad:
            raise TypeError(f"tables {bad} are not DataFrames")
