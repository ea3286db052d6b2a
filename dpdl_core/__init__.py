"""dpdl_core: decentralized private learning papers on one vectorized engine.

>>> from dpdl_core import run
>>> from dpdl_core.papers.dpdl import preset
>>> result = run(preset("mnist", "bipartite", rounds=100))
"""
from .home import __version__, lazy_face
from .papers import load_all as _load_papers
from .sim.registry import set_plugin_loader

# The registries are passive (dpdl_core.sim.registry): the paper loader is their one source
# of plug-ins, installed here, so a paper is found whichever registry is asked first.
set_plugin_loader(_load_papers)

__all__ = ["ExperimentConfig", "RunResult", "run", "__version__"]

# Imported on first use, not here: `python -m dpdl_core --help` and its errors must answer
# before torch (seconds to import) is loaded.
__getattr__, __dir__ = lazy_face(__name__, {"ExperimentConfig": "runs.config", "RunResult": "runs.runner",
                                            "run": "runs.runner"})
