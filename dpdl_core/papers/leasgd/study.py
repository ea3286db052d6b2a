"""The LEASGD study (``make studies PAPER=leasgd``): Table 1 and Figure 2 at the ``paper``
profile's scale (full MNIST and CIFAR-10; m = 5 and 15; 1,500 iterations for Table 1 and
2,000 for Figure 2; three seeds), exactly the runs the notebooks sweep at that profile.
"""
from __future__ import annotations

from ...studies import Study, StudyRun
from .figures import Fig02Settings, Tab01Settings

__all__ = ["study"]

# Seconds per round on one core (measured at the cpu profile, scaled by the batch).
_SECONDS_PER_ROUND = {"mnist": 0.15, "cifar10": 1.5}


def _key(group: str, cfg) -> str:
    private = "nonprivate" if cfg.epsilon is None else f"eps{cfg.epsilon:g}"
    return f"{group}/{cfg.dataset}/m{cfg.n_agents}/{cfg.algorithm}/{private}/seed{cfg.seed}"


def study() -> Study:
    """Figure 2's runs first (cheap, MNIST), then Table 1's, MNIST before CIFAR-10."""
    runs = []
    for group, prio, configs in (("fig02", 7, Fig02Settings.from_profile("paper").configs()),
                                 ("tab01", 7, Tab01Settings.from_profile("paper").configs())):
        for cfg in configs:
            cfg = cfg.replace(device="cpu")
            runs.append(StudyRun(_key(group, cfg), f"LEASGD {'Figure 2' if group == 'fig02' else 'Table 1'}",
                                 prio + (cfg.dataset == "cifar10"), cfg,
                                 cfg.rounds * _SECONDS_PER_ROUND[cfg.dataset]))
    return Study(paper="leasgd", title="LEASGD study (Table 1 and Figure 2, paper profile)", runs=tuple(runs), order=3,
                 notes="The paper profile's runs: m = 5 and 15, 1,500 / 2,000 iterations, 3 seeds, full data.")


def table(store=None):
    """The final metrics of every stored run (:meth:`~dpdl_core.studies.Study.finals`)."""
    return study().finals(store)
