"""Execute the notebooks with papermill (``make figures``) and build the HTML report.

Notebooks live in ``notebooks/<folder>/`` (``overview`` and one folder per paper). Sources
are never modified: executed copies go to ``build/notebooks/<profile>/<folder>/``. Figures
and tables are written by the notebooks into ``figures/`` through :mod:`dpdl_core.plotting`.
"""
from __future__ import annotations

import time
from pathlib import Path

__all__ = ["execute_notebooks", "build_report", "notebook_paths"]

ROOT = Path(__file__).resolve().parents[1]


def notebook_folders(notebook_dir: Path | None = None) -> list[str]:
    """The folders of ``notebooks/``: ``overview`` first, then the papers."""
    names = sorted(p.name for p in (notebook_dir or ROOT / "notebooks").iterdir() if p.is_dir() and not p.name.startswith("."))
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


def execute_notebooks(profile: str, kernel: str, papers: list[str] | None = None, only: list[str] | None = None,
                      out_dir: Path | None = None) -> list[tuple[str, float]]:
    """Run the notebooks of ``papers`` (default all) with ``profile`` injected; return
    (folder/name, seconds) per notebook."""
    import papermill as pm

    from .profiles import load_profile

    load_profile(profile)  # fail early on a bad name
    out_dir = out_dir or ROOT / "build" / "notebooks" / profile
    timings = []
    for nb in notebook_paths(papers=papers):
        if only and nb.stem not in only:
            continue
        t0 = time.perf_counter()
        name = f"{nb.parent.name}/{nb.name}"
        print(f"[figures] {name} (profile={profile})", flush=True)
        (out_dir / nb.parent.name).mkdir(parents=True, exist_ok=True)
        pm.execute_notebook(
            str(nb),
            str(out_dir / nb.parent.name / nb.name),
            parameters={"profile": profile},
            kernel_name=kernel,
            cwd=str(nb.parent),
            progress_bar=False,
        )
        timings.append((name, time.perf_counter() - t0))
        print(f"[figures] {name} done in {timings[-1][1]:.1f} s", flush=True)
    return timings


def build_report(profile: str, out: Path | None = None, figures: Path | None = None) -> Path:
    """Build the report site of ``profile`` (see :mod:`dpdl_core.site`); return its ``index.html``.

    Parameters
    ----------
    out : site folder (default ``build/report``), replaced by every build
    figures : folder of the figures and tables (default :func:`dpdl_core.plotting.figures_dir`)

    Raises
    ------
    FileNotFoundError
        When nothing has been executed at ``profile`` (run ``make figures PROFILE=...`` first).
    """
    from .plotting import figures_dir
    from .site import build_site

    return build_site(profile, figures or figures_dir(), ROOT / "build" / "notebooks" / profile, ROOT / "notebooks",
                      out or ROOT / "build" / "report")
