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


def build_report(profile: str) -> Path:
    """HTML of every executed notebook of ``profile`` plus an index page."""
    import nbformat
    from nbconvert import HTMLExporter

    src = ROOT / "build" / "notebooks" / profile
    if not src.exists() or not list(src.glob("*/*.ipynb")):
        raise FileNotFoundError(f"no executed notebooks in {src}; run `make figures PROFILE={profile}` first")
    out = ROOT / "build" / "report" / profile
    out.mkdir(parents=True, exist_ok=True)
    exporter = HTMLExporter()
    links = []
    for nb in sorted(src.glob("*/*.ipynb")):
        body, _ = exporter.from_notebook_node(nbformat.read(nb, as_version=4))
        page = f"{nb.parent.name}_{nb.stem}.html"
        (out / page).write_text(body)
        links.append(f'<li><a href="{page}">{nb.parent.name}/{nb.stem}</a></li>')
    index = out / "index.html"
    index.write_text(
        f"<html><head><title>dpdl-replication ({profile})</title></head><body>"
        f"<h1>dpdl-replication — executed notebooks, profile <code>{profile}</code></h1><ul>"
        + "\n".join(links)
        + "</ul></body></html>"
    )
    return index
