"""Execute the notebooks with papermill (``make figures``) and build the HTML report.

Sources in ``notebooks/`` are never modified: executed copies go to
``build/notebooks/<profile>/``. Figures and tables are written by the notebooks into
``figures/`` through :mod:`dpdl_core.plotting`.
"""
from __future__ import annotations

import time
from pathlib import Path

__all__ = ["execute_notebooks", "build_report", "notebook_paths"]

ROOT = Path(__file__).resolve().parents[1]


def notebook_paths(notebook_dir: Path | None = None) -> list[Path]:
    """All notebooks, in name order (``00_...`` first)."""
    return sorted((notebook_dir or ROOT / "notebooks").glob("*.ipynb"))


def execute_notebooks(profile: str, kernel: str, only: list[str] | None = None, out_dir: Path | None = None) -> list[tuple[str, float]]:
    """Run every notebook with ``profile`` injected; return (name, seconds) per notebook."""
    import papermill as pm

    from .profiles import load_profile

    load_profile(profile)  # fail early on a bad name
    out_dir = out_dir or ROOT / "build" / "notebooks" / profile
    out_dir.mkdir(parents=True, exist_ok=True)
    timings = []
    for nb in notebook_paths():
        if only and nb.stem not in only:
            continue
        t0 = time.perf_counter()
        print(f"[figures] {nb.name} (profile={profile})", flush=True)
        pm.execute_notebook(
            str(nb),
            str(out_dir / nb.name),
            parameters={"profile": profile},
            kernel_name=kernel,
            cwd=str(nb.parent),
            progress_bar=False,
        )
        timings.append((nb.stem, time.perf_counter() - t0))
        print(f"[figures] {nb.name} done in {timings[-1][1]:.1f} s", flush=True)
    return timings


def build_report(profile: str) -> Path:
    """HTML of every executed notebook of ``profile`` plus an index page."""
    import nbformat
    from nbconvert import HTMLExporter

    src = ROOT / "build" / "notebooks" / profile
    if not src.exists() or not list(src.glob("*.ipynb")):
        raise FileNotFoundError(f"no executed notebooks in {src}; run `make figures PROFILE={profile}` first")
    out = ROOT / "build" / "report" / profile
    out.mkdir(parents=True, exist_ok=True)
    exporter = HTMLExporter()
    links = []
    for nb in sorted(src.glob("*.ipynb")):
        body, _ = exporter.from_notebook_node(nbformat.read(nb, as_version=4))
        (out / f"{nb.stem}.html").write_text(body)
        links.append(f'<li><a href="{nb.stem}.html">{nb.stem}</a></li>')
    index = out / "index.html"
    index.write_text(
        f"<html><head><title>dpdl-replication ({profile})</title></head><body>"
        f"<h1>dpdl-replication — executed notebooks, profile <code>{profile}</code></h1><ul>"
        + "\n".join(links)
        + "</ul></body></html>"
    )
    return index
