"""The runs wing: configs, training runs and their durable store, sweeps, executors, plans
and the paper-scale studies. It imports the simulation wing (:mod:`dpdl_core.sim`) and the
ground floor only. The names below are its face: what the verdicts wing and the papers use.
"""
from ..home import lazy_face

_PUBLIC = {
    "ConfigError": "config",
    "DEVICES": "config",
    "ExperimentConfig": "config",
    "apply_overrides": "config",
    "Prepared": "runner",
    "RunResult": "runner",
    "prepare": "runner",
    "sigma_for": "runner",
    "run": "runner",
    "run_stack": "runner",
    "ResultStore": "results",
    "JsonSlot": "slots",
    "ObjectSlot": "slots",
    "AUDIT_DIR": "audit_run",
    "audit_table": "audit_run",
    "RunSlot": "slots",
    "atomic_write_bytes": "results",
    "diverged_round": "results",
    "EXPLOSION_FACTOR": "runner",
    "PROFILES": "profiles",
    "active_profile": "profiles",
    "load_profile": "profiles",
    "Grid": "sweep",
    "expand": "sweep",
    "run_sweep": "sweep",
    "RunGroup": "plan",
    "select_groups": "plan",
    "Job": "studies",
    "Study": "studies",
    "StudyRun": "studies",
    "load_study": "studies",
    "study_papers": "studies",
    "verify_store": "studies",
}
__all__ = sorted(_PUBLIC)
__getattr__, __dir__ = lazy_face(__name__, _PUBLIC)
