"""The paper-scale fidelity study (``make fidelity``; notebook ``ext04_fidelity_at_scale``).

Does DPDL's Table I replicate at the paper's scale, and if not, why: scale, a deviation from
the authors' code, or an unfair comparison? MNIST, ε = 0.5, N = 10, bipartite, α_d = 0.25,
B = 216, 1,000 rounds: the five algorithms under *paper noise* (the authors' σ rule for
all) and *equal ε* (each calibrated by the accountant for its own messages), plus DPDL's
``authors`` variant; CIFAR-10, ε = 4, 500 rounds: DPDL, DP-CGA and DP-DPSGD under paper
noise. The scale comes from the profile's ``fidelity`` section (``smoke`` is a tiny
version for CI). Results live in their own store, ``results/fidelity/<profile>/`` in the
repository, so the study's notebook renders without rerunning (the smoke version goes to
the ordinary results store).
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from ...algorithms import display_name
from ...config import ExperimentConfig
from ...plotting import caption, save_figure
from ...profiles import load_profile
from ...claims import Comparison, claims_frame, margin_note
from ...reporting import load_reference
from ...results import ResultStore, default_results_dir
from ...sweep import run_sweep
from .claims import ACCURACY_TOL, TABLE_SPECS
from .presets import preset
from .results import NOISE_MODES

__all__ = ["STUDY_ROOT", "study_configs", "study_store", "study_table", "study_figure", "study_claims"]

STUDY_ROOT = Path(__file__).resolve().parents[3] / "results" / "fidelity"
MNIST_ALGORITHMS = ("dpdl", "dp_dpsgd", "muffliato", "dp_netfleet", "dp_cga")
CIFAR_ALGORITHMS = ("dpdl", "dp_cga", "dp_dpsgd")
# The paper's table each dataset's cell comes from.
PAPER_TABLE = {"mnist": "Table I", "cifar10": "Table II"}


def study_store(profile: str) -> ResultStore:
    """The study's results store: ``results/fidelity/<profile>`` in the repository (the
    ``cpu`` study is committed there), or for ``smoke`` (CI) a folder of the ordinary
    results store, which stays out of the repository."""
    if profile == "smoke":
        return ResultStore(default_results_dir() / "fidelity")
    return ResultStore(STUDY_ROOT / profile)


def study_configs(profile: str) -> dict[str, ExperimentConfig]:
    """The study's runs, keyed ``dataset/algorithm/mode`` (mode: paper noise, equal ε, authors)."""
    section = load_profile(profile, paper="dpdl")["fidelity"]
    out = {}
    for dataset, algorithms, rules in (("mnist", MNIST_ALGORITHMS, ("authors_code", "rdp")),
                                        ("cifar10", CIFAR_ALGORITHMS, ("authors_code",))):
        s = dict(section[dataset])
        common = dict(n_agents=10, alpha_d=0.25, rounds=s["rounds"], batch_size=s["batch_size"],
                      train_samples=s["train_samples"], eval_samples=s["eval_samples"], eval_every=s["eval_every"],
                      epsilon=s["epsilon"], checkpoint_every=25)
        for alg in algorithms:
            for rule in rules:
                out[f"{dataset}/{alg}/{NOISE_MODES[rule]}"] = preset(dataset, "bipartite", algorithm=alg, sigma_rule=rule, **common)
        if dataset == "mnist":
            authors = {**common, "batch_size": s["batch_size"] if profile == "smoke" else None}
            authors = {k: v for k, v in authors.items() if v is not None}
            out["mnist/dpdl/authors"] = preset("mnist", "bipartite", variant="authors", **authors)
    return out


def run_study(profile: str, workers: int | None = None) -> dict[str, ExperimentConfig]:
    """Run what the study's store lacks (resumable at any moment); return the configs."""
    configs = study_configs(profile)
    run_sweep(configs.values(), store=study_store(profile), workers=workers)
    return configs


def study_table(profile: str) -> tuple[pd.DataFrame, str]:
    """Final accuracy of every stored run of the study, with its σ and accountant ε, beside
    the paper's Table I / II value of the same cell (``table`` names which); and the data label."""
    store, rows, label = study_store(profile), [], ""
    ref = load_reference("dpdl", "dpdl_accuracy")
    for key, cfg in study_configs(profile).items():
        if not store.has(cfg.hash):
            continue
        header, hist = store.load_run(cfg.hash)
        meta = header["meta"]
        label = meta["dataset_label"] if cfg.dataset == "mnist" or not label else label
        last = hist["round"].max()
        final = hist[hist["round"] == last]
        paper = ref[(ref["dataset"] == cfg.dataset) & (ref["algorithm"] == display_name(cfg.algorithm))
                    & (ref["topology"] == "bipartite") & (ref["n_agents"] == 10) & (ref["alpha_d"] == 0.25)
                    & (ref["epsilon"] == cfg.epsilon)]["accuracy_mean"]
        dataset, alg, mode = key.split("/")
        rows.append({
            "dataset": meta["dataset_label"], "table": PAPER_TABLE[dataset], "algorithm": display_name(alg), "mode": mode, "rounds run": int(last),
            "sigma (mean)": meta["sigma_mean"], "RDP epsilon": meta["epsilon_rdp_max"],
            "ours: avg model (%)": 100 * float(final.loc[(final["metric"] == "avg_test_acc"), "value"].iloc[0]),
            "ours: agents (%)": 100 * float(final.loc[(final["metric"] == "test_acc"), "value"].mean()),
            "paper (%)": float(paper.iloc[0]) if len(paper) else float("nan"),
            "diverged": meta["diverged"],
        })
    return pd.DataFrame(rows), label


def study_claims(table: pd.DataFrame) -> pd.DataFrame:
    """The paper's claim "DPDL is best" (Table I for MNIST, Table II for CIFAR-10) per dataset
    and noise mode (the ``condition``), as :func:`~dpdl_core.claims.claims_frame`: one run per
    algorithm, so the margin is the tolerance alone."""
    if table.empty:
        return claims_frame([])
    specs = {"Table I": TABLE_SPECS["tab01_mnist_accuracy"][0], "Table II": TABLE_SPECS["tab02_cifar10_accuracy"][0]}
    out = []
    for (dataset, paper_table, mode), g in table.groupby(["dataset", "table", "mode"], sort=False):
        if mode == "authors" or len(g) < 2:
            continue
        acc = g.set_index("algorithm")["ours: avg model (%)"]
        top = acc.drop("DPDL").idxmax()
        comp = Comparison(f"DPDL {acc['DPDL']:.1f} vs {top} {acc[top]:.1f}", acc["DPDL"] - acc[top], ACCURACY_TOL)
        out.append(specs[paper_table].judge([comp], margin_note(f"{ACCURACY_TOL} pp", [1]), condition=f"{dataset}, {mode}"))
    return claims_frame(out)


def study_figure(profile: str, name: str = "dpdl_fidelity_at_scale"):
    """Training loss against round for every run of the study, one panel per dataset × mode."""
    import matplotlib.pyplot as plt

    store = study_store(profile)
    configs = {k: c for k, c in study_configs(profile).items() if store.has(c.hash)}
    panels = sorted({tuple(k.split("/")[::2]) for k in configs})
    fig, axes = plt.subplots(1, max(1, len(panels)), figsize=(4.4 * max(1, len(panels)), 3.4), squeeze=False)
    label = ""
    for ax, (dataset, mode) in zip(axes[0], panels):
        for key, cfg in configs.items():
            d, alg, m = key.split("/")
            if (d, m) != (dataset, mode):
                continue
            header, hist = store.load_run(cfg.hash)
            label = label or header["meta"]["dataset_label"]
            loss = hist[hist["metric"] == "train_loss_mean"].sort_values("round")
            ax.plot(loss["round"], loss["value"], label=display_name(alg), lw=1.1)
        ax.set(title=f"{dataset}, {mode}", xlabel="round", ylabel="training loss")
        ax.legend(fontsize=7)
    save_figure(fig, name, caption(label or "no runs stored", profile, "paper-scale study: N = 10 bipartite, alpha_d = 0.25"))
    return fig
