"""Figure output: every saved figure carries the data that ran and the profile."""
from __future__ import annotations

import os
import textwrap
from pathlib import Path

import matplotlib

matplotlib.use(os.environ.get("MPLBACKEND", "Agg"))
import matplotlib.pyplot as plt  # noqa: E402

__all__ = ["figures_dir", "save_figure", "caption"]

FIGURES_ENV = "DPDL_FIGURES_DIR"


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


def save_figure(fig: plt.Figure, name: str, text: str) -> list[Path]:
    """Add ``text`` as a caption under the figure and write ``figures/<name>.{pdf,png}``."""
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
    return out
