"""Every result statement a paper makes, and what the package does with it.

A paper's package lists, in ``statements.py``, ``STATEMENTS``: one :class:`Statement` for
each result statement of its text (experimental section, abstract, introduction,
conclusion), quoted word for word. Each has a status:

``judged``
    A declared claim decides it: ``claims`` names the claim ids (keys of the paper's
    ``claims.SPECS``).
``not_testable``
    Nothing the package can run decides it; ``why`` says so (e.g. "the figure has curves
    and no numbers, and the text gives none").
``not_run``
    Runs would decide it, and they are not in the committed studies; ``needs`` says which
    runs, their cost, and what would make them affordable. Where a study declares the runs
    and the claims that judge them, ``claims`` names those claims; they wait for the runs.
``inconsistent``
    A number the statement quotes disagrees with the paper's own table; ``why`` gives
    both. A finding about the text, not something to reproduce.

:func:`check_statements` is what ``tests/test_statements.py`` runs over every paper: each
quote occurs in the paper's text (whitespace and hyphenation at line breaks aside), each
status has what it needs, and every named claim exists.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable, Mapping

__all__ = ["KINDS", "STATUSES", "Statement", "check_statements", "coverage", "normalise"]

KINDS = ("comparison", "trend", "magnitude", "convergence", "robustness", "theory", "privacy")
STATUSES = ("judged", "not_testable", "not_run", "inconsistent")


@dataclass(frozen=True)
class Statement:
    """One result statement of a paper.

    Attributes
    ----------
    id : str
        Unique within the paper (``"s06_dpdl_best_mnist"``).
    quote : str
        The statement's words as the text has them (a contiguous excerpt; line breaks and
        runs of spaces may be written as one space).
    where : str
        Section, table or figure, and the line of the text file (``"§VI-C1, L1203"``).
    kind : str
        One of :data:`KINDS`.
    status : str
        One of :data:`STATUSES`.
    claims : tuple of str
        The claim ids that judge it (``status="judged"``), or that will once its runs are
        stored (``status="not_run"``).
    why : str
        Why it is not testable, or what disagrees (``not_testable``, ``inconsistent``).
    needs : str
        The runs that would decide it, their cost and what would make them affordable
        (``not_run``).
    """

    id: str
    quote: str
    where: str
    kind: str
    status: str
    claims: tuple[str, ...] = field(default_factory=tuple)
    why: str = ""
    needs: str = ""


def normalise(text: str) -> str:
    """Lower case, words joined across line-break hyphens, every run of whitespace one space."""
    text = re.sub(r"-\s*\n\s*", "-", text)
    return re.sub(r"\s+", " ", text).strip().lower()


def check_statements(statements: Iterable[Statement], text: str, claim_ids: Iterable[str]) -> list[str]:
    """What is wrong with a paper's statement list (empty: nothing).

    Parameters
    ----------
    statements : iterable of Statement
    text : str
        The paper's text (``shared/papers/<paper>.txt``).
    claim_ids : iterable of str
        The paper's declared claims (``claims.SPECS``).
    """
    body, known, problems, seen = normalise(text), set(claim_ids), [], set()
    for s in statements:
        if s.id in seen:
            problems.append(f"{s.id}: the id is used twice")
        seen.add(s.id)
        if normalise(s.quote) not in body and normalise(s.quote).replace("- ", "-") not in body:
            problems.append(f"{s.id}: the quote is not in the text: {s.quote[:80]!r}")
        if s.kind not in KINDS:
            problems.append(f"{s.id}: kind {s.kind!r} is not one of {KINDS}")
        if s.status not in STATUSES:
            problems.append(f"{s.id}: status {s.status!r} is not one of {STATUSES}")
        if not s.where.strip():
            problems.append(f"{s.id}: no place in the text (where)")
        if s.status == "judged" and not s.claims:
            problems.append(f"{s.id}: judged, but names no claim")
        if s.status in ("judged", "not_run"):
            problems += [f"{s.id}: claim {c!r} is not declared" for c in s.claims if c not in known]
        elif s.claims:
            problems.append(f"{s.id}: names claims but is {s.status}")
        if s.status in ("not_testable", "inconsistent") and not s.why.strip():
            problems.append(f"{s.id}: {s.status} without a why")
        if s.status == "not_run" and not s.needs.strip():
            problems.append(f"{s.id}: not_run without what it needs")
    return problems


def coverage(statements: Iterable[Statement]) -> Mapping[str, int]:
    """``{"statements": n, "judged": j, "not_testable": t, "not_run": r, "inconsistent": i}``."""
    counts = {"statements": 0, **{s: 0 for s in STATUSES}}
    for s in statements:
        counts["statements"] += 1
        counts[s.status] += 1
    return counts
