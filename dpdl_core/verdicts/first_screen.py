"""The README's first screen: the tally, per paper one generated paragraph (what holds, what
is not calibrated, the statements covered, the privacy bought), then per paper a compact table
with one row per claim of the paper (:func:`readme_block`).

A row is a claim of the paper, counted once over the settings it was judged in. Its verdict
is read only where the claim is *calibrated*, i.e. where our run of the paper's own method
reproduces the paper's number (:data:`~dpdl_core.verdicts.claims.CALIBRATIONS`): it fails if it fails
in a calibrated setting, holds if it holds in every calibrated setting, and is undecided
otherwise. A claim with no calibrated setting shows "not calibrated" (or "not reproducible as
written") with the gap, and is counted apart. The package's own diagnostic, check and
beyond-the-paper rows are counted on a separate line; every row and setting is in
``docs/answer.md``.
"""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

from .claims import UNCALIBRATED

__all__ = ["ROW_LIMIT", "SYMBOL", "TALLY", "readme_block", "short", "standing"]

# The longest table row of the first screen, in characters (a test holds every row to it).
ROW_LIMIT = 160
# A claim's standing -> its symbol in the table (the legend under the tally says each).
SYMBOL = {"holds": "✓", "fails": "✗", "inconclusive": "?", "waiting": "…", "not calibrated": "⊘",
          "not reproducible as written": "⊘", "not testable here": "⊘"}
# The tally's columns: standing(s) counted, heading.
TALLY = (("holds", "✓ holds"), ("fails", "✗ fails"), ("inconclusive", "? undecided"),
         (UNCALIBRATED, "⊘ not calibrated or testable"), ("waiting", "… waiting for runs"))
_WORDS = {"holds": "holds", "fails": "fails", "inconclusive": "undecided", "waiting": "waiting for runs",
          "not calibrated": "not calibrated", "not reproducible as written": "not reproducible as written",
          "not testable here": "not testable here"}
_CALIBRATION_CELL = {"calibrated": "yes", "no paper number": "no number", "analytic": "analytic", "": "—"}


def short(text, limit: int, asides: bool = False) -> str:
    """``text`` in at most ``limit`` characters: a leading ``(1)`` and, unless ``asides``,
    parenthesised asides dropped and only the first ``;`` clause kept; cut at a word with
    "…" if still too long."""
    text = re.sub(r"^\(\d+\)\s*", "", str(text).replace("|", "/").replace("\n", " "))
    while not asides:  # innermost parentheses first, so nested asides go too
        shorter = re.sub(r"\s*\([^()]*\)", "", text)
        if shorter == text:
            text = text.split("; ")[0]
            break
        text = shorter
    text = text.strip()
    if len(text) <= limit:
        return text
    cut = text[:limit - 1].rsplit(" ", 1)[0]
    return cut.rstrip(",;:") + "…"


def _waiting(rows: pd.DataFrame) -> np.ndarray:
    return (rows["verdict"] == "inconclusive").to_numpy() & rows["why"].astype(str).str.startswith("not judged")


def standing(rows: pd.DataFrame) -> tuple[str, pd.Series]:
    """A claim's standing over its settings (``rows``: its answer rows), and the row shown.

    Only calibrated settings (any calibration but :data:`~dpdl_core.verdicts.claims.UNCALIBRATED`)
    give a verdict; with none, the standing is the calibration itself. A setting still
    waiting for runs decides nothing."""
    cal = rows[~rows["calibration"].isin(UNCALIBRATED).to_numpy()]
    if cal.empty:
        state = next((s for s in ("not testable here", "not reproducible as written")
                      if (rows["calibration"] == s).all()), "not calibrated")
        return state, rows.iloc[0]
    measured = cal[~_waiting(cal)]
    if measured.empty:
        return "waiting", cal.iloc[0]
    verdicts = set(measured["verdict"])
    state = "fails" if "fails" in verdicts else "holds" if verdicts == {"holds"} else "inconclusive"
    return state, measured[measured["verdict"] == state].iloc[0]


def _where(where: str) -> str:
    """The table or figure of a claim's ``where`` (its last part: ``§VI-C1, Table I`` -> ``Table I``)."""
    return str(where).split(", ")[-1].split("; ")[-1]


def _calibration_cell(state: str, note: str, limit: int) -> str:
    if state == "not testable here":
        return short("untestable: " + str(note).replace("accountant eps", "eps"), limit)
    if state in UNCALIBRATED:
        return short("no: " + str(note), limit)
    return _CALIBRATION_CELL.get(state, state)


def _row(paper_claim: pd.Series, state: str, row: pd.Series, n_settings: int) -> str:
    where = _where(paper_claim["where"])
    claim = short(paper_claim["claim"], 58 - len(where) - 3, asides=True) + f" ({where})"
    if n_settings > 1:
        claim += f" ×{n_settings}"
    paper, ours = short(row["paper_value"], 30), short(row["ours"], 30)
    cal = _calibration_cell(row["calibration"] if state not in UNCALIBRATED else state, row["calibration_note"], 30)
    return f"| {SYMBOL[state]} | {claim} | {paper} | {ours} | {cal} |"


def _sentence(title: str, counts: dict[str, int], apart: int) -> str:
    """The paper's paragraph: its claims by standing, how many are read at a calibrated
    operating point, and how many rows of the package's own are counted apart."""
    n = sum(counts.values())
    parts = [f"{counts[k]} {_WORDS[k] if k != 'holds' or counts[k] == 1 else 'hold'}" for k in
             ("holds", "fails", "inconclusive", "not calibrated", "not reproducible as written", "not testable here",
             "waiting")
             if counts.get(k)]
    text = f"**{title}**: {n} claims — {', '.join(parts) or 'none judged'}."
    calibrated = counts.get("holds", 0) + counts.get("fails", 0) + counts.get("inconclusive", 0)
    if calibrated < n - counts.get("waiting", 0):
        text += (f" {calibrated or 'None'} of them {'is' if calibrated == 1 else 'are'} read at a calibrated "
                 "operating point; the others judge our reading, not the paper.")
    if apart:
        text += f" Our own rows, counted apart: {apart}."
    return text


def readme_block(claims: pd.DataFrame, progress: pd.DataFrame, every: pd.DataFrame, titles: dict[str, str],
                 privacy: dict[str, str], coverage: dict[str, dict], left_out: frozenset = frozenset(),
                 left: dict[str, str] | None = None) -> str:
    """The README's answer block.

    Parameters
    ----------
    claims : DataFrame
        Every study's answer rows (:data:`~dpdl_core.verdicts.answer.COLUMNS`).
    progress : DataFrame
        One row per study (paper, stored, runs).
    every : DataFrame
        Every claim the papers declare (paper, id, claim, where, kind, by_construction).
    titles, privacy : dict
        Per paper: its short title; its line of nominal against accountant ε ("" for none).
    coverage : dict
        Per paper: :func:`~dpdl_core.verdicts.statements.coverage` of its result statements.
    left_out : set of (paper, id)
        Claims a study leaves out (with its reason, listed by the caller): not in the table.
    left : dict, optional
        Per paper: its line on the runs still to compute ("" for none).
    """
    left = left or {}
    keep = [(p, i) not in left_out for p, i in zip(every["paper"], every["id"])]
    own = every[(every["kind"] == "paper").to_numpy() & ~every["by_construction"].astype(bool).to_numpy()
                & np.array(keep, dtype=bool)]
    tally, sentences, sections = {}, [], []
    for paper, specs in own.groupby("paper", sort=True):
        rows_of = claims[claims["paper"] == paper]
        counts: dict[str, int] = {}
        lines = ["| | claim (where) | paper | ours | calibrated |", "|---|---|---|---|---|"]
        for spec in specs.itertuples(index=False):
            rows = rows_of[rows_of["id"] == spec.id]
            if rows.empty:
                state = "waiting"
                lines.append(f"| {SYMBOL[state]} | {short(spec.claim, 58 - len(_where(spec.where)) - 3, asides=True)} "
                             f"({_where(spec.where)}) | | not run yet | |")
            else:
                state, shown = standing(rows)
                lines.append(_row(pd.Series(spec._asdict()), state, shown, rows["setting"].nunique()))
            counts[state] = counts.get(state, 0) + 1
        apart = int((~rows_of["kind"].isin(["paper"])).sum())
        tally[paper] = (counts, apart)
        head = [_sentence(titles.get(paper, paper), counts, apart)]
        cov = coverage.get(paper)
        if cov:
            head.append(f"Result statements in the text: {cov['statements']}; {cov['judged']} judged by these "
                        f"claims, {cov['not_testable']} not testable, {cov['not_run']} needing runs not made, "
                        f"{cov['inconsistent']} at odds with the paper's own tables.")
        if privacy.get(paper):
            head.append(privacy[paper])
        if left.get(paper):
            head.append(left[paper])
        sentences.append(" ".join(head))
        sections.append("\n".join([f"### {paper}", "", *lines]))
    done = {p.paper: f"{p.stored}/{p.runs}" for p in progress.itertuples()}
    summary = ["| paper | claims | " + " | ".join(h for _, h in TALLY) + " | study runs stored | our own rows |",
               "|---|" + "---|" * (len(TALLY) + 3)]
    for paper, (counts, apart) in tally.items():
        cells = [sum(counts.get(s, 0) for s in ((k,) if isinstance(k, str) else k)) for k, _ in TALLY]
        summary.append(f"| {paper} | {sum(counts.values())} | " + " | ".join(map(str, cells))
                       + f" | {done.get(paper, '—')} | {apart} |")
    legend = ("✓ holds and ✗ fails are read where our run of the paper's own method reproduces the paper's number "
              "(*calibrated*); ? is inside the tolerance plus the seed spread; ⊘ marks a claim with no calibrated "
              "setting (the gap is in the last column) or one its setting cannot test; … waits for runs. ×n: "
              "judged in n settings, the row shows the one that decides. Every setting, tolerance and number: "
              "[docs/answer.md](docs/answer.md).")
    return "\n".join([*summary, "", "\n\n".join(sentences), "", legend, "", "\n\n".join(sections)])
