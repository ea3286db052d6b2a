"""Named registries: the decorators papers use to add σ rules and schedules by name."""
from __future__ import annotations

from typing import Callable

__all__ = ["named_registry"]


def named_registry(table: dict, kind: str) -> Callable[[str], Callable]:
    """A decorator factory: ``register(name)`` adds the decorated object to ``table`` under
    ``name``; a second, different object under the same name is an error."""

    def register(name: str):
        def deco(obj):
            if table.get(name, obj) is not obj:
                raise ValueError(f"two {kind} are named {name!r}")
            table[name] = obj
            return obj

        return deco

    return register
