"""The papers' result-statement lists (``dpdl_core/papers/<paper>/statements.py``) and their
checker (:mod:`dpdl_core.verdicts.statements`).

For each paper: every quote is in its text, every judged statement names declared claims and
every status has what it needs (DPDL's list is checked once it exists). For PDSL, LEASGD and
the straggler paper also: each quote starts on the line its ``where`` names, and every claim
the paper makes (kind ``paper``, not by construction) is named by a judged statement. Every
number PDSL's text quotes for Tables I-II is recomputed from ``reference/pdsl_accuracy.csv``:
within one unit of its last printed digit where the statement is not ``inconsistent``, outside
it where it is; LEASGD's ``inconsistent`` statement is recomputed from its own eq. (7). The
checker itself is run on made-up lists, one for each kind of problem it must find.
"""
from __future__ import annotations

import importlib
import importlib.util
import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpdl_core.papers.leasgd import statements as leasgd_statements
from dpdl_core.papers.pdsl import claims as pdsl_claims
from dpdl_core.papers.pdsl import statements as pdsl_statements
from dpdl_core.papers.straggler import statements as straggler_statements
from dpdl_core.verdicts.statements import STATUSES, Statement, check_statements, coverage, normalise

PAPERS_TEXT = Path(__file__).resolve().parents[2] / "shared" / "papers"
TEXT_FILES = {"dpdl": "dpdl.txt", "pdsl": "pdsl.txt", "leasgd": "leasgd.txt", "straggler": "straggler_resilient_dp.txt"}
OURS = {"pdsl": pdsl_statements, "leasgd": leasgd_statements, "straggler": straggler_statements}


def _statements(paper: str):
    """The paper's statements module; DPDL's is skipped until it exists."""
    name = f"dpdl_core.papers.{paper}.statements"
    if importlib.util.find_spec(name) is None:
        pytest.skip(f"{name} does not exist yet")
    return importlib.import_module(name)


def _text(paper: str) -> str:
    path = PAPERS_TEXT / TEXT_FILES[paper]
    if not path.exists():
        pytest.skip(f"the paper texts are not in {PAPERS_TEXT} (a checkout without ../shared)")
    return path.read_text(encoding="utf-8")


def _by_id(module) -> dict[str, Statement]:
    return {s.id: s for s in module.STATEMENTS}


# -- each paper's list --------------------------------------------------------------------------

@pytest.mark.parametrize("paper", ["dpdl", *OURS])
def test_statements_pass_the_checker(paper):
    module = _statements(paper)
    claims = importlib.import_module(f"dpdl_core.papers.{paper}.claims")
    assert check_statements(module.STATEMENTS, _text(paper), claims.SPECS) == []


@pytest.mark.parametrize("paper", OURS)
def test_quote_starts_on_the_line_where_names(paper):
    lines = _text(paper).split("\n")
    for s in OURS[paper].STATEMENTS:
        line = re.search(r"\bL(\d+)", s.where)
        assert line, f"{s.id}: where ({s.where!r}) names no line"
        assert normalise(s.quote)[:30] in normalise(lines[int(line.group(1)) - 1]), (
            f"{s.id}: the quote does not start on L{line.group(1)}")


@pytest.mark.parametrize("paper", OURS)
def test_every_claim_of_the_paper_is_named_by_a_judged_statement(paper):
    specs = importlib.import_module(f"dpdl_core.papers.{paper}.claims").SPECS
    named = {c for s in OURS[paper].STATEMENTS if s.status == "judged" for c in s.claims}
    evidence = {i for i, spec in specs.items() if spec.kind == "paper" and not spec.by_construction}
    assert evidence - named == set()


@pytest.mark.parametrize("paper", OURS)
def test_coverage_counts_every_statement_once(paper):
    counts = coverage(OURS[paper].STATEMENTS)
    assert counts["statements"] == len(OURS[paper].STATEMENTS) == sum(counts[s] for s in STATUSES)


# -- every number PDSL's text quotes for Tables I-II --------------------------------------------

_PDSL_BASELINES = ("DP-DPSGD", "DP-CGA", "MUFFLIATO", "DP-NET-FLEET")
_MNIST_FC = ("mnist", "fully_connected")
_CIFAR_FC = ("cifar10", "fully_connected")
# (statement, dataset, graph, epsilon, M, measure, the baseline or the range's side, quoted, one
# unit of its last printed digit). Measures: PDSL's accuracy; its gain over a baseline in
# percentage points (the text's "improvement of x%"); its accuracy over a baseline's ("times
# higher"); the smallest ("low") or largest ("high") gain or ratio over the four baselines.
PDSL_QUOTED = [
    ("s30_tab1_pdsl_0_938", *_MNIST_FC, 0.08, 10, "accuracy", None, 0.938, 0.001),
    *(("s31_tab1_gains_eps008", *_MNIST_FC, 0.08, 10, "pp", b, q, u)
      for b, q, u in (("DP-DPSGD", 8.5, 0.1), ("DP-CGA", 5.7, 0.1), ("MUFFLIATO", 10, 1), ("DP-NET-FLEET", 2.6, 0.1))),
    ("s33_tab1_m20_gains_3_to_26", *_MNIST_FC, 0.08, 20, "accuracy", None, 0.932, 0.001),
    ("s33_tab1_m20_gains_3_to_26", *_MNIST_FC, 0.08, 20, "pp", "low", 3, 1),
    ("s33_tab1_m20_gains_3_to_26", *_MNIST_FC, 0.08, 20, "pp", "high", 26, 1),
    *(("s36_tab1_bipartite_m20_ratios", "mnist", "bipartite", 0.3, 20, "ratio", b, q, 0.01)
      for b, q in zip(_PDSL_BASELINES, (1.38, 1.12, 1.13, 1.06))),
    ("s37_tab1_ring_m20_ratios", "mnist", "ring", 0.3, 20, "ratio", "low", 1.02, 0.01),
    ("s37_tab1_ring_m20_ratios", "mnist", "ring", 0.3, 20, "ratio", "high", 1.36, 0.01),
    ("s47_tab2_pdsl_0_758", *_CIFAR_FC, 1.0, 10, "accuracy", None, 0.758, 0.001),
    *(("s48_tab2_gains_eps1_m10", *_CIFAR_FC, 1.0, 10, "pp", b, q, u)
      for b, q, u in (("DP-DPSGD", 27.3, 0.1), ("DP-CGA", 16.2, 0.1), ("MUFFLIATO", 23, 1),
                      ("DP-NET-FLEET", 20.7, 0.1))),
    ("s50_tab2_m20_gains_23_to_30", *_CIFAR_FC, 1.0, 20, "pp", "low", 23, 1),
    ("s50_tab2_m20_gains_23_to_30", *_CIFAR_FC, 1.0, 20, "pp", "high", 30, 1),
    ("s51_tab2_eps05_gains_15_to_31", *_CIFAR_FC, 0.5, 10, "accuracy", None, 0.691, 0.001),
    ("s51_tab2_eps05_gains_15_to_31", *_CIFAR_FC, 0.5, 10, "pp", "low", 15, 1),
    ("s51_tab2_eps05_gains_15_to_31", *_CIFAR_FC, 0.5, 10, "pp", "high", 31, 1),
    ("s53_tab2_bipartite_m20_ratios", "cifar10", "bipartite", 1.0, 20, "accuracy", None, 0.712, 0.001),
    *(("s53_tab2_bipartite_m20_ratios", "cifar10", "bipartite", 1.0, 20, "ratio", b, q, 0.01)
      for b, q in zip(_PDSL_BASELINES, (1.68, 1.55, 1.52, 1.71))),
    *(("s54_tab2_ring_m20_ratios", "cifar10", "ring", 1.0, 20, "ratio", b, q, 0.01)
      for b, q in zip(_PDSL_BASELINES, (1.49, 1.21, 1.23, 1.16))),
]


@pytest.fixture(scope="module")
def pdsl_table() -> pd.DataFrame:
    return pd.read_csv(Path(pdsl_claims.__file__).parent / "reference" / "pdsl_accuracy.csv")


def _cell(table: pd.DataFrame, dataset: str, topology: str, epsilon: float, m: int) -> pd.Series:
    """Accuracy by algorithm of one Table I/II cell."""
    rows = table[(table["dataset"] == dataset) & (table["topology"] == topology)
                 & np.isclose(table["epsilon"], epsilon) & (table["n_agents"] == m)]
    return rows.set_index("algorithm")["accuracy"]


def _table_value(cell: pd.Series, measure: str, which) -> float:
    if measure == "accuracy":
        return float(cell["PDSL"])
    of = {"pp": lambda b: 100 * (cell["PDSL"] - cell[b]), "ratio": lambda b: cell["PDSL"] / cell[b]}[measure]
    if which in ("low", "high"):
        values = [float(of(b)) for b in _PDSL_BASELINES]
        return min(values) if which == "low" else max(values)
    return float(of(which))


def test_pdsl_quoted_numbers_cover_every_table_magnitude():
    quoted = {row[0] for row in PDSL_QUOTED}
    tables = {s.id for s in pdsl_statements.STATEMENTS if s.kind == "magnitude" and "Table" in s.where}
    assert quoted == tables


@pytest.mark.parametrize("row", PDSL_QUOTED, ids=lambda r: f"{r[0]}-{r[5]}-{r[6]}")
def test_pdsl_quoted_number_against_its_table(row, pdsl_table):
    sid, dataset, topology, epsilon, m, measure, which, quoted, unit = row
    s = _by_id(pdsl_statements)[sid]
    assert f"{quoted:g}" in s.quote
    value = _table_value(_cell(pdsl_table, dataset, topology, epsilon, m), measure, which)
    agrees = abs(value - quoted) < unit
    # The one disagreeing number is the inconsistent statement's low end; every other agrees.
    assert agrees == (sid != "s50_tab2_m20_gains_23_to_30" or which != "low"), (sid, measure, which, value, quoted)


def test_pdsl_inconsistent_gain_range_recomputed(pdsl_table):
    s = _by_id(pdsl_statements)["s50_tab2_m20_gains_23_to_30"]
    assert s.status == "inconsistent"
    ranges = {}
    for topology in ("fully_connected", "bipartite", "ring"):
        cell = _cell(pdsl_table, "cifar10", topology, 1.0, 20)
        ranges[topology] = (_table_value(cell, "pp", "low"), _table_value(cell, "pp", "high"))
    low, high = ranges["fully_connected"]
    assert abs(low - 23) >= 1 and abs(high - 30) < 1
    # No graph of Table II gives the quoted low end either.
    assert all(abs(lo - 23) >= 1 for lo, _ in ranges.values())
    for topology, (lo, hi) in ranges.items():
        assert f"{lo:.1f}" in s.why and f"{hi:.1f}" in s.why, topology


def test_leasgd_inconsistent_shrink_factor_recomputed():
    s = _by_id(leasgd_statements)["s13_shrink_factor_decreases_with_p"]
    assert s.status == "inconsistent"

    def h(p, gamma):  # eq. (7), L99
        return p * (1 - gamma) / (p + 1)

    for gamma in (0.01, 0.1, 0.5, 0.9):
        assert np.all(np.diff([h(p, gamma) for p in range(1, 16)]) > 0), gamma
    assert f"{h(1, 0.1):.3f}" in s.why and f"{h(4, 0.1):.3f}" in s.why


def test_every_inconsistent_statement_is_recomputed_here():
    found = {(paper, s.id) for paper, module in OURS.items() for s in module.STATEMENTS if s.status == "inconsistent"}
    assert found == {("pdsl", "s50_tab2_m20_gains_23_to_30"), ("leasgd", "s13_shrink_factor_decreases_with_p")}


# -- the checker on made-up lists ---------------------------------------------------------------

TEXT = ("The method reaches a lower loss than the baseline.\n"
        "Its accuracy is privacy-\n  preserving and grows with\n epsilon.")
CLAIM_IDS = ("fig.lower", "tab.grows")
GOOD = Statement("a", "reaches a lower loss than the baseline", "§1, L1", "comparison", "judged", claims=("fig.lower",))


def test_checker_accepts_a_correct_list():
    statements = [GOOD,
                  Statement("b", "ITS ACCURACY IS privacy-preserving and grows with epsilon", "§1, L2", "trend",
                            "not_run", needs="one run"),
                  Statement("e", "grows with epsilon", "§1, L3", "trend", "not_run", claims=("tab.grows",),
                            needs="the runs tab.grows waits for"),
                  Statement("c", "grows with epsilon", "§1, L3", "trend", "not_testable", why="no number"),
                  Statement("d", "lower loss", "§1, L1", "magnitude", "inconsistent", why="0.1 vs 0.2")]
    assert check_statements(statements, TEXT, CLAIM_IDS) == []


@pytest.mark.parametrize("statements, expected", [
    ([replace(GOOD, quote="reaches a higher loss than the baseline")], "a: the quote is not in the text"),
    ([replace(GOOD, claims=("fig.other",))], "a: claim 'fig.other' is not declared"),
    ([replace(GOOD, claims=())], "a: judged, but names no claim"),
    ([replace(GOOD, status="not_run", claims=())], "a: not_run without what it needs"),
    ([GOOD, replace(GOOD, quote="lower loss")], "a: the id is used twice"),
    ([replace(GOOD, status="not_testable", claims=())], "a: not_testable without a why"),
    ([replace(GOOD, status="inconsistent", claims=())], "a: inconsistent without a why"),
    ([replace(GOOD, status="not_testable", why="no number")], "a: names claims but is not_testable"),
    ([replace(GOOD, status="not_run", needs="one run", claims=("fig.other",))], "a: claim 'fig.other' is not declared"),
    ([replace(GOOD, kind="guess")], "a: kind 'guess' is not one of"),
    ([replace(GOOD, status="maybe", claims=())], "a: status 'maybe' is not one of"),
    ([replace(GOOD, where=" ")], "a: no place in the text"),
], ids=["wrong quote", "unknown claim", "judged without claims", "not_run without needs", "duplicate id",
        "not_testable without why", "inconsistent without why", "claims on another status",
        "unknown claim waiting for runs", "unknown kind",
        "unknown status", "no where"])
def test_checker_finds_each_problem(statements, expected):
    problems = check_statements(statements, TEXT, CLAIM_IDS)
    assert len(problems) == 1 and problems[0].startswith(expected), problems


def test_coverage_counts_by_status():
    statements = [GOOD, replace(GOOD, id="b", status="not_run", claims=(), needs="x"),
                  replace(GOOD, id="c", status="not_run", claims=(), needs="y"),
                  replace(GOOD, id="d", status="inconsistent", claims=(), why="z")]
    assert dict(coverage(statements)) == {"statements": 4, "judged": 1, "not_testable": 0, "not_run": 2,
                                          "inconsistent": 1}
    assert dict(coverage([])) == {"statements": 0, **{s: 0 for s in STATUSES}}


def test_a_statements_status_follows_its_claims_runs():
    """A ``not_run`` statement whose claims are decided from committed runs in every setting they
    declare must be marked ``judged``, and a ``judged`` one must not rest on claims that still wait for runs: the
    counts in the README follow the stores, not a status typed once."""
    from dpdl_core.verdicts.answer import answer_rows

    claims, _ = answer_rows()
    waiting = claims["verdict"].eq("inconclusive") & claims["why"].astype(str).str.startswith("not judged")
    state = {(paper, cid): "waiting" if w.all() else "partly" if w.any() else "decided"
             for (paper, cid), w in waiting.groupby([claims["paper"], claims["id"]])}
    problems = []
    for paper in TEXT_FILES:
        for s in _statements(paper).STATEMENTS:
            states = {state.get((paper, c)) for c in s.claims}
            if s.status == "not_run" and s.claims and states == {"decided"}:
                problems.append(f"{paper} {s.id}: its claims {s.claims} are decided by committed runs; mark it judged")
            if s.status == "judged" and states == {"waiting"}:
                problems.append(f"{paper} {s.id}: judged, but its claims {s.claims} all wait for runs; mark it not_run")
    assert not problems, "\n".join(problems)
