"""The engine's execution strategies, by name: how it evaluates, takes whole-batch gradients
and forms per-sample clipped sums. They change how a result is computed, never what (up to
float summation order); a config names one of each (:mod:`dpdl_core.runs.config`) and the engine
runs it (:class:`dpdl_core.sim.engine.Engine`). This module imports nothing, so the command line's
early config check reads the names without loading torch."""

__all__ = ["AUTO", "BATCH_GRAD_STRATEGIES", "EVAL_STRATEGIES", "PER_SAMPLE_KERNELS", "PER_SAMPLE_STRATEGIES"]

# A config's ``per_sample_strategy: auto``: the kernel a measured rule picks for its model
# (:func:`dpdl_core.runs.config.per_sample_rule`), fixed when the config is made.
AUTO = "auto"

# How the engine evaluates M models on a test set (Engine.evaluate).
EVAL_STRATEGIES = ("vmap", "per_model")
# How the engine computes whole-batch gradients of several models (Engine.batch_gradients).
BATCH_GRAD_STRATEGIES = ("vmap", "per_model")
# How it computes per-sample clipped sums (Engine.clipped_sums; vmap: its "auto" kernels).
PER_SAMPLE_KERNELS = ("vmap", "per_model", "bookkeeping")
PER_SAMPLE_STRATEGIES = (AUTO, *PER_SAMPLE_KERNELS)
