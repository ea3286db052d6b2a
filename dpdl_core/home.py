"""The ground floor every wing may import: the package's version, where it lives, and the
lazy faces the wings and the package show to their users."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from pathlib import Path

__all__ = ["PACKAGE_DIR", "REPO_ROOT", "__version__", "lazy_face"]

__version__ = "0.1.0"
PACKAGE_DIR = Path(__file__).resolve().parent
# The checkout holding the package: results/, figures/, notebooks/, benchmarks/.
REPO_ROOT = PACKAGE_DIR.parent


def lazy_face(package: str, public: Mapping[str, str]) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for a package whose public names live in its modules.

    Each name is imported from its module (``public[name]``, relative to ``package``) on first
    use, so importing a face costs nothing: ``python -m dpdl_core --help`` and the command
    line's checks answer before torch loads.
    """
    def __getattr__(name: str) -> object:
        if name not in public:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(import_module(f".{public[name]}", package), name)

    def __dir__() -> list[str]:
        return sorted(public)

    return __getattr__, __dir__
