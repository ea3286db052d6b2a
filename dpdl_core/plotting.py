"""Figure output: every saved figure carries the data that ran and the profile.

Beside each figure or table, ``figures/<name>.json`` records its caption and the data and
profile the caption names, for the report site (:mod:`dpdl_core.site`), which cannot read
a caption drawn into a PNG.
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

from .profiles import PROFILES  # noqa: E402

__all__ = ["figures_dir", "save_figure", "caption", "parse_caption", "write_metadata"]

FIGURES_ENV = "DPDL_FIGURES_DIR"
# "profile cpu" in captions and notes, "Profile `cpu`" in the DPDL summary.
_PROFILE_RE = re.compile(r"\bprofile\W{0,2}(" + "|".join(PROFILES) + r")\b", re.IGNORECASE)


def figures_dir() -> Path:
    """``$DPDL_FIGURES_DIR`` or the repository's ``figures/``."""
    env = os.environ.get(FIGURES_ENV)
    path = Path(env) if env else Path(__file__).resolve().parents[1] / "figures"
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
    """Write ``figures/<name>.json``: ``kind`` (figure or table), the caption ``text``, the
    data and profile it names (:func:`parse_caption`), ``extra`` fields and the time."""
    meta = {"name": name, "kind": kind, **parse_caption(text), "caption": text, **extra,
            "written": datetime.now().isoformat(timespec="seconds")}
    path = figures_dir() / f"{name}.json"
    path.write_text(json.dumps(meta, indent=1, ensure_ascii=False) + "\n")
    return path


def save_figure(fig: plt.Figure, name: str, text: str) -> list[Path]:
    """Add ``text`` as a caption under the figure and write ``figures/<name>.{pdf,png}`` and
    its metadata ``figures/<name>.json`` (:func:`write_metadata`)."""
    width_chars = max(40, int(fig.get_figwidth() * 15))
    wrapped = textwrap.fill(text, width_chars)
    lines = wrapped.count("\n") + 1
    fig.text(0.5, 0.003, wrapped, ha="center", va="bottom", fontsize=8, color="0.3")
    fig.tight_layout(rect=(0, min(0.25, 0.035 * lines * 4 / fig.get_figheight()), 1, 1))
    out = []
    for ext in ("pdf", "png"):
        path = figures_dir() / f"{name}.{ext}"
        fig.savefig(path, dpi=150 if ext == "png" else None)
        out.append(path)
    write_metadata(name, "figure", text)
    return out
