"""The three wings import one way: sim <- runs <- verdicts <- papers <- command line.

Read from the source (``tools/import_graph.py``): top-level imports, imports inside
functions and ``importlib.import_module`` calls whose name starts with a literal all count.
"""
import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _tool():
    spec = importlib.util.spec_from_file_location("import_graph", ROOT / "tools" / "import_graph.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["import_graph"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


G = _tool()


@pytest.fixture(scope="module")
def graph():
    return G.read_graph()


def _show(arrows) -> str:
    return "\n".join(f"{a.source} -> {a.target} (line {a.line})" for a in arrows)


def test_every_module_lives_in_a_wing(graph):
    loose = [m for m in graph.modules if G.wing(m) == "ground"]
    assert sorted(loose) == ["dpdl_core.home", "dpdl_core.papers"], (
        f"{loose}: a new module belongs in sim/, runs/ or verdicts/ (docs/design.md, 'The map')")


def test_wings_import_one_way(graph):
    bad = G.wrong_way(graph)
    assert not bad, "imports against the order ground <- sim <- runs <- verdicts <- papers:\n" + _show(bad)


def test_papers_import_from_the_faces_only(graph):
    bad = G.outside_faces(graph)
    assert not bad, ("a paper imports a wing's module instead of its face (dpdl_core.sim, .runs, "
                     ".verdicts; add the name to the face's _PUBLIC):\n" + _show(bad))


def test_no_import_circles(graph):
    assert G.circles(graph) == []


def test_every_face_name_resolves():
    for wing in ("sim", "runs", "verdicts"):
        face = importlib.import_module(f"dpdl_core.{wing}")
        for name in face.__all__:
            assert getattr(face, name) is not None, (wing, name)


def _tree(tmp_path, files: dict[str, str]) -> Path:
    for rel, text in {"dpdl_core/__init__.py": "", "dpdl_core/sim/__init__.py": "",
                      "dpdl_core/runs/__init__.py": "", "dpdl_core/papers/__init__.py": "",
                      "dpdl_core/papers/toy/__init__.py": "", **files}.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


@pytest.mark.parametrize("source", [
    "from ..runs.store import ResultStore\n",                              # top level, relative
    "def f():\n    from dpdl_core.runs import store\n",                    # inside a function
    "import importlib\nimportlib.import_module('dpdl_core.runs.store')\n",  # by name
    "import importlib\nimportlib.import_module(f'dpdl_core.runs.{1}')\n",   # by an f-string
])
def test_the_rule_catches_an_upward_import(tmp_path, source):
    root = _tree(tmp_path, {"dpdl_core/sim/engine.py": source, "dpdl_core/runs/store.py": ""})
    bad = G.wrong_way(G.read_graph(root))
    assert [(a.source, G.wing(a.target)) for a in bad] == [("dpdl_core.sim.engine", "runs")]


def test_the_rule_catches_a_paper_past_the_faces_and_a_circle(tmp_path):
    root = _tree(tmp_path, {"dpdl_core/papers/toy/study.py": "from ...runs.store import x\nfrom ...runs import y\n",
                            "dpdl_core/runs/store.py": "from . import other\n",
                            "dpdl_core/runs/other.py": "from . import store\n"})
    graph = G.read_graph(root)
    assert [a.target for a in G.outside_faces(graph)] == ["dpdl_core.runs.store"]
    assert G.circles(graph) == [["dpdl_core.runs.other", "dpdl_core.runs.store"]]


def test_registries_are_passive(graph):
    """The simulation wing's registries never load papers themselves: they call the hook the
    package installs (dpdl_core.sim.registry.load_plugins), so sim imports nothing of the loader."""
    bad = [a for a in graph.arrows if G.wing(a.source) == "sim" and a.target.startswith("dpdl_core.papers")]
    assert not bad, "the simulation wing imports the paper loader:\n" + _show(bad)
    import dpdl_core  # noqa: F401  (installs the loader)
    from dpdl_core.sim import registry

    assert registry._LOADER, "dpdl_core/__init__ installs no plug-in loader: papers' names would be unknown"


def test_papers_share_one_import_style():
    """A paper in the package reaches the wings relatively (``from ...runs import x``), as
    every other paper does; the absolute form is for code outside the package."""
    absolute = [f"{path.relative_to(ROOT)}:{n}" for path in sorted((ROOT / "dpdl_core" / "papers").rglob("*.py"))
                for n, line in enumerate(path.read_text().splitlines(), 1)
                if line.lstrip().startswith(("from dpdl_core.", "import dpdl_core."))]
    assert not absolute, "write these imports relatively (from ...sim import x):\n" + "\n".join(absolute)
