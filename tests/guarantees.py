"""Counters of what the robustness tests tried (fuzz cases, kills survived, ...).

Tests call :func:`record`; ``conftest.pytest_terminal_summary`` prints the totals at the
end of the run, so the "Guarantees" counts of docs/guarantees.md can be read off any CI log.
"""
from collections import Counter

__all__ = ["COUNTS", "record"]

COUNTS: Counter = Counter()


def record(name: str, n: int = 1) -> None:
    """Add ``n`` to the counter ``name`` (e.g. "config fuzz cases tried")."""
    COUNTS[name] += n
