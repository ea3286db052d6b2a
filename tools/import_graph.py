"""Measure the package's import graph: wings, floors, wrong-way arrows, circles.

Run ``python tools/import_graph.py`` from the repository root for the table that
``docs/design.md`` quotes; ``tests/test_layers.py`` enforces the one-way rule with the same
reading. Every import of the package's own modules counts: top-level ones, those inside
functions, and ``importlib.import_module`` calls whose module name starts with a literal.
"""
from __future__ import annotations

import ast
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "dpdl_core"
# The wings from the ground up: a module may import its own wing and the ones below it.
ORDER = ("ground", "sim", "runs", "verdicts", "papers", "top")


@dataclass(frozen=True)
class Arrow:
    """One import of a package module by another."""

    source: str
    target: str
    in_function: bool
    line: int


@dataclass
class Graph:
    """The package's modules (dotted names) and the arrows between them."""

    modules: dict[str, Path]
    arrows: list[Arrow] = field(default_factory=list)


FACES = tuple(f"{PACKAGE}.{w}" for w in ("sim", "runs", "verdicts"))


def wing(module: str) -> str:
    """The wing a dotted module name lives in: ``ground`` is the version and paths
    (``home``) and the paper loader (``papers/__init__``); ``top`` the package's
    ``__init__`` and the command line."""
    parts = module.split(".")
    if len(parts) == 1 or parts[1] in ("__main__", "cli"):
        return "top"
    if parts[1] in ("sim", "runs", "verdicts"):
        return parts[1]
    if parts[1] == "papers":
        return "ground" if len(parts) == 2 else "papers"
    return "ground"


def _module_name(path: Path, root: Path) -> str:
    rel = path.relative_to(root).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve(module: str, is_package: bool, level: int, name: str | None) -> str:
    if level == 0:
        return name or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (level - 1)] if level > 1 else base
    return ".".join(base + ([name] if name else []))


def _known(target: str, modules: dict[str, Path]) -> str | None:
    """The longest prefix of ``target`` that is a module of the package."""
    parts = target.split(".")
    while parts:
        name = ".".join(parts)
        if name in modules:
            return name
        parts.pop()
    return None


class _Visitor(ast.NodeVisitor):
    def __init__(self, module: str, is_package: bool, modules: dict[str, Path]):
        self.module, self.is_package, self.modules = module, is_package, modules
        self.depth = 0
        self.arrows: list[Arrow] = []

    def _add(self, target: str, line: int) -> None:
        known = _known(target, self.modules)
        if known and known != self.module:
            self.arrows.append(Arrow(self.module, known, self.depth > 0, line))

    def visit_FunctionDef(self, node):  # noqa: N802 (ast's naming)
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Import(self, node):  # noqa: N802
        for alias in node.names:
            self._add(alias.name, node.lineno)

    def visit_ImportFrom(self, node):  # noqa: N802
        base = _resolve(self.module, self.is_package, node.level, node.module)
        for alias in node.names:
            full = f"{base}.{alias.name}"
            self._add(full if _known(full, self.modules) == full else base, node.lineno)

    def visit_Call(self, node):  # noqa: N802
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name == "import_module" and node.args:
            arg = node.args[0]
            text = None
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                text = arg.value
            elif isinstance(arg, ast.JoinedStr) and arg.values and isinstance(arg.values[0], ast.Constant):
                text = arg.values[0].value.rstrip(".")
            if text:
                package = node.args[1] if len(node.args) > 1 else None
                if text.startswith(".") and package is not None:
                    level = len(text) - len(text.lstrip("."))
                    text = _resolve(self.module, self.is_package, level, text.lstrip(".") or None)
                self._add(text, node.lineno)
        self.generic_visit(node)


def read_graph(root: Path = ROOT) -> Graph:
    """Parse every module of the package under ``root``."""
    modules = {_module_name(p, root): p for p in sorted((root / PACKAGE).rglob("*.py"))
               if "__pycache__" not in p.parts and "reference" not in p.parts}
    graph = Graph(modules)
    for name, path in modules.items():
        visitor = _Visitor(name, path.name == "__init__.py", modules)
        visitor.visit(ast.parse(path.read_text(), str(path)))
        graph.arrows.extend(visitor.arrows)
    return graph


def wrong_way(graph: Graph) -> list[Arrow]:
    """Arrows from a wing to a wing above it (or from a lower wing into a paper)."""
    rank = {w: i for i, w in enumerate(ORDER)}
    return [a for a in graph.arrows if rank[wing(a.target)] > rank[wing(a.source)]]


def outside_faces(graph: Graph) -> list[Arrow]:
    """Arrows from a paper to anything but the wings' faces, the ground floor and its own package."""
    out = []
    for a in graph.arrows:
        if wing(a.source) != "papers":
            continue
        own = ".".join(a.source.split(".")[:3])
        if a.target in FACES or wing(a.target) == "ground" or a.target == own or a.target.startswith(own + "."):
            continue
        out.append(a)
    return out


def circles(graph: Graph) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan), over every arrow."""
    edges: dict[str, set[str]] = {m: set() for m in graph.modules}
    for a in graph.arrows:
        edges[a.source].add(a.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []
    sys.setrecursionlimit(10_000)

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in edges:
        if v not in index:
            visit(v)
    return found


def floors(graph: Graph) -> int:
    """The longest chain of top-level imports (circles counted as one module)."""
    edges: dict[str, set[str]] = {m: set() for m in graph.modules}
    for a in graph.arrows:
        if not a.in_function:
            edges[a.source].add(a.target)
    memo: dict[str, int] = {}

    def height(v: str, seen: frozenset) -> int:
        if v in memo:
            return memo[v]
        best = 1 + max((height(w, seen | {v}) for w in edges[v] if w not in seen), default=0)
        memo[v] = best
        return best

    return max(height(m, frozenset()) for m in graph.modules)


def summary(graph: Graph) -> dict[str, int]:
    """The numbers ``docs/design.md`` tabulates."""
    core = [m for m in graph.modules if wing(m) != "papers"]
    return {"modules (core)": len(core),
            "modules (papers)": len(graph.modules) - len(core),
            "floors (longest chain of top-level imports)": floors(graph),
            "import arrows": len({(a.source, a.target) for a in graph.arrows}),
            "arrows against the wings' order": len({(a.source, a.target) for a in wrong_way(graph)}),
            "papers' arrows past the faces": len({(a.source, a.target) for a in outside_faces(graph)}),
            "import circles": len(circles(graph)),
            "imports inside functions": sum(a.in_function for a in graph.arrows)}


def main() -> int:
    graph = read_graph()
    for key, value in summary(graph).items():
        print(f"{key:48s} {value}")
    bad = wrong_way(graph) + outside_faces(graph)
    if bad:
        print("\narrows against the wings' order or past the faces:")
        for a in bad:
            print(f"  {a.source} -> {a.target} (line {a.line}{', in a function' if a.in_function else ''})")
    for group in circles(graph):
        print("circle:", " -> ".join(group))
    return 0


if __name__ == "__main__":
    sys.exit(main())
