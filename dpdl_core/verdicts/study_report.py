"""A study's outputs on the report: its figure and its table with the claims under it,
written from the committed store (nothing is computed here)."""
from __future__ import annotations

import pandas as pd

from ..runs.results import ResultStore
from ..runs.studies import Study
from .plotting import caption, save_figure
from .reporting import write_table

__all__ = ["render"]


def render(study: Study, profile: str, table: pd.DataFrame, claims: pd.DataFrame | None = None, figure=None,
           store: ResultStore | None = None) -> str:
    """Write a study notebook's outputs (``<paper>_study_paper_scale``: figure, table with its
    claims under it) into ``figures/<profile>/`` and return the table's Markdown. Nothing is
    computed: the caption names the data of the stored runs, and how many of the study's runs
    are stored. Columns starting with ``_`` are internal and not shown."""
    store = store or study.store()
    status = study.status(store)
    labels = sorted({store.read_header(h)["meta"].get("dataset_label", "?")
                     for h in status.loc[status["stored"], "hash"]})
    note = caption("; ".join(labels) or "no run stored yet", profile,
                   f"{study.title}: paper-scale study rendered from the committed store results/{study.paper}/ "
                   f"({int(status['stored'].sum())} of {len(status)} runs stored; nothing recomputed here)")
    name = f"{study.paper}_study_paper_scale"
    if figure is not None:
        save_figure(figure, name, note)
    shown = table[[c for c in table.columns if not str(c).startswith("_")]]
    rows = [[f"{v:.4g}" if isinstance(v, float) else v for v in r] for r in shown.itertuples(index=False)]
    return write_table(f"{name}_table", study.title, note, list(shown.columns), rows, claims=claims)
