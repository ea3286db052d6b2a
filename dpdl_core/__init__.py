"""dpdl_core: decentralized private learning papers on one vectorized engine.

>>> from dpdl_core import run
>>> from dpdl_core.papers.dpdl import preset
>>> result = run(preset("mnist", "bipartite", rounds=100))
"""
__version__ = "0.1.0"

__all__ = ["ExperimentConfig", "RunResult", "run", "__version__"]

# Imported on first use, not here: `python -m dpdl_core --help` and its errors must answer
# before torch (seconds to import) is loaded.
_LAZY = {"ExperimentConfig": "config", "RunResult": "runner", "run": "runner"}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(list(globals()) + list(_LAZY))
