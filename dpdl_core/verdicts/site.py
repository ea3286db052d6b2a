"""The report as a person sees it: one static site with every figure and table of a profile,
grouped by paper, and the executed notebooks rendered to HTML (``make report``).

Layout of the site folder (``build/report/`` by default)::

    index.html                     every paper: its figures, tables and notebooks
    figures/<name>.{png,pdf,md,tex,csv}   copies of the outputs the index shows or links
    notebooks/<folder>/<stem>.html        the executed notebooks

Each figure and table shows the profile and the data that produced it, read from the metadata
``figures/<profile>/<name>.json`` that :func:`dpdl_core.verdicts.plotting.write_metadata`
writes beside it (for older outputs: from the caption in the table's Markdown). The site of a
profile reads that profile's folder only; an output there naming another profile is left out,
and so are the stale outputs of a failed notebook (``figures/<profile>/stale/``). The site
works offline: images are local files, tables are rendered from their Markdown or CSV, and the
notebook pages use a template without nbconvert's CDN scripts (require.js, MathJax, mermaid);
:func:`external_references` checks every page.
"""
from __future__ import annotations

import functools
import html
import json
import os
import re
import shutil
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from .notebook_index import notebook_folders
from .plotting import parse_caption

__all__ = ["Output", "answer_html", "attribute", "build_lock", "build_site", "collect_outputs", "external_references",
           "plain_math", "render_notebooks"]

FIGURE_EXTS = ("png", "pdf")
TABLE_EXTS = ("md", "csv", "tex")
# Written into the site folder so that a rebuild only ever deletes a folder it made.
MARKER = ".dpdl-report"

# nbconvert's lab template without the scripts it loads from CDNs; a link back to the index.
OFFLINE_TEMPLATE = """{%- extends 'lab/index.html.j2' -%}
{%- block html_head_js -%}{%- endblock html_head_js -%}
{%- block jupyter_widgets -%}{%- endblock jupyter_widgets -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
{%- block body_header -%}{{ super() }}
<nav style="padding: 0.5em 1em"><a href="../../index.html">&larr; report index</a></nav>
{%- endblock body_header -%}
"""

# A src/href (or CSS url()/@import) that points at another host: absolute or protocol-relative.
_EXTERNAL_RE = re.compile(
    r"""(?:\b(?:src|href)\s*=\s*["']?|\burl\(\s*["']?|@import\s+["'])\s*((?:[a-z][a-z0-9+.-]*:)?//[^"'\s)>]*)""",
    re.IGNORECASE,
)

STYLE = """
body { font-family: system-ui, sans-serif; margin: 0 auto; max-width: 1100px; padding: 0 1em 3em; color: #222; }
header { border-bottom: 1px solid #ccc; margin-bottom: 1em; }
nav.toc span { margin-right: 1.5em; white-space: nowrap; }
section.paper { border-top: 2px solid #456; margin-top: 2em; }
.output { margin: 1.5em 0; padding: 0.8em; background: #fafafa; border: 1px solid #e4e4e4; }
.output img { max-width: 100%; height: auto; display: block; margin: 0 auto; }
.meta { font-size: 0.9em; color: #444; }
.meta b { color: #222; }
.caption { font-size: 0.85em; color: #555; }
.table-wrap { overflow-x: auto; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0; }
th, td { border: 1px solid #ccc; padding: 2px 6px; text-align: left; }
th { background: #eef; }
.missing { color: #999; }
.failed { color: #b00; font-weight: bold; }
"""


@dataclass
class Output:
    """One figure or table of the figures folder.

    Attributes
    ----------
    name : file stem, e.g. ``dpdl_fig01_mnist_bipartite``
    files : its files by extension (``png``, ``pdf``, ``md``, ``tex``, ``csv``)
    meta : ``kind``, ``caption``, ``dataset``, ``profile`` (and ``title`` for tables)
    """

    name: str
    files: dict[str, Path]
    meta: dict


def collect_outputs(folder: Path) -> list[Output]:
    """Every output of ``folder`` that has something to show (a PNG, Markdown or CSV), with
    its metadata: its own ``<name>.json``, else the caption in its Markdown, else the metadata
    of the output it belongs to (``straggler_fig02_tradeoffs_claims`` → ``straggler_fig02_tradeoffs``)."""
    by_stem: dict[str, dict[str, Path]] = {}
    for path in sorted(folder.glob("*.*")):
        ext = path.suffix[1:]
        if path.is_file() and ext in FIGURE_EXTS + TABLE_EXTS + ("json",) and path.stem != "README":
            by_stem.setdefault(path.stem, {})[ext] = path
    sidecars = {stem: json.loads(f["json"].read_text()) for stem, f in by_stem.items() if "json" in f}
    outputs = []
    for stem, files in by_stem.items():
        files.pop("json", None)
        if not {"png", "md", "csv"} & set(files):
            continue  # a PDF or LaTeX file alone has nothing to show
        meta = sidecars.get(stem) or (parse_caption(files["md"].read_text()) if "md" in files else {})
        if not meta.get("profile"):
            owners = [s for s in sidecars if stem.startswith(s + "_")]
            meta = {**sidecars[max(owners, key=len)], "caption": None} if owners else meta
        outputs.append(Output(stem, files, meta))
    return outputs


@functools.cache
def _notebook_code(nb_path: Path) -> str:
    """The code of a source notebook, for finding the outputs it names."""
    cells = json.loads(nb_path.read_text())["cells"]
    return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")


def attribute(name: str, sources: dict[str, list[Path]]) -> tuple[str | None, str | None]:
    """The (folder, notebook stem) of the notebook that wrote output ``name``, among the
    source notebooks ``sources`` (folder -> notebook paths).

    A name is ``<folder>_<key>`` or ``<key>``. The notebook is the one whose stem is the key
    (``fig01_mnist_bipartite``), starts it (``fig02_tradeoffs`` for ``fig02_tradeoffs_claims``)
    or ends with it (``ext02_baselines_overview`` for ``baselines_overview``), else the one
    whose code names the output or its key as a string; else only the folder of the prefix.
    """
    prefix = next((f for f in sources if name.startswith(f + "_")), None)
    key = name[len(prefix) + 1:] if prefix else name
    folders = [prefix] if prefix else list(sources)
    for folder in folders:
        for nb in sources[folder]:
            if key == nb.stem or key.startswith(nb.stem + "_") or nb.stem.endswith("_" + key):
                return folder, nb.stem
    for folder in folders:
        for nb in sources[folder]:
            if any(f"{q}{s}{q}" in _notebook_code(nb) for s in (name, key) for q in "\"'"):
                return folder, nb.stem
    return prefix, None


def render_notebooks(executed: list[Path], out: Path) -> dict[tuple[str, str], tuple[str, bool]]:
    """Write each executed notebook ``<folder>/<stem>.ipynb`` as a self-contained page
    ``out/notebooks/<folder>/<stem>.html`` (linking back to ``out/index.html``).

    Returns
    -------
    dict
        (folder, stem) -> (the page's address relative to ``out``, whether papermill recorded
        an exception while executing the notebook).
    """
    import nbformat
    from jinja2 import DictLoader
    from nbconvert import HTMLExporter

    exporter = HTMLExporter(template_name="lab", template_file="offline.html.j2",
                            extra_loaders=[DictLoader({"offline.html.j2": OFFLINE_TEMPLATE})])
    pages = {}
    for path in executed:
        nb = nbformat.read(path, as_version=4)
        href = f"notebooks/{path.parent.name}/{path.stem}.html"
        (out / href).parent.mkdir(parents=True, exist_ok=True)
        (out / href).write_text(_decode_anchors(exporter.from_notebook_node(nb)[0]), encoding="utf-8")
        pages[(path.parent.name, path.stem)] = (href, bool(nb.metadata.get("papermill", {}).get("exception")))
    return pages


def external_references(page: str) -> list[str]:
    """The addresses on other hosts that an HTML page loads or links (``src``, ``href``, CSS
    ``url()`` and ``@import``); text that merely mentions a URL is not counted."""
    return sorted(set(_EXTERNAL_RE.findall(page)))


# LaTeX commands of the papers' formulas -> the characters a page shows (:func:`plain_math`).
_TEX = {"epsilon": "ε", "varepsilon": "ε", "delta": "δ", "zeta": "ζ", "lambda": "λ", "tau": "τ", "sigma": "σ",
        "alpha": "α", "beta": "β", "gamma": "γ", "eta": "η", "mu": "μ", "chi": "χ", "rho": "ρ", "theta": "θ",
        "leq": "≤", "le": "≤", "geq": "≥", "ge": "≥", "neq": "≠", "approx": "≈", "cdot": "·", "times": "×",
        "infty": "∞", "in": "∈", "sqrt": "√", "ldots": "…", "dots": "…", "sum": "Σ", "log": "log", "exp": "exp"}
_MATH_RE = re.compile(r"\$([^$\n]+)\$")


def plain_math(text: str) -> str:
    """``text`` with each ``$...$`` formula as plain characters (``$\\epsilon \\leq 1$`` →
    ``ε ≤ 1``, ``$h_{\\text{max}}$`` → ``h_max``): a page without MathJax shows no raw LaTeX."""
    def formula(match: re.Match) -> str:
        body = re.sub(r"\\(?:text|mathrm|mathcal|mathbf|operatorname)\s*", "", match.group(1))
        body = re.sub(r"\\([A-Za-z]+)", lambda m: _TEX.get(m.group(1), m.group(1)), body)
        return re.sub(r"[{}]", "", body.replace("\\", "")).strip()

    return _MATH_RE.sub(formula, text)


def _readable(frame):
    """A table as a reader needs it: a claims frame (:func:`dpdl_core.verdicts.claims.claims_frame`) as
    its table view (claim, verdict, calibration, evidence: not its 14 raw columns), no column
    that is empty in every row, formulas as plain characters."""
    from .claims import COLUMNS, table_view

    if set(COLUMNS) <= set(frame.columns):
        frame = table_view(frame)
    frame = frame.loc[:, [c for c in frame.columns if frame[c].astype(str).str.strip().replace("nan", "").any()]]
    return frame.apply(lambda col: col.map(lambda v: plain_math(v) if isinstance(v, str) else v))


_EMPTY_CELLS = ("", "nan", "None")


def _tidy_markdown_tables(text: str) -> str:
    """``text`` with each pipe table shown as a reader needs it: ``nan`` cells blank and the
    columns blank in every row left out."""
    lines, out, block = text.splitlines(), [], []

    def flush():
        rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in block]
        if len(rows) >= 2 and len({len(r) for r in rows}) == 1:
            body = rows[2:]
            keep = [j for j in range(len(rows[0])) if not body or any(r[j] not in _EMPTY_CELLS for r in body)]
            rows = [[("" if r[j] in _EMPTY_CELLS[1:] else r[j]) for j in keep] for r in rows]
            out.extend("| " + " | ".join(r) + " |" for r in rows)
        else:
            out.extend(block)
        block.clear()

    for line in lines:
        if line.lstrip().startswith("|"):
            block.append(line)
            continue
        if block:
            flush()
        out.append(line)
    if block:
        flush()
    return "\n".join(out) + ("\n" if text.endswith("\n") else "")


def _render_table(output: Output) -> str:
    """HTML of a table output: its Markdown (title, note, table and claims), else its CSV
    (:func:`_readable`)."""
    if "md" in output.files:
        import mistune

        text = _tidy_markdown_tables(plain_math(output.files["md"].read_text()))
        return mistune.create_markdown(plugins=["table"])(text)
    import pandas as pd

    return _readable(pd.read_csv(output.files["csv"])).to_html(index=False, border=0, na_rep="")


ANSWER_BEGIN, ANSWER_END = "<!-- answer:begin", "<!-- answer:end -->"


def answer_html(readme: Path, out: Path) -> str:
    """The README's answer block (between its answer markers: what ``python -m dpdl_core
    answer`` writes) as HTML, its local links and images copied into ``out/answer/`` so that
    they resolve in the site; ``""`` when the README has no such block."""
    import mistune

    text = readme.read_text(encoding="utf-8") if readme.is_file() else ""
    if ANSWER_BEGIN not in text or ANSWER_END not in text:
        return ""
    block = text.split(ANSWER_BEGIN, 1)[1].split("-->", 1)[1].split(ANSWER_END, 1)[0]
    page = mistune.create_markdown(plugins=["table"])(plain_math(block))

    def local(match: re.Match) -> str:
        attr, ref = match.group(1), html.unescape(match.group(2))
        path, _, anchor = ref.partition("#")
        source = readme.parent / path
        if not path or "//" in ref or ":" in path or not source.is_file():
            return match.group(0)
        (out / "answer" / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, out / "answer" / path)
        return f'{attr}="{html.escape("answer/" + path)}"'  # a copied file: its anchors are not the page's

    return re.sub(r'\b(href|src)="([^"]*)"', local, page)


def _decode_anchors(page: str) -> str:
    """nbconvert's heading ids and their ``#`` links percent-encoded (``%CE%B5`` for ε, ``%E2%80%94``
    for —) as the characters they stand for: a browser decodes the address of a link before
    it looks for the element, and finds the encoded id only by luck."""
    from urllib.parse import unquote

    def decoded(match: re.Match) -> str:
        attr, hash_, value = match.groups()
        return f'{attr}="{hash_}{html.escape(unquote(html.unescape(value)), quote=True)}"'

    return re.sub(r'\b(id|href)="(#?)([^"#]*%[0-9A-Fa-f]{2}[^"]*)"',
                  lambda m: decoded(m) if m.group(1) == "id" or m.group(2) else m.group(0), page)


def _output_html(output: Output, notebook_href: str | None, notebook_label: str | None) -> str:
    """One figure or table: image or rendered table, its profile, data, files and notebook."""
    esc = html.escape
    meta = output.meta
    fields = [f"<b>{esc(output.name)}</b>", f'profile <b>{esc(meta.get("profile") or "not recorded")}</b>',
              f'data: <b>{esc(meta.get("dataset") or "not recorded")}</b>']
    if meta.get("written"):
        fields.append(f'written {esc(meta["written"])}')
    fields.append("files: " + " ".join(f'<a href="figures/{esc(p.name)}">{ext.upper()}</a>'
                                       for ext, p in output.files.items()))
    if notebook_href:
        fields.append(f'notebook <a href="{esc(notebook_href)}">{esc(notebook_label)}</a>')
    elif notebook_label:
        fields.append(f"notebook {esc(notebook_label)} (not executed at this profile)")
    parts = [f'<div class="output" id="{esc(output.name)}">']
    if meta.get("title"):
        parts.append(f"<h3>{esc(meta['title'])}</h3>")
    parts.append(f'<p class="meta">{" · ".join(fields)}</p>')
    if "png" in output.files:
        parts.append(f'<img src="figures/{esc(output.files["png"].name)}" alt="{esc(output.name)}">')
        if meta.get("caption"):
            parts.append(f'<p class="caption">{esc(meta["caption"])}</p>')
    if "md" in output.files or "csv" in output.files:
        parts.append(f'<div class="table-wrap">{_render_table(output)}</div>')
    parts.append("</div>")
    return "\n".join(parts)


def _paper_title(folder: Path) -> str:
    """The first heading of ``notebooks/<folder>/README.md``, else the folder name."""
    readme = folder / "README.md"
    lines = readme.read_text().splitlines() if readme.exists() else []
    return next((ln.lstrip("# ").strip() for ln in lines if ln.startswith("# ")), folder.name)


def _prepare(out: Path) -> None:
    """Empty ``out`` for a new site, refusing a file or a non-empty folder that is not a report site."""
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out} is a file; the site is a folder: pass a new or empty folder "
                         "(default build/report)")
    if out.exists() and any(out.iterdir()) and not (out / MARKER).exists():
        raise ValueError(f"{out} is not empty and is not a report site; choose a new or empty folder")
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    (out / MARKER).write_text("written by python -m dpdl_core report; replaced by every rebuild\n")


@contextmanager
def build_lock(out: Path):
    """Hold the exclusive right to (re)build the site folder ``out``: a ``flock`` on
    ``.<name>.lock`` beside it, which the kernel releases if the holder dies.

    Raises
    ------
    ValueError
        When another build holds it, or the folder beside ``out`` cannot hold the lock file.
    """
    import fcntl

    lock = out.parent / f".{out.name}.lock"
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise ValueError(f"cannot write the report site to {out}: {exc.strerror} ({exc.filename or lock}); pass "
                         "--out a folder you can write (default build/report)") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ValueError(f"another `report` is building {out} now; wait for it to finish, or pass --out another "
                             "folder") from None
        yield
    finally:
        os.close(fd)


def build_site(profile: str, figures: Path, executed: Path, sources: Path, out: Path) -> Path:
    """Build the report site of ``profile`` in ``out`` and return its ``index.html``.

    Parameters
    ----------
    profile : smoke, cpu or paper; outputs whose metadata names another profile are left out
    figures : the folder the notebooks write the profile's figures and tables to (``figures/<profile>/``)
    executed : the executed notebooks of ``profile``, ``<folder>/<stem>.ipynb``
    sources : the source notebooks, ``<folder>/<stem>.ipynb`` (which papers and notebooks exist)
    out : the site folder, emptied first

    Raises
    ------
    FileNotFoundError
        When neither an executed notebook nor an output of ``profile`` exists.
    ValueError
        When ``out`` holds something else, or a page would load or link another host.
    """
    outputs = collect_outputs(figures) if figures.is_dir() else []
    shown = [o for o in outputs if o.meta.get("profile") in (profile, None)]
    ran = sorted(executed.glob("*/*.ipynb")) if executed.is_dir() else []
    if not ran and not any(o.meta.get("profile") == profile for o in shown):
        raise FileNotFoundError(
            f"nothing has been executed at profile {profile}: no executed notebooks in {executed} and no figure or "
            f"table of that profile in {figures}; run `make figures PROFILE={profile}` first")
    with build_lock(out):
        try:
            return _build(profile, figures, executed, sources, out, outputs, shown, ran)
        except OSError as exc:  # a full disk or a read-only folder, met while writing the site
            where = exc.filename or out
            raise ValueError(f"cannot write the report site to {out}: {exc.strerror or exc} ({where}); free space "
                             "there, or pass --out a folder you can write") from None


def _build(profile, figures, executed, sources, out, outputs, shown, ran) -> Path:
    """:func:`build_site` once the outputs are known and ``out`` is locked."""
    _prepare(out)
    folders = notebook_folders(sources)
    nb_sources = {f: sorted((sources / f).glob("*.ipynb")) for f in folders}
    pages = render_notebooks(ran, out)

    (out / "figures").mkdir()
    grouped: dict[str | None, list[str]] = {}
    for o in shown:
        for p in o.files.values():
            shutil.copy2(p, out / "figures" / p.name)
        folder, stem = attribute(o.name, nb_sources)
        href = pages.get((folder, stem), (None,))[0]
        grouped.setdefault(folder, []).append(_output_html(o, href, f"{folder}/{stem}" if stem else None))

    index = out / "index.html"
    index.write_text(_index_html(profile, figures, executed, sources, folders, nb_sources, pages, grouped,
                                 len(outputs) - len(shown), answer_html(sources.parent / "README.md", out)),
                     encoding="utf-8")
    found = {str(p.relative_to(out)): refs for p in out.rglob("*.html") if (refs := external_references(p.read_text()))}
    if found:
        raise ValueError(f"pages of the report load or link other hosts (it must work offline): {found}")
    return index


def _index_html(profile, figures, executed, sources, folders, nb_sources, pages, grouped, hidden, answer="") -> str:
    """The index page: a header, the answer (the README's table, when there is one), then per
    folder (overview, then each paper) its outputs and notebooks."""
    esc = html.escape
    sections, toc = [], []
    if answer:
        toc.append('<span><a href="#answer">Does it replicate?</a></span>')
        sections.append('<section class="answer" id="answer"><h2>Does it replicate?</h2><p class="meta">The answer '
                        "of the committed paper-scale studies (results/&lt;paper&gt;/), as the README gives it, "
                        f"whatever the profile of the outputs below.</p>\n{answer}</section>")
    for folder in folders + ([None] if None in grouped else []):
        title = _paper_title(sources / folder) if folder else "Other outputs"
        anchor = f"paper-{folder or 'other'}"
        ran, missing = [], []
        for nb in nb_sources.get(folder, []):
            href, failed = pages.get((folder, nb.stem), (None, False))
            if not href:
                missing.append(esc(nb.stem))
                continue
            flag = ' <span class="failed">failed (see the page)</span>' if failed else ""
            ran.append(f'<li><a href="{esc(href)}">{esc(nb.stem)}</a>{flag}</li>')
        body = grouped.get(folder, [])
        toc.append(f'<span><a href="#{anchor}">{esc(title)}</a> '
                   f'({len(body)} output{"" if len(body) == 1 else "s"})</span>')
        notebooks = (f"<h4>Executed notebooks</h4><ul>{''.join(ran)}</ul>" if ran else "") + (
            f'<p class="missing">Not executed at this profile: {", ".join(missing)}.</p>' if missing else "")
        sections.append(f'<section class="paper" id="{anchor}"><h2>{esc(title)}</h2>'
                        + ("\n".join(body) or '<p class="missing">No figure or table of this profile.</p>')
                        + notebooks + "</section>")
    note = (f"<p class=\"meta\">{hidden} output(s) in {esc(str(figures))} come from another profile and are not "
            "shown.</p>" if hidden else "")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>dpdl-replication report, profile {esc(profile)}</title>
<style>{STYLE}</style></head><body>
<header><h1>dpdl-replication report — profile <code>{esc(profile)}</code></h1>
<p class="meta">Built {datetime.now():%Y-%m-%d %H:%M} from the figures and tables in {esc(str(figures))} and the
notebooks executed in {esc(str(executed))}. Each output names the profile and the data that produced it.</p>{note}
<nav class="toc">{' '.join(toc)}</nav></header>
{''.join(sections)}
</body></html>
"""
