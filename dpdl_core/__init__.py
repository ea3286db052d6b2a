"""dpdl_core: DPDL and its baselines on one vectorized engine.

>>> from dpdl_core import paper_preset, run
>>> result = run(paper_preset("mnist", "bipartite", rounds=100))
"""
__version__ = "0.1.0"

from .config import ExperimentConfig, paper_preset  # noqa: E402
from .runner import RunResult, run  # noqa: E402

__all__ = ["ExperimentConfig", "RunResult", "paper_preset", "run", "__version__"]
