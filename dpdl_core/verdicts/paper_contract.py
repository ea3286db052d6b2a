"""The paper contract: what a paper package exposes, so that the generic core (``run``,
sweeps, ``plan``, the report, studies) serves it without naming it.

A paper is a package ``<name>/`` in ``dpdl_core/papers/`` or in a folder of
``$DPDL_PAPERS_PATH`` (:mod:`dpdl_core.papers`). It holds:

========================  ===================================================================
``__init__.py``           ``TITLE`` (str); imports the modules that register its algorithms
                          (``@register``), σ rules (``@register_sigma_rule``), models
                          (``@register_model``), topologies (``@register_topology``),
                          datasets (``register_dataset``) and schedules; optionally
                          ``configs(profile, group=None) -> list[RunGroup]``, the runs its
                          notebooks sweep (``python -m dpdl_core plan``), or only the group named
                          ``group`` (ValueError naming the allowed groups for another name:
                          :func:`~dpdl_core.runs.plan.select_groups`); a paper whose outputs are
                          not runs of :class:`~dpdl_core.runs.config.ExperimentConfig` has none;
                          optionally ``summary_markdown(profile) -> str`` (``python -m
                          dpdl_core summary``; FileNotFoundError when nothing is stored).
``profiles.yaml``         one mapping per profile (``smoke``, ``cpu``, ``paper``), each with a
                          ``description``; read by :func:`dpdl_core.runs.profiles.load_profile`.
``claims.py``             ``SPECS``: ``{id: ClaimSpec}`` of every claim the builders check
                          (:mod:`dpdl_core.verdicts.claims`).
builders                  one function per notebook (in ``figures.py`` / ``results.py``),
                          called once by it as ``out = builder(...)``; it runs what the
                          store lacks, writes its outputs and returns an
                          :class:`~dpdl_core.verdicts.outputs.Output`: ``files`` (what it wrote),
                          ``claims`` (:func:`~dpdl_core.verdicts.claims.claims_frame` of the claims
                          it checked; no rows where it checks none), and what the notebook
                          shows: ``tables`` (named DataFrames), ``figure``, ``text`` (a
                          table's Markdown, a figure's caption or notes).
                          :func:`~dpdl_core.verdicts.reporting.table_output` makes a table's.
``study.py`` (optional)   the paper-scale study: ``study() -> Study`` (:mod:`dpdl_core.runs.studies`),
                          its runs at the paper's scale; ``answer(store=None) -> DataFrame``,
                          the rows of the README's answer (:func:`dpdl_core.verdicts.answer.answer_frame`
                          of its judged claims, each with its :class:`Evidence`: ``paper`` /
                          ``ours`` / ``why``, and its calibration); optionally ``NOT_JUDGED``, ``{claim id:
                          why the study leaves it out}``.
``statements.py``         (optional) ``STATEMENTS``: every result statement of the text
                          (:class:`dpdl_core.verdicts.statements.Statement`), each judged by claims of
                          ``SPECS``, not testable, not run or inconsistent.
``reference/*.csv``       the paper's own numbers (:func:`dpdl_core.verdicts.reporting.load_reference`).
``README.md``             what goes in, what comes out, the choices where the paper is silent.
========================  ===================================================================

Outputs are named ``<paper>_<notebook key>`` (``pdsl_tab01_mnist_accuracy``), which is how
the report attributes a file to its paper and notebook. :func:`check_paper` lists what a
package misses; ``tests/test_paper_contract.py`` runs it over every paper and checks that
the builder every notebook calls returns an ``Output`` (by its annotation; the fixture
paper's by running it).
"""
from __future__ import annotations

import importlib
from typing import Protocol, TypedDict, runtime_checkable

__all__ = ["Evidence", "Paper", "check_paper"]


class Evidence(TypedDict):
    """A judged claim's evidence in the answer (``study.answer``'s rows): the paper's own
    number or words, ours, and why the verdict follows from them."""

    paper: str
    ours: str
    why: str


@runtime_checkable
class Paper(Protocol):
    """What every paper package's ``__init__`` exposes (``configs`` is optional)."""

    TITLE: str


def check_paper(name: str) -> list[str]:
    """What paper ``name`` misses of the contract (empty: it conforms).

    Imports the paper (a paper that fails to import is reported, not raised), reads its
    profiles, claim specs and reference tables, and builds its ``smoke`` run groups (all,
    and each alone).
    """
    from .. import papers
    from ..runs.profiles import PROFILES, load_profile
    from .claims import ClaimSpec
    from .reporting import load_reference

    try:
        module = papers.get_paper(name)
    except papers.PaperImportError as exc:
        return [str(exc)]
    problems = []
    if not isinstance(module, Paper) or not isinstance(module.TITLE, str) or not module.TITLE:
        problems.append("__init__ has no TITLE")
    folder = papers.paper_dir(name)
    if not (folder / "README.md").exists():
        problems.append("no README.md")
    for profile in PROFILES:
        try:
            section = load_profile(profile, paper=name)
        except Exception as exc:  # a missing file or section: reported with its message
            problems.append(f"profiles.yaml: {profile}: {type(exc).__name__}: {exc}")
            continue
        if not isinstance(section, dict) or not section.get("description"):
            problems.append(f"profiles.yaml: {profile} has no description")
    specs = {}
    try:
        specs = importlib.import_module(f"{module.__name__}.claims").SPECS
    except (ImportError, AttributeError) as exc:
        problems.append(f"claims.py with SPECS: {type(exc).__name__}: {exc}")
    else:
        for key, spec in specs.items():
            if not isinstance(spec, ClaimSpec) or spec.id != key or spec.paper != name:
                problems.append(f"claims.SPECS[{key!r}] is not a ClaimSpec of {name!r} with that id")
    for csv in sorted((folder / "reference").glob("*.csv")):
        if load_reference(name, csv.stem).empty:
            problems.append(f"reference/{csv.name} is empty")
    if hasattr(module, "configs"):
        problems += _check_configs(name)
    return problems + _check_study(module.__name__, folder, set(specs) if isinstance(specs, dict) else set())


def _check_study(package: str, folder, claim_ids: set[str]) -> list[str]:
    """What the study half of a paper misses: ``study()`` returning a
    :class:`~dpdl_core.runs.studies.Study` and a callable ``answer`` where ``study.py`` exists,
    ``NOT_JUDGED`` naming claims of ``SPECS`` with a reason each, and statements judged by
    claims of ``SPECS``."""
    from ..runs.studies import Study
    from .statements import STATUSES, Statement

    problems = []
    if (folder / "study.py").exists():
        module = importlib.import_module(f"{package}.study")
        if not callable(getattr(module, "study", None)) or not isinstance(module.study(), Study):
            problems.append("study.py: study() must return a Study")
        if not callable(getattr(module, "answer", None)):
            problems.append("study.py: answer(store=None) is missing")
        for key, why in getattr(module, "NOT_JUDGED", {}).items():
            if key not in claim_ids or not isinstance(why, str) or not why:
                problems.append(f"study.NOT_JUDGED[{key!r}] must name a claim of SPECS and say why")
    if (folder / "statements.py").exists():
        statements = getattr(importlib.import_module(f"{package}.statements"), "STATEMENTS", None)
        if not isinstance(statements, tuple) or not all(isinstance(st, Statement) for st in statements):
            problems.append("statements.py: STATEMENTS must be a tuple of Statement")
        else:
            for st in statements:
                unknown = [c for c in st.claims if c not in claim_ids]
                if st.status not in STATUSES or unknown:
                    problems.append(f"statements.py: {st.id}: status {st.status!r}, claims not in SPECS: {unknown}")
    return problems


def _check_configs(name: str) -> list[str]:
    """What paper ``name``'s ``configs`` hook misses: non-empty run groups at ``smoke``, each
    selected alone by its name, and a ValueError for a name that is none of them."""
    from ..runs.plan import RunGroup, paper_groups

    groups = paper_groups(name, "smoke")
    if not groups or not all(isinstance(g, RunGroup) and g.configs for g in groups):
        return ["configs('smoke') must return non-empty RunGroups"]
    problems = [f"configs('smoke', {g.name!r}) must return that group alone" for g in groups
                if [(h.name, h.configs) for h in paper_groups(name, "smoke", g.name)] != [(g.name, g.configs)]]
    try:
        paper_groups(name, "smoke", "no such group")
        problems.append("configs('smoke', 'no such group') must raise ValueError")
    except ValueError:
        pass
    return problems
