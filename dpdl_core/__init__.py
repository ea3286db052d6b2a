"""dpdl_core: decentralized private learning papers on one vectorized engine.

>>> from dpdl_core import run
>>> from dpdl_core.papers.dpdl import preset
>>> result = run(preset("mnist", "bipartite", rounds=100))
"""
from .home import __version__, lazy_face

__all__ = ["ExperimentConfig", "RunResult", "run", "__version__"]

# Imported on first use, not here: `python -m dpdl_core --help` and its errors must answer
# before torch (seconds to import) is loaded.
__getattr__, __dir__ = lazy_face(__name__, {"ExperimentConfig": "runs.config", "RunResult": "runs.runner",
                                            "run": "runs.runner"})
