"""The report site (``make report``): every figure and table by paper with its profile and
data, offline notebook pages, and a real headless chromium check of a site built here from
synthesized outputs (``make report-check`` does the same on the smoke outputs of nbval)."""
import html
import json
import re
import shutil
import struct

import matplotlib.pyplot as plt
import nbformat
import pandas as pd
import pytest
from browser_check import check_site, find_chromium

from dpdl_core.cli import main
from dpdl_core.verdicts import pipeline
from dpdl_core.verdicts.plotting import caption, parse_caption, save_figure
from dpdl_core.verdicts.reporting import accountant_note, write_table
from dpdl_core.verdicts.site import attribute, build_site, collect_outputs, external_references

SOURCES = pipeline.ROOT / "notebooks"
DATA = "MNIST subset, 300 train images"
needs_chromium = pytest.mark.skipif(find_chromium() is None, reason="no chromium installed (apt-get install chromium)")


def _figure(name: str, profile: str, data: str = DATA) -> None:
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.plot([0, 1, 2], [2.0, 1.0, 0.5])
    save_figure(fig, name, caption(data, profile, "N = 4 ring"))
    plt.close(fig)


def _executed_notebook(path) -> None:
    """A small 'executed' notebook: a heading, a code cell with text and a PNG output."""
    png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# Figure 1\n\nSee [the figure](#Figure-1) and [its accuracy]"
                                      "(#Accuracy-—-ε-=-0.5).\n\n## Accuracy — ε = 0.5"),
        nbformat.v4.new_code_cell("print('ran')", execution_count=1, outputs=[
            nbformat.v4.new_output("stream", name="stdout", text="ran\n"),
            nbformat.v4.new_output("display_data", data={"image/png": png, "text/plain": "<Figure>"}),
        ]),
    ])
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    """A figures folder as the notebooks leave it: cpu outputs of three papers (through the
    real writers) in ``figures/cpu``, a companion CSV, a smoke output in ``figures/smoke`` and a
    copy of it misplaced among the cpu outputs, and an executed cpu notebook (read only)."""
    root = tmp_path_factory.mktemp("outputs")
    figures = root / "figures" / "cpu"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DPDL_FIGURES_DIR", str(root / "figures"))
        _figure("dpdl_fig01_mnist_bipartite", "cpu")
        _figure("baselines_overview", "cpu")
        _figure("straggler_fig02_tradeoffs", "cpu", "California housing, 20,640 rows")
        (figures / "straggler_fig02_tradeoffs_claims.csv").write_text("claim,holds\nThm 1 bound,True\n")
        write_table("pdsl_tab01_mnist_accuracy", "Table 1: test accuracy (%)", f"{DATA}; profile cpu; M = 4",
                    ["algorithm", "acc."], [["PDSL", "91.0"], ["DP-DPSGD", "88.5"]], bold=[(0, 1)])
        _figure("dpdl_fig02_mnist_fully_connected", "smoke")
    for smoke in (root / "figures" / "smoke").iterdir():
        shutil.copy2(smoke, figures / smoke.name)
    _executed_notebook(root / "executed" / "dpdl" / "fig01_mnist_bipartite.ipynb")
    return root


@pytest.fixture
def site(outputs, tmp_path):
    """A fresh site of the cpu outputs (tests may break it)."""
    return build_site("cpu", outputs / "figures" / "cpu", outputs / "executed", SOURCES, tmp_path / "site")


def test_parse_caption_reads_the_data_and_profile_of_captions_and_notes():
    assert parse_caption(caption(DATA, "paper", "N = 10 · ring")) == {"dataset": DATA, "profile": "paper"}
    assert parse_caption(f"{DATA}; profile smoke; alpha_d 0.25") == {"dataset": DATA, "profile": "smoke"}
    assert parse_caption("Profile `cpu`. Mean over the cells") == {"dataset": None, "profile": "cpu"}
    assert parse_caption("**Title**\n\n_CIFAR-10 subset · profile cpu · x_") == {"dataset": "CIFAR-10 subset",
                                                                                  "profile": "cpu"}
    assert parse_caption("no profile named") == {"dataset": None, "profile": None}


def test_writers_record_the_data_and_profile_beside_each_output(outputs):
    smoke = json.loads((outputs / "figures" / "smoke" / "dpdl_fig02_mnist_fully_connected.json").read_text())
    assert smoke["profile"] == "smoke"  # each profile writes its own folder
    fig = json.loads((outputs / "figures" / "cpu" / "dpdl_fig01_mnist_bipartite.json").read_text())
    assert (fig["kind"], fig["profile"], fig["dataset"]) == ("figure", "cpu", DATA)
    tab = json.loads((outputs / "figures" / "cpu" / "pdsl_tab01_mnist_accuracy.json").read_text())
    assert (tab["kind"], tab["profile"], tab["title"]) == ("table", "cpu", "Table 1: test accuracy (%)")
    by_name = {o.name: o for o in collect_outputs(outputs / "figures" / "cpu")}
    assert by_name["straggler_fig02_tradeoffs_claims"].meta["profile"] == "cpu"  # from the figure it belongs to
    assert set(by_name["dpdl_fig01_mnist_bipartite"].files) == {"png", "pdf"}


def test_attribute_finds_the_notebook_of_each_output():
    sources = {f: sorted((SOURCES / f).glob("*.ipynb")) for f in pipeline.notebook_folders(SOURCES)}
    assert attribute("dpdl_fig01_mnist_bipartite", sources) == ("dpdl", "fig01_mnist_bipartite")
    assert attribute("straggler_fig02_tradeoffs_claims", sources) == ("straggler", "fig02_tradeoffs")
    assert attribute("baselines_overview", sources) == ("dpdl", "ext02_baselines_overview")
    assert attribute("00_topologies", sources) == ("overview", "00_data_and_topologies")
    assert attribute("dpdl_summary_cpu", sources) == ("dpdl", None)
    assert attribute("unrelated_output", sources) == (None, None)


def test_site_shows_every_output_of_the_profile_by_paper(site):
    page = site.read_text()
    sections = {s.split('"', 1)[0]: s for s in page.split('<section class="paper" id="paper-')[1:]}
    assert set(sections) >= {"overview", "dpdl", "pdsl", "leasgd", "straggler"}
    dpdl = sections["dpdl"]
    for name in ("dpdl_fig01_mnist_bipartite", "baselines_overview"):
        assert f'<img src="figures/{name}.png"' in dpdl and (site.parent / "figures" / f"{name}.png").exists()
    assert f"profile <b>cpu</b> · data: <b>{DATA}</b>" in dpdl
    assert 'href="notebooks/dpdl/fig01_mnist_bipartite.html"' in dpdl
    assert (site.parent / "notebooks" / "dpdl" / "fig01_mnist_bipartite.html").exists()
    assert "ext02_baselines_overview (not executed at this profile)" in dpdl
    assert "<table>" in sections["pdsl"] and "<strong>91.0</strong>" in sections["pdsl"]
    assert "<td>Thm 1 bound</td>" in sections["straggler"]
    assert "California housing, 20,640 rows" in sections["straggler"]
    assert "dpdl_fig02_mnist_fully_connected" not in page  # a smoke output
    assert "1 output(s)" in page and "another profile" in page


def test_every_page_works_offline(site):
    pages = list(site.parent.rglob("*.html"))
    assert len(pages) == 2
    for page in pages:
        text = page.read_text()
        assert external_references(text) == [], page
        assert "<script src=" not in text


def test_external_references_finds_loads_and_links_to_other_hosts():
    page = ('<script src="https://cdn.example.org/require.js"></script>'
            '<link rel="stylesheet" href="//cdn.example.org/a.css">'
            '<style>@import "http://fonts.example.org/f.css"; a { background: url(https://example.org/i.png) }</style>'
            '<a href="http://example.org/paper">paper</a>')
    assert len(external_references(page)) == 5
    local = ('<svg xmlns="http://www.w3.org/2000/svg"></svg><img src="figures/a.png"><a href="#top">top</a>'
             '<p>see https://example.org in the text</p><i style="background: url(data:image/png;base64,AA==)"></i>')
    assert external_references(local) == []


def test_report_says_to_run_the_notebooks_first(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(pipeline, "ROOT", tmp_path)
    assert main(["report", "--profile", "paper", "--figures", str(tmp_path / "figures"),
                 "--out", str(tmp_path / "site")]) == 2
    assert "run `make figures PROFILE=paper` first" in capsys.readouterr().err
    assert not (tmp_path / "site").exists()


def test_site_refuses_to_replace_a_folder_it_did_not_make(outputs, tmp_path):
    (tmp_path / "notes.txt").write_text("keep me")
    with pytest.raises(ValueError, match="not a report site"):
        build_site("cpu", outputs / "figures" / "cpu", outputs / "executed", SOURCES, tmp_path)
    assert (tmp_path / "notes.txt").exists()
    with pytest.raises(ValueError, match="notes.txt is a file; the site is a folder"):  # not "[Errno 20]"
        build_site("cpu", outputs / "figures" / "cpu", outputs / "executed", SOURCES, tmp_path / "notes.txt")
    assert (tmp_path / "notes.txt").read_text() == "keep me"


@needs_chromium
def test_site_passes_in_chromium_and_is_photographed(site, tmp_path):
    shot = tmp_path / "index.png"
    assert check_site(site, screenshot=shot) == []
    head = shot.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", head[16:24])[0] == 1280


@needs_chromium
def test_browser_check_reports_what_a_reader_would_miss(site):
    folder = site.parent
    (folder / "figures" / "baselines_overview.png").write_bytes(b"not a png")
    (folder / "figures" / "straggler_fig02_tradeoffs.pdf").unlink()
    site.write_text(site.read_text().replace(
        "</body>", '<a href="#no-such-anchor">x</a><img src="https://example.org/logo.png"></body>'))
    problems = "\n".join(check_site(site))
    assert "index.html: image did not load: figures/baselines_overview.png" in problems
    assert "index.html: link does not resolve: figures/straggler_fig02_tradeoffs.pdf" in problems
    assert "index.html: anchor not found: #no-such-anchor" in problems
    assert "index.html: refers to another host: https://example.org/logo.png" in problems
    assert "notebooks/" not in problems  # the notebook page is intact


def test_site_opens_with_the_readmes_answer(site):
    page = site.read_text()
    readme = (pipeline.ROOT / "README.md").read_text()
    if "<!-- answer:begin" not in readme:
        pytest.skip("the README has no answer block")
    first = page.split("<section ", 2)[1]
    assert first.startswith('class="answer" id="answer"><h2>Does it replicate?</h2>'), first[:200]
    block = readme.split("<!-- answer:begin", 1)[1].split("<!-- answer:end -->", 1)[0]
    header = next(line for line in block.splitlines() if line.startswith("| paper |"))
    for cell in header.strip("| ").split(" | "):  # the same table: its columns, in order
        assert f"<th>{html.escape(cell)}</th>" in first, cell
    assert '<a href="#answer">' in page.split("</header>")[0]  # the table of contents leads to it
    for ref in re.findall(r'href="(answer/[^"#]+)', first):  # local links are copied and resolve
        assert (site.parent / ref).is_file(), ref


def test_claims_tables_are_readable(tmp_path):
    from dpdl_core.verdicts.claims import Claim, claims_frame
    from dpdl_core.verdicts.site import Output, _render_table, plain_math

    frame = claims_frame([Claim(statement="the bound of Thm 1 holds for $\\zeta > 0$", verdict="holds",
                                evidence={"bound": 0.5}, tolerance="5%", paper="straggler", id="thm1",
                                quote="for $\\tau^*$", where="", scope="", rule="r")])
    path = tmp_path / "straggler_fig02_tradeoffs_claims.csv"
    frame.to_csv(path, index=False)
    table = _render_table(Output(path.stem, {"csv": path}, {}))
    heads = re.findall(r"<th>(.*?)</th>", table)
    assert heads == ["claim of the paper", "at this scale", "tolerance", "evidence"], heads  # no empty column
    assert "ζ &gt; 0" in table and "$" not in table and "\\" not in table
    assert plain_math("$h_{\\text{max}}$ and $\\epsilon \\leq 1$, $5 left") == "h_max and ε ≤ 1, $5 left"
    md = tmp_path / "dpdl_study_paper_scale_table.md"
    md.write_text("**Study**\n\n| algorithm | ours (%) | paper (%) | std |\n|---|---|---|---|\n"
                  "| DPDL | 95.0 | nan | nan |\n| DP-CGA | 97.0 | 90.9 | nan |\n")
    table = _render_table(Output(md.stem, {"md": md}, {}))
    assert re.findall(r"<th>(.*?)</th>", table) == ["algorithm", "ours (%)", "paper (%)"] and "nan" not in table


def test_notebook_headings_with_dashes_and_greek_letters_have_working_anchors(site):
    page = (site.parent / "notebooks" / "dpdl" / "fig01_mnist_bipartite.html").read_text()
    assert 'id="Accuracy-—-ε-=-0.5"' in page and 'href="#Accuracy-—-ε-=-0.5"' in page
    assert "%CE%B5" not in page


def test_accountant_note_gives_every_curves_epsilon_and_says_whether_privacy_is_equal():
    runs = pd.DataFrame({"curve": ["DPDL", "DPDL", "DP-DPSGD", "DPDL"], "nominal": [0.5, 0.5, 0.5, 1.0],
                         "epsilon_rdp": [7.59, 7.7, 0.52, 20.0]})
    note = accountant_note(runs)
    assert "nominal 0.5: DPDL 7.59-7.7, DP-DPSGD 0.52; nominal 1: DPDL 20" in note
    assert note.endswith("not equal privacy")  # one nominal epsilon is no evidence of equal privacy
    equal = runs.assign(epsilon_rdp=[0.5, 0.502, 0.5, 1.0])
    assert accountant_note(equal).endswith(": equal privacy (within 1%)")
