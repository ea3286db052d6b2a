"""The paper contract (:mod:`dpdl_core.verdicts.paper_contract`): every paper conforms, and every
notebook builder returns an :class:`~dpdl_core.verdicts.outputs.Output`; a fifth paper living only
under ``tests/fixtures/papers`` (its own dataset, topology, model, per-round metric and
claim) runs through ``run``, a sweep, ``plan``, its claims and a notebook under nbval with
no edit to any generic module; a deliberately broken paper fails alone, with a message; and
no notebook hard-codes the sweep's worker count."""
from __future__ import annotations

import ast
import importlib
import json
import os
import re
import subprocess
import sys
import textwrap
import typing
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpdl_core.papers import PAPERS
from dpdl_core.runs.plan import paper_groups
from dpdl_core.verdicts.outputs import Output
from dpdl_core.verdicts.paper_contract import check_paper

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "papers"
# What the fixture paper brings: none of these names may appear in the package.
FIXTURE_NAMES = ("toy_blobs", "toy_gossip", "toy_linear", "toy_consensus", '"star"', "'star'")
# Each paper's notebooks.
NOTEBOOKS = {**{p: ROOT / "notebooks" / p for p in PAPERS}, "toy": ROOT / "tests" / "fixtures" / "notebooks" / "toy"}


@pytest.mark.parametrize("paper", PAPERS)
def test_every_paper_conforms(paper):
    assert check_paper(paper) == []


def test_the_study_half_of_the_contract_is_checked(monkeypatch):
    """A study that leaves out a claim the paper does not declare, or gives no reason, and a
    statement judged by an undeclared claim, are reported."""
    import dataclasses

    from dpdl_core.papers.straggler import statements, study
    from dpdl_core.verdicts.paper_contract import check_paper

    monkeypatch.setattr(study, "NOT_JUDGED", {"no_such_claim": "why", "lemma2_p_star": ""})
    first = statements.STATEMENTS[0]
    monkeypatch.setattr(statements, "STATEMENTS", (dataclasses.replace(first, claims=("no_such_claim",)),))
    problems = check_paper("straggler")
    assert "study.NOT_JUDGED['no_such_claim'] must name a claim of SPECS and say why" in problems
    assert "study.NOT_JUDGED['lemma2_p_star'] must name a claim of SPECS and say why" in problems
    assert any(p.startswith(f"statements.py: {first.id}:") and "no_such_claim" in p for p in problems)


@pytest.mark.parametrize("paper", ["dpdl", "leasgd", "pdsl"])
def test_configs_selects_one_group_by_name(paper):
    """``configs(profile, group)``: None gives every group, a name that group alone, another
    name a ValueError that lists the allowed ones."""
    groups = paper_groups(paper, "smoke")
    names = [g.name for g in groups]
    assert len(names) >= 2 and len(set(names)) == len(names)
    for g in groups:
        (alone,) = paper_groups(paper, "smoke", g.name)
        assert alone.name == g.name and alone.configs == g.configs
    with pytest.raises(ValueError, match=re.escape(f"allowed: {names}")) as info:
        paper_groups(paper, "smoke", "no_such_group")
    assert "'no_such_group'" in str(info.value)
    # A paper that sweeps nothing has no group of any name.
    assert paper_groups("straggler", "smoke") == []
    with pytest.raises(ValueError, match=re.escape("allowed: []")):
        paper_groups("straggler", "smoke", names[0])


def _builders(paper: str) -> dict:
    """Per notebook of ``paper`` but its study notebook, the builder it calls, ``out =
    builder(...)``, as (module, name); None for a notebook that imports nothing from the
    paper but ``preset`` (it defines its few runs itself)."""
    found = {}
    for nb in sorted(NOTEBOOKS[paper].glob("*.ipynb")):
        if nb.stem == "study_paper_scale":
            continue
        imported, calls = {}, []
        for cell in json.loads(nb.read_text())["cells"]:
            if cell["cell_type"] != "code":
                continue
            for node in ast.walk(ast.parse("".join(cell["source"]))):
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(f"dpdl_core.papers.{paper}"):
                    imported.update({a.asname or a.name: node.module for a in node.names})
                elif (isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["out"]
                      and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name)):
                    calls.append(node.value.func.id)
        if set(imported) <= {"preset"} and not calls:
            found[nb.stem] = None
            continue
        assert len(calls) == 1 and calls[0] in imported, f"{nb.relative_to(ROOT)}: no one `out = builder(...)` call"
        found[nb.stem] = (imported[calls[0]], calls[0])
    return found


@pytest.mark.parametrize("paper", PAPERS)
def test_every_builder_returns_an_output(paper):
    """Every notebook builder is annotated to return :class:`~dpdl_core.verdicts.outputs.Output`
    (running them is too slow here; the fixture paper's runs, below)."""
    builders = {key: b for key, b in _builders(paper).items() if b}
    assert builders, f"no notebook of {paper} calls a builder"
    for key, (module, name) in builders.items():
        returns = typing.get_type_hints(getattr(importlib.import_module(module), name)).get("return")
        assert returns is Output, f"{key}: {module}.{name} returns {returns}, not Output"


def test_output_holds_a_claims_frame():
    from dpdl_core.verdicts.claims import claims_frame

    out = Output(["a.md"], claims_frame([]))
    assert out.files == (Path("a.md"),) and out.tables == {} and out.figure is None and out.text == ""
    with pytest.raises(TypeError, match="claims_frame"):
        Output([], pd.DataFrame({"verdict": ["holds"]}))
    with pytest.raises(TypeError, match=r"\['table'\] are not DataFrames"):
        Output([], claims_frame([]), {"table": [1, 2]})


def test_the_fixture_paper_lives_only_under_tests():
    generic = [p for p in (ROOT / "dpdl_core").rglob("*.py")]
    for path in generic:
        text = path.read_text()
        for name in FIXTURE_NAMES:
            assert name not in text, f"{path.relative_to(ROOT)} names the fixture paper's {name}"
    assert (FIXTURES / "toy" / "__init__.py").exists() and "toy" not in PAPERS


def test_no_generic_module_imports_a_paper():
    """Imports point one way: papers → core. A generic module reaches a paper only through
    :mod:`dpdl_core.papers` (by name, at run time), never by importing it."""
    for path in (ROOT / "dpdl_core").rglob("*.py"):
        if (ROOT / "dpdl_core" / "papers") in path.parents:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                names = [f"{'.' * node.level}{node.module or ''}"]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            for name in names:
                assert not re.search(r"papers\.\w", name), f"{path.relative_to(ROOT)} imports {name}"


def _in_subprocess(script: str, tmp_path: Path) -> str:
    """Run ``script`` with the fixture papers on the search path (a fresh interpreter: the
    papers' registrations must not leak into this one)."""
    env = {**os.environ, "DPDL_PAPERS_PATH": str(FIXTURES), "DPDL_RESULTS_DIR": str(tmp_path / "results"),
           "DPDL_FIGURES_DIR": str(tmp_path / "figures"), "DPDL_PROGRESS": "0", "DPDL_WORKERS": "1"}
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], env=env, cwd=ROOT, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


def test_fifth_paper_runs_with_no_generic_edit(tmp_path):
    out = _in_subprocess("""
        import json, warnings
        from dpdl_core import papers
        from dpdl_core.verdicts.paper_contract import check_paper
        from dpdl_core.runs.plan import make_plan, Benchmark

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            papers.load_all()
        broken = [str(w.message) for w in caught if issubclass(w.category, papers.PaperImportWarning)]
        try:
            papers.get_paper("broken")
            raised = ""
        except papers.PaperImportError as exc:
            raised = str(exc)
        contract = {p: check_paper(p) for p in papers.PAPERS if p != "broken"}

        from dpdl_core.papers.toy.figures import accuracy_table
        from dpdl_core.papers.toy.presets import preset
        from dpdl_core.runs.runner import run
        res = run(preset(rounds=3), save=False)
        metric = res.history[res.history["metric"] == "toy_consensus"]

        import typing
        from dpdl_core.verdicts.outputs import Output
        built = accuracy_table("smoke", workers=1)
        output = isinstance(built, Output) and typing.get_type_hints(accuracy_table)["return"] is Output
        table, claims = built.tables["table"], built.claims
        plan = make_plan("smoke", papers=["toy"], benchmark=Benchmark.load("missing.json"))
        print(json.dumps({"broken": broken, "raised": raised, "contract": contract,
                          "metric_rounds": sorted(metric["round"].tolist()),
                          "metric_agents": sorted(set(metric["agent"])),
                          "label": res.meta["dataset_label"], "topology": res.config.topology,
                          "claims": claims[["id", "verdict", "tolerance"]].to_dict("records"),
                          "accuracies": table["accuracy"].tolist(), "output": output,
                          "files": sorted(p.name for p in built.files if p.exists()),
                          "plan": [(g.paper, g.name, g.runs, g.stored) for g in plan.groups]}))
    """, tmp_path)
    got = json.loads(out.strip().splitlines()[-1])
    # The broken paper fails alone, with a message naming it; the others load and conform.
    assert len(got["broken"]) == 1 and "'broken'" in got["broken"][0] and "deliberately broken" in got["broken"][0]
    assert "deliberately broken" in got["raised"]
    assert got["contract"] == {p: [] for p in [*PAPERS, "toy"]}
    # run: its dataset, topology and per-round metric (network-wide, every round).
    assert got["metric_rounds"] == [1, 2, 3] and got["metric_agents"] == [-1]
    assert "toy blobs" in got["label"] and got["topology"] == "star"
    # a sweep and the claim: one verdict of the three, with its seed spread.
    assert len(got["accuracies"]) == 2
    (claim,) = got["claims"]
    # The verdict is the rule's on the accuracies that ran: above chance (1/4) by more than t SE
    # (Student's t, 95%: chance has no spread, so two seeds give one degree of freedom).
    acc = pd.Series(got["accuracies"])
    margin = 12.7062 * acc.std(ddof=1) / np.sqrt(len(acc))
    rule = "holds" if acc.mean() - 0.25 > margin else "fails" if acc.mean() - 0.25 < -margin else "inconclusive"
    assert claim["id"] == "beats_chance" and claim["verdict"] == rule
    assert "t SE (Student's t, 95%, Welch df; at least 2) over 2 seeds" in claim["tolerance"]
    # its notebook's builder returns the one output type, listing the files it wrote.
    assert _builders("toy") == {"tab01_toy": ("dpdl_core.papers.toy.figures", "accuracy_table")}
    assert got["output"] and got["files"] == ["toy_tab01_toy.md", "toy_tab01_toy.tex"]
    # plan: the swept runs are stored.
    assert ("toy", "table", 2, 2) in [tuple(g) for g in got["plan"]]


def test_fifth_papers_notebook_runs_under_nbval(tmp_path):
    """Its notebook (tests/fixtures/notebooks/toy) executes under nbval like the papers' own."""
    env = {**os.environ, "DPDL_PAPERS_PATH": str(FIXTURES), "DPDL_RESULTS_DIR": str(tmp_path / "results"),
           "DPDL_FIGURES_DIR": str(tmp_path / "figures"), "DPDL_PROGRESS": "0", "DPDL_WORKERS": "1"}
    nb = ROOT / "tests" / "fixtures" / "notebooks" / "toy" / "tab01_toy.ipynb"
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "--nbval-lax", "--nbval-kernel-name",
                          "dpdl-replication", "-p", "no:cacheprovider", str(nb)], env=env, cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and "3 passed" in out.stdout, out.stdout[-3000:] + out.stderr[-2000:]
    # ... and the report site shows its output, attributed to the paper and the notebook.
    from dpdl_core.verdicts.site import build_site

    outputs = sorted(p.name for p in (tmp_path / "figures" / "smoke").glob("toy_*"))
    assert outputs, "the notebook wrote no output"
    index = build_site("smoke", tmp_path / "figures" / "smoke", tmp_path / "executed", nb.parents[1], tmp_path / "site")
    html = index.read_text()
    assert "toy" in html and any(Path(o).stem in html for o in outputs)


def test_notebooks_do_not_override_the_worker_count():
    """``$DPDL_WORKERS`` decides the sweep's processes unless a caller passes workers: no
    notebook cell hard-codes a number, as a parameter (``workers = 2``) or in a call
    (``run_sweep(..., workers=2)``)."""
    for nb in sorted((ROOT / "notebooks").rglob("*.ipynb")):
        cells = json.loads(nb.read_text())["cells"]
        for cell in cells:
            src = "".join(cell["source"]) if cell["cell_type"] == "code" else ""
            assert not re.search(r"\bworkers\s*=\s*\d", src), f"{nb.relative_to(ROOT)} hard-codes workers"


def test_every_notebook_cell_has_a_unique_id():
    """nbformat 4.5 cells carry ids (a cell without one is a warning now and an error in
    future nbformat versions, under nbval and papermill alike)."""
    for nb in sorted((ROOT / "notebooks").rglob("*.ipynb")):
        doc = json.loads(nb.read_text())
        ids = [cell.get("id") for cell in doc["cells"]]
        name = nb.relative_to(ROOT)
        if (doc["nbformat"], doc["nbformat_minor"]) >= (4, 5):
            assert None not in ids, f"{name}: a cell has no id"
            assert len(set(ids)) == len(ids), f"{name}: two cells share an id"


def test_a_papers_path_folder_that_does_not_exist_is_warned_about(tmp_path):
    env = {**os.environ, "DPDL_PAPERS_PATH": f"{FIXTURES}{os.pathsep}{tmp_path / 'typo'}"}
    proc = subprocess.run([sys.executable, "-c", "import dpdl_core.papers as p; print(' '.join(p.PAPERS))"],
                          capture_output=True, text=True, env=env)
    assert proc.returncode == 0 and "toy" in proc.stdout.split(), proc.stderr  # the good folder still counts
    assert f"PaperImportWarning: $DPDL_PAPERS_PATH names {tmp_path / 'typo'}, which is not a folder" in proc.stderr


def test_a_paper_outside_the_package_gets_its_study_row_and_datasets(tmp_path):
    """The fixture paper lives on $DPDL_PAPERS_PATH: the loader finds its study, the study
    runs, the answer gives its row through the same path as the four papers', and the
    command line lists its dataset."""
    (tmp_path / "studies").mkdir()
    out = _in_subprocess(f"""
        import json, os, warnings
        warnings.simplefilter("ignore")
        os.environ["DPDL_STUDIES_DIR"] = {str(tmp_path / "studies")!r}
        from dpdl_core.runs.studies import load_study, run_study, study_papers
        from dpdl_core.verdicts.answer import answer_rows

        papers = study_papers()
        study = load_study("toy")
        computed = run_study(study, log=lambda line: None)
        claims, progress = answer_rows(["toy"])
        print(json.dumps({{"papers": papers, "computed": computed, "ids": claims["id"].tolist(),
                          "verdicts": claims["verdict"].tolist(), "stored": progress["stored"].tolist()}}))
    """, tmp_path)
    got = json.loads(out.strip().splitlines()[-1])
    assert "toy" in got["papers"] and {"dpdl", "pdsl", "leasgd", "straggler"} <= set(got["papers"])
    assert got["computed"] == 3 and got["stored"] == [3]  # the paper profile: three seeds
    assert got["ids"] == ["beats_chance"] and got["verdicts"][0] in ("holds", "fails", "inconclusive")
    listed = subprocess.run([sys.executable, "-m", "dpdl_core", "list", "datasets"], cwd=ROOT, capture_output=True,
                            text=True, timeout=120, env={**os.environ, "DPDL_PAPERS_PATH": str(FIXTURES)})
    assert listed.returncode == 0 and "toy_blobs" in listed.stdout, listed.stderr[-2000:]
