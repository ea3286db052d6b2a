"""Figure output: every saved figure carries the data that ran and the profile.

Outputs go to ``figures/<profile>/`` (:func:`figures_dir`), so that a ``smoke`` run never
replaces a ``cpu`` figure. Beside each figure or table, ``figures/<profile>/<name>.json``
records its caption and the data and profile the caption names, for the report site
(:mod:`dpdl_core.verdicts.site`), which cannot read a caption drawn into a PNG.
"""
from __future__ import annotations

import json
import os
import re
import textwrap
from datetime import datetime
from pathlib import Path

import matplotlib

matplotlib.use(os.environ.get("MPLBACKEND", "Agg"))
import matplotlib.pyplot as plt  # noqa: E402

from ..home import REPO_ROOT
from ..runs.profiles import PROFILES, active_profile  # noqa: E402

__all__ = ["figures_dir", "figures_root", "legend_below", "loss_accuracy_panels", "save_figure", "series_colours",
           "caption", "parse_caption", "write_metadata"]

FIGURES_ENV = "DPDL_FIGURES_DIR"
# The profile whose outputs a process writes when a writer is not told (`make figures` sets it
# for each notebook it executes).
PROFILE_ENV = "DPDL_PROFILE"
# "profile cpu" in captions and notes, "Profile `cpu`" in the DPDL summary.
_PROFILE_RE = re.compile(r"\bprofile\W{0,2}(" + "|".join(PROFILES) + r")\b", re.IGNORECASE)


def figures_root() -> Path:
    """``$DPDL_FIGURES_DIR`` or the repository's ``figures/``: one subfolder per profile."""
    env = os.environ.get(FIGURES_ENV)
    return Path(env) if env else REPO_ROOT / "figures"


def figures_dir(profile: str | None = None) -> Path:
    """The folder of ``profile``'s figures and tables, ``<figures_root()>/<profile>/`` (created).

    ``profile`` defaults to ``$DPDL_PROFILE``, else the profile last loaded in this process
    (:func:`dpdl_core.runs.profiles.active_profile`: a notebook's ``load_profile(profile)``).

    Raises
    ------
    ValueError
        When no profile is given, set or loaded, or it is not a known one.
    """
    profile = profile or os.environ.get(PROFILE_ENV) or active_profile()
    if profile not in PROFILES:
        raise ValueError(f"outputs are kept per profile and none is known here (got {profile!r}); pass one of "
                         f"{list(PROFILES)}, set ${PROFILE_ENV}, or call load_profile(profile) first")
    path = figures_root() / profile
    path.mkdir(parents=True, exist_ok=True)
    return path


def caption(dataset_label: str, profile: str, extra: str = "") -> str:
    """Standard caption: ``MNIST subset, 17,435 train images · profile cpu · ...``."""
    parts = [dataset_label, f"profile {profile}"] + ([extra] if extra else [])
    return " · ".join(parts)


def parse_caption(text: str) -> dict:
    """The data label and profile a caption names: the inverse of :func:`caption`, which also
    reads the tables' ``"<data>; profile <name>; ..."`` notes.

    Returns
    -------
    dict
        ``dataset`` (the text before the profile, ``None`` if empty) and ``profile``
        (``None`` where the text names no profile).
    """
    m = _PROFILE_RE.search(text)
    if not m:
        return {"dataset": None, "profile": None}
    # The data label is what precedes the profile on its line, less separators and emphasis.
    head = text[: m.start()].split("\n")[-1].strip(" ·;,_*")
    return {"dataset": head or None, "profile": m.group(1).lower()}


def write_metadata(name: str, kind: str, text: str, **extra) -> Path:
    """Write ``figures/<profile>/<name>.json``: ``kind`` (figure or table), the caption
    ``text``, the data and profile it names (:func:`parse_caption`; that profile's folder),
    ``extra`` fields and the time."""
    meta = {"name": name, "kind": kind, **parse_caption(text), "caption": text, **extra,
            "written": datetime.now().isoformat(timespec="seconds")}
    path = figures_dir(meta["profile"]) / f"{name}.json"
    path.write_text(json.dumps(meta, indent=1, ensure_ascii=False) + "\n")
    return path


def series_colours(names) -> dict:
    """One distinct colour per name, in order (tab10; tab20 beyond ten names), so that a
    series keeps its colour in every panel of a figure."""
    names = list(dict.fromkeys(names))
    palette = plt.get_cmap("tab10" if len(names) <= 10 else "tab20").colors
    return {n: palette[i % len(palette)] for i, n in enumerate(names)}


def legend_below(fig: plt.Figure, handles: list, title: str | None = None, ncol: int | None = None):
    """One legend for the whole figure, centred below its panels, never over a curve; the
    panels are laid out above it here and again by :func:`save_figure` (above the caption)."""
    legend = fig.legend(handles=handles, loc="lower center", ncol=ncol or min(len(handles), 6), fontsize=9,
                        frameon=False, title=title, title_fontsize=8)
    fig._legend_below = legend  # save_figure keeps room for it
    _layout_above(fig, 0.0)
    return legend


# The two curves a study figure shows per cell, one panel each (top, then bottom).
LOSS_ACCURACY = (("train_loss_mean", "training loss", "log"), ("avg_test_acc", "average-model test accuracy", "linear"))


def loss_accuracy_panels(panels: list, ncols: int = 4) -> plt.Figure:
    """A pair of panels per cell, training loss above average-model test accuracy (both
    against round), ``ncols`` pairs a row.

    Parameters
    ----------
    panels : list of (title, curves)
        ``curves``: (history, style) pairs; a history is a stored run's long frame (``round``,
        ``metric``, ``value``), a style the keyword arguments of its line (colour, line style).
    """
    ncols = min(ncols, max(1, len(panels)))
    nrows = -(-max(1, len(panels)) // ncols)
    fig, axes = plt.subplots(2 * nrows, ncols, figsize=(4.2 * ncols, 3.1 * 2 * nrows), squeeze=False)
    for i in range(nrows * ncols):
        pair = axes[2 * (i // ncols), i % ncols], axes[2 * (i // ncols) + 1, i % ncols]
        if i >= len(panels):
            for ax in pair:
                ax.set_axis_off()
            continue
        title, curves = panels[i]
        for hist, style in curves:
            for ax, (metric, _, _) in zip(pair, LOSS_ACCURACY):
                h = hist[hist["metric"] == metric].sort_values("round")
                ax.plot(h["round"], h["value"], lw=0.9, alpha=0.85, **style)
        for ax, (_, label, scale) in zip(pair, LOSS_ACCURACY):
            ax.set(ylabel=label, yscale=scale)
        pair[0].set_title(textwrap.fill(title, 42), fontsize=9)
        pair[1].set_xlabel("round")
    return fig


def _layout_above(fig: plt.Figure, bottom: float) -> None:
    """Lay the panels out above ``bottom`` (a fraction of the height) and, if the figure has
    a :func:`legend_below`, that legend between the two."""
    legend = getattr(fig, "_legend_below", None)
    if legend is not None:
        legend.set_bbox_to_anchor((0.5, bottom), transform=fig.transFigure)
        bottom += legend.get_window_extent(fig.canvas.get_renderer()).height / fig.bbox.height + 0.005
    fig.tight_layout(rect=(0, min(0.4, bottom), 1, 1))


def save_figure(fig: plt.Figure, name: str, text: str) -> list[Path]:
    """Add ``text`` as a caption under the figure and write ``figures/<profile>/<name>.{pdf,png}``
    (the profile ``text`` names) and its metadata ``<name>.json`` (:func:`write_metadata`)."""
    width_chars = max(40, int(fig.get_figwidth() * 15))
    wrapped = textwrap.fill(text, width_chars)
    lines = wrapped.count("\n") + 1
    fig.text(0.5, 0.003, wrapped, ha="center", va="bottom", fontsize=8, color="0.3")
    _layout_above(fig, min(0.25, 0.035 * lines * 4 / fig.get_figheight()))
    out = []
    for ext in ("pdf", "png"):
        path = figures_dir(parse_caption(text)["profile"]) / f"{name}.{ext}"
        fig.savefig(path, dpi=150 if ext == "png" else None)
        out.append(path)
    write_metadata(name, "figure", text)
    return out
