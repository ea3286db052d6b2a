"""The scorecard: how far our run of each paper's own method sits from the paper's number,
per claim of the README's table (:func:`scorecard_frame`, :func:`scorecard_figure`).

The distance is the calibration gap in units of its margin, (ours − paper) / margin: inside
±1 the claim's setting is calibrated and its verdict measures the paper; outside, the verdict
judges our reading. A paper whose method does not train as written has no gap to draw; its
claims are listed at the edge as "not reproducible as written".
"""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

__all__ = ["parse_calibration", "scorecard_figure", "scorecard_frame"]

# One cell of a calibration note (dpdl_core.verdicts.claims.calibration's format).
_NOTE = re.compile(r"(?P<label>[^;]+?) (?P<ours>-?[\d.]+(?:e[-+]?\d+)?)(?P<unit>\S*) vs paper "
                   r"(?P<paper>-?[\d.]+(?:e[-+]?\d+)?)\S* \((?P<gap>[-+][\d.e+-]+), margin (?P<margin>[\d.e+-]+)\)")


def parse_calibration(note: str) -> list[dict]:
    """The cells of a calibration note: label, ours, paper, gap and margin of each."""
    return [{"label": m["label"].strip(), "ours": float(m["ours"]), "paper": float(m["paper"]),
             "gap": float(m["gap"]), "margin": float(m["margin"])} for m in _NOTE.finditer(str(note))]


def scorecard_frame(claims: pd.DataFrame, every: pd.DataFrame) -> pd.DataFrame:
    """One row per claim of the papers that has a calibration to show: paper, claim, its
    standing, and the largest calibration gap of the setting that decides it (the README
    row's) in units of the margin (``z``; NaN for a method that does not train as written)."""
    from .first_screen import _where, short, standing

    rows = []
    own = every[(every["kind"] == "paper").to_numpy() & ~every["by_construction"].astype(bool).to_numpy()]
    for spec in own.itertuples(index=False):
        g = claims[(claims["paper"] == spec.paper) & (claims["id"] == spec.id)]
        if g.empty or not g["calibration"].isin(["calibrated", "not calibrated", "not reproducible as written"]).any():
            continue
        state, shown = standing(g)
        cells = parse_calibration(shown["calibration_note"])
        z = max((c["gap"] / c["margin"] for c in cells if c["margin"] > 0), key=abs, default=np.nan)
        rows.append({"paper": spec.paper, "claim": f"{short(spec.claim, 44, asides=True)} ({_where(spec.where)})",
                     "standing": state, "z": z,
                     "diverged": bool((g["calibration"] == "not reproducible as written").any())})
    return pd.DataFrame(rows, columns=["paper", "claim", "standing", "z", "diverged"])


def scorecard_figure(frame: pd.DataFrame):
    """Each claim's calibration gap over its margin, one line a claim grouped by paper: the
    band ±1 is calibrated; a method that diverges as written is drawn at the right edge."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    frame = frame.iloc[::-1].reset_index(drop=True)
    fig, ax = plt.subplots(figsize=(8.5, 0.28 * len(frame) + 1.4))
    edge = max(6.0, float(np.nanmax(np.abs(frame["z"]))) * 1.1 if frame["z"].notna().any() else 6.0)
    ax.axvspan(-1, 1, color="#d8ecd8", label="calibrated (within the margin)")
    ax.axvline(0, color="grey", lw=0.8)
    colours = {"dpdl": "#1f77b4", "leasgd": "#ff7f0e", "pdsl": "#d62728", "straggler": "#2ca02c"}
    for i, r in frame.iterrows():
        x = edge if r["diverged"] else r["z"]
        ax.plot(x, i, "x" if r["diverged"] else "o", color=colours.get(r["paper"], "black"), ms=6)
    for paper, colour in colours.items():
        if (frame["paper"] == paper).any():
            ax.plot([], [], "o", color=colour, label=paper.upper() if paper != "straggler" else "Straggler")
    if frame["diverged"].any():
        ax.plot([], [], "x", color="black", label="diverges as written (no gap)")
    ax.set_yticks(range(len(frame)), [f"{r.paper}: {r.claim}" for r in frame.itertuples()], fontsize=7)
    ax.set_xlim(-edge * 1.05, edge * 1.05)
    ax.set_xlabel("(our run of the paper's method − the paper's number) / calibration margin")
    ax.set_title("How far each claim's operating point is from the paper's own number", fontsize=9)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    fig.tight_layout()
    return fig
