"""dpdl_core: decentralized private learning papers on one vectorized engine.

>>> from dpdl_core import run
>>> from dpdl_core.papers.dpdl import preset
>>> result = run(preset("mnist", "bipartite", rounds=100))
"""
__version__ = "0.1.0"

from .config import ExperimentConfig  # noqa: E402
from .runner import RunResult, run  # noqa: E402

__all__ = ["ExperimentConfig", "RunResult", "run", "__version__"]
