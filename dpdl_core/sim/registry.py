"""Named registries: the decorators papers use to add σ rules and schedules by name, and
the one hook through which every registry has its plug-ins loaded.

The registries are passive: they hold what was registered and know nothing of where plug-ins
come from. Before a registry lists its names or reports one unknown, it calls
:func:`load_plugins`, which runs the loader the package installs at import
(:func:`dpdl_core.papers.load_all`, set in ``dpdl_core/__init__``), so a paper's algorithm,
model, topology, dataset or σ rule is found whichever module asks first.
"""
from __future__ import annotations

from typing import Callable

__all__ = ["load_plugins", "named_registry", "set_plugin_loader"]

_LOADER: list[Callable[[], None]] = []


def set_plugin_loader(loader: Callable[[], None]) -> None:
    """Install the function that loads every plug-in (it must be idempotent and cheap on
    later calls); replaces the one installed before."""
    _LOADER[:] = [loader]


def load_plugins() -> None:
    """Load every plug-in through the installed loader (none installed: nothing to load)."""
    for loader in _LOADER:
        loader()


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
