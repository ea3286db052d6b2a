"""The gradient-inversion cells of the DPDL study (Tables III-IV, Figures 5-6, §VI-D).

One study run per dataset: the ``paper`` profile's attack on the bipartite graph with N = 10
(the cell of Figures 5-6 and one cell of Tables III-IV): DPDL trained on the full data to
round 800, its messages tapped at rounds 200, 400 and 800, with and without the Gaussian
mechanism, each victim's image inverted (:func:`~dpdl_core.papers.dpdl.threat_models.attack_cell`).
The stored history has one row per reconstructed image and metric; :func:`attack_frame`
turns it back into the rows :func:`~.claims.attack_claims` judges.
"""
from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from ...runs import ExperimentConfig, ResultStore
from .attack_results import figure_cell, paper_attack_value
from .threat_models import SUCCESS_PSNR, AttackSpec, attack_cell

__all__ = ["ATTACK_FUNCTION", "ATTACK_METRICS", "attack_frame", "attack_run", "attack_spec", "estimate_seconds"]

ATTACK_FUNCTION = "dpdl_core.papers.dpdl.attack_study:attack_run"
# The per-image metrics stored (SSIM as the paper prints it, x 100; success: PSNR on [0, 1]
# pixels at or above the dataset's threshold).
ATTACK_METRICS = ("MSE", "PSNR", "SSIM_x100", "PSNR_01", "success_%")
# Seconds of one inversion iteration for one image on one core (all images inverted as one
# batch; measured on an idle core and raised for a second worker beside it: docs/benchmarks.md,
# "Planner estimates"), and training seconds per round (the study's), for the plan's estimate.
_INVERSION_S = {"mnist": 0.0015, "cifar10": 0.0025}
_ROUND_S = {"mnist": 1.45, "cifar10": 5.0}


def attack_spec(dataset: str, profile: str = "paper") -> dict:
    """The JSON spec of ``dataset``'s Figures 5-6 cell at ``profile``'s attack scale (every
    constant spelled out, so it is hashed): the private training config and the attack."""
    cfg, att = figure_cell(dataset, profile)
    return {"dataset": dataset, "config": cfg.to_dict(), "attack": att.to_dict()}  # "dataset": the study's data check


def _attack(spec: dict) -> tuple[ExperimentConfig, AttackSpec]:
    from ...sim import InversionConfig

    a = dict(spec["attack"])
    a["rounds"] = tuple(a["rounds"])
    a["inversion"] = InversionConfig(**a["inversion"])
    return ExperimentConfig.from_stored(spec["config"]), AttackSpec(**a)


def estimate_seconds(spec: dict) -> float:
    """Training (no defence and DPDL) to the last attacked round, then the inversions."""
    cfg, att = _attack(spec)
    images = 2 * 2 * len(att.rounds) * att.n_victims * att.attack_batch  # 2 scenarios x 2 channels (CG, MM)
    inversion = images * att.inversion.iterations * att.inversion.restarts * _INVERSION_S[cfg.dataset]
    return 2 * max(att.rounds) * _ROUND_S[cfg.dataset] + inversion


def attack_run(spec: dict, checkpoint_dir: Path | None = None) -> tuple[pd.DataFrame, dict]:
    """Run the attack cell of ``spec`` (see :func:`attack_spec`), keeping each finished
    training's interceptions in ``checkpoint_dir`` (default: a temporary folder) so that a
    stopped cell resumes after it.

    Returns the history (round = attacked round, agent = image, metric ``<scenario>/<metric>``
    for :data:`ATTACK_METRICS`) and metadata: the data, σ of the tapped messages and of
    training, the victims.
    """
    cfg, att = _attack(spec)
    with tempfile.TemporaryDirectory() as tmp:  # the study store keeps the metrics, not the images
        res = attack_cell(cfg, att, store=ResultStore(checkpoint_dir or tmp), progress=None)
    m = res.metrics.assign(SSIM_x100=lambda d: 100 * d["SSIM"],
                           **{"success_%": lambda d: 100.0 * (d["PSNR_01"] >= SUCCESS_PSNR[cfg.dataset])})
    m["agent"] = m.groupby(["scenario", "round"]).cumcount()
    hist = m.melt(id_vars=["scenario", "round", "agent"], value_vars=list(ATTACK_METRICS), var_name="metric")
    hist["metric"] = hist["scenario"] + "/" + hist["metric"]
    meta = {"dataset_label": res.meta["dataset_label"], "dataset": res.meta["dataset"], "sigma": res.meta["sigma"],
            "train_sigma": res.meta["train_sigma"],
            # The accountant's eps of the private training run (the no-defence run has none).
            "epsilon_rdp": res.meta["train_epsilon_rdp"]["True"],
            "victims": [int(v) for v in np.ravel(res.meta["victims"])],
            "diverged": False}
    return hist[["round", "agent", "metric", "value"]].reset_index(drop=True), meta


def attack_frame(hist: pd.DataFrame, spec: dict) -> pd.DataFrame:
    """The rows :func:`~.claims.attack_claims` takes, at the last attacked round: per
    scenario and metric our mean over the images (``ours``), its spread (``ours_std``) and the
    number of images (``n``), beside the paper's value of the cell (Tables III-IV)."""
    cfg = spec["config"]
    last = hist[hist["round"] == hist["round"].max()]
    parts = last["metric"].str.rsplit("/", n=1, expand=True)
    last = last.assign(scenario=parts[0], name=parts[1])
    rows = []
    for (scenario, metric), g in last.groupby(["scenario", "name"], sort=False):
        rows.append({"topology": cfg["topology"], "n_agents": cfg["n_agents"], "scenario": scenario, "metric": metric,
                     "ours": float(g["value"].mean()), "ours_std": float(g["value"].std(ddof=1)), "n": len(g),
                     "paper": paper_attack_value(cfg["dataset"], cfg["topology"], cfg["n_agents"], scenario, metric)})
    return pd.DataFrame(rows)
