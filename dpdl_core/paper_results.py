"""The DPDL paper's convergence figures (1–4, 8, 9) and accuracy tables (I, II, V, VI).

Notebooks stay thin: they call :func:`grid` and :func:`~dpdl_core.sweep.run_sweep`, then
:func:`loss_figure` or :func:`accuracy_table`. The scale (ε, N, α_d, seeds, rounds, batch
size, σ rule) comes from the profile's ``dpdl`` section and is printed on every output.
The paper's numbers are read from ``dpdl_core/reference/dpdl_accuracy.csv`` (a copy of the
shared reference tables) and only ever shown in a "paper" column.
"""
from __future__ import annotations

from importlib import resources

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from .algorithms import ALGORITHMS, DISPLAY_NAMES
from .config import ExperimentConfig, paper_preset
from .plotting import caption, figures_dir, save_figure
from .profiles import load_profile
from .results import ResultStore
from .sweep import Grid, expand

__all__ = ["accuracy_table", "grid", "load_reference", "loss_figure", "scale_note", "write_table"]

PAPER_NAMES = {v: k for k, v in DISPLAY_NAMES.items()}


def load_reference(name: str = "dpdl_accuracy") -> pd.DataFrame:
    """A reference table of the papers (``dpdl_accuracy`` or ``dpdl_attack``)."""
    path = resources.files("dpdl_core").joinpath("reference", f"{name}.csv")
    with path.open() as f:
        return pd.read_csv(f)


def _section(profile: str, dataset: str) -> dict:
    p = load_profile(profile)["dpdl"]
    if dataset not in p:
        raise ValueError(f"profile {profile!r} has no dpdl grid for dataset={dataset!r}; allowed: {sorted(k for k in p if isinstance(p[k], dict))}")
    return {**{k: v for k, v in p.items() if not isinstance(v, dict)}, **p[dataset]}


def grid(dataset: str, topologies: list[str], profile: str, alpha_d: list[float] | None = None) -> list[ExperimentConfig]:
    """Configs of the profile's DPDL grid for ``dataset`` over ``topologies``.

    Hyper-parameters are the paper's (:func:`~dpdl_core.config.paper_preset`); the profile
    sets the grid and the scale.
    """
    s = _section(profile, dataset)
    base = paper_preset(dataset).to_dict()
    base.update(
        rounds=s["rounds"], batch_size=s["batch_size"], train_samples=s["train_samples"],
        eval_samples=s["eval_samples"], eval_every=s["eval_every"], sigma_rule=s["sigma_rule"],
    )
    base.pop("algo")
    axes = {
        "algorithms": s["algorithms"],
        "epsilons": s["epsilons"],
        "n_agents": s["n_agents"],
        "topologies": topologies,
        "alpha_d": alpha_d if alpha_d is not None else s["alpha_d"],
        "seeds": s["seeds"],
    }
    return expand(Grid(axes, base))


def scale_note(dataset: str, profile: str) -> str:
    """One line naming the scale a profile runs at."""
    s = _section(profile, dataset)
    return (f"N in {s['n_agents']}, {s['rounds']} rounds, B = {s['batch_size']}, {len(s['seeds'])} seed(s), "
            f"alpha_d in {s['alpha_d']}, sigma rule {s['sigma_rule']}")


def _histories(configs: list[ExperimentConfig], store: ResultStore, metrics: list[str]) -> tuple[pd.DataFrame, str]:
    frames, label = [], None
    for cfg in configs:
        if not store.has(cfg.hash):
            continue
        header, hist = store.load_run(cfg.hash)
        hist = hist[hist["metric"].isin(metrics)].copy()
        for k in ("algorithm", "epsilon", "n_agents", "topology", "alpha_d", "seed"):
            hist[k] = getattr(cfg, k)
        frames.append(hist)
        label = header["meta"].get("dataset_label", label)
    if not frames:
        raise FileNotFoundError("no stored runs for this grid; run the sweep first (run_sweep(configs))")
    return pd.concat(frames, ignore_index=True), label


def loss_figure(configs: list[ExperimentConfig], profile: str, name: str, title: str, store: ResultStore | None = None):
    """Training loss (mean over agents and runs) against round, one panel per (N, ε), a
    shaded band for the spread (min–max over agents and runs); saved as ``name``."""
    store = store or ResultStore()
    df, label = _histories(configs, store, ["train_loss_mean", "train_loss_min", "train_loss_max"])
    wide = df.pivot_table(index=["algorithm", "epsilon", "n_agents", "seed", "round"], columns="metric", values="value").reset_index()
    eps_list = sorted(wide["epsilon"].unique())
    n_list = sorted(wide["n_agents"].unique())
    fig, axes = plt.subplots(len(n_list), len(eps_list), figsize=(4.2 * len(eps_list), 3.2 * len(n_list)), squeeze=False, sharey=True)
    colors = dict(zip(ALGORITHMS, plt.rcParams["axes.prop_cycle"].by_key()["color"]))
    for r, n in enumerate(n_list):
        for c, eps in enumerate(eps_list):
            ax = axes[r, c]
            cell = wide[(wide["n_agents"] == n) & (wide["epsilon"] == eps)]
            for alg in ALGORITHMS:
                d = cell[cell["algorithm"] == alg].groupby("round")
                if not len(cell[cell["algorithm"] == alg]):
                    continue
                mean = d["train_loss_mean"].mean()
                ax.plot(mean.index, mean.values, label=DISPLAY_NAMES[alg], color=colors[alg], lw=1.2)
                ax.fill_between(mean.index, d["train_loss_min"].min(), d["train_loss_max"].max(), color=colors[alg], alpha=0.12)
            ax.set_title(f"({chr(97 + c)}{r + 1}) $\\epsilon$ = {eps}, N = {n}", fontsize=9)
            ax.set_xlabel("round")
            if c == 0:
                ax.set_ylabel("training loss")
    axes[0, -1].legend(fontsize=7)
    fig.suptitle(title, fontsize=10)
    dataset = configs[0].dataset
    save_figure(fig, name, caption(label, profile, scale_note(dataset, profile)))
    return fig, label


def _fmt(mean: float, std: float, runs: int = 2) -> str:
    """``mean ± std``, or the mean alone for a single run (no spread to show)."""
    return f"{mean:.1f} ± {std:.1f}" if runs >= 2 else f"{mean:.1f}"


def accuracy_table(configs: list[ExperimentConfig], store: ResultStore | None = None) -> tuple[pd.DataFrame, pd.DataFrame, str]:
    """Final average-model test accuracy (%) per cell and algorithm, beside the paper's.

    Returns
    -------
    table : DataFrame
        Columns alpha_d, topology, n_agents, epsilon, algorithm, ours_mean, ours_std, runs,
        paper_mean, paper_std, diff (ours − paper), best (ours best in its cell).
    claims : DataFrame
        The paper's qualitative claims, each ``holds`` / ``fails (k of n)`` / ``not run``.
    label : str
        The dataset that ran.
    """
    store = store or ResultStore()
    df, label = _histories(configs, store, ["avg_test_acc"])
    last = df.sort_values("round").groupby(["algorithm", "epsilon", "n_agents", "topology", "alpha_d", "seed"]).tail(1)
    keys = ["alpha_d", "topology", "n_agents", "epsilon", "algorithm"]
    ours = last.groupby(keys)["value"].agg(["mean", "std", "count"]).reset_index()
    ours["ours_mean"] = 100 * ours["mean"]
    ours["ours_std"] = 100 * ours["std"].fillna(0.0)
    ours = ours.rename(columns={"count": "runs"})[keys + ["ours_mean", "ours_std", "runs"]]
    ref = load_reference("dpdl_accuracy")
    ref = ref[ref["dataset"] == configs[0].dataset].copy()
    ref["algorithm"] = ref["algorithm"].map(PAPER_NAMES)
    ref = ref.rename(columns={"accuracy_mean": "paper_mean", "accuracy_std": "paper_std"})[keys + ["paper_mean", "paper_std"]]
    table = ours.merge(ref, on=keys, how="left")
    table["diff"] = table["ours_mean"] - table["paper_mean"]
    cell = ["alpha_d", "topology", "n_agents", "epsilon"]
    table["best"] = table["ours_mean"] == table.groupby(cell)["ours_mean"].transform("max")
    table = table.sort_values(cell + ["algorithm"]).reset_index(drop=True)
    return table, claims(table), label


def claims(table: pd.DataFrame) -> pd.DataFrame:
    """Check the paper's qualitative claims on the cells that ran."""
    cell = ["alpha_d", "topology", "n_agents", "epsilon"]
    rows = []
    n_alg = len(ALGORITHMS)
    full = table.groupby(cell).filter(lambda g: len(g) == n_alg)
    checks = [g.loc[g["algorithm"] == "dpdl", "best"].item() for _, g in full.groupby(cell)]
    rows.append(("DPDL has the best accuracy in its cell", checks))
    mono = []
    for _, g in table.groupby(["alpha_d", "topology", "n_agents", "algorithm"]):
        if g["epsilon"].nunique() >= 2:
            acc = g.sort_values("epsilon")["ours_mean"].to_numpy()
            mono.append(bool(np.all(np.diff(acc) >= 0)))
    rows.append(("accuracy grows with epsilon", mono))
    order = {"ring": 0, "bipartite": 1, "fully_connected": 2}
    dense = []
    for _, g in table.groupby(["alpha_d", "n_agents", "epsilon", "algorithm"]):
        if g["topology"].nunique() >= 2:
            acc = g.assign(o=g["topology"].map(order)).sort_values("o")["ours_mean"].to_numpy()
            dense.append(bool(np.all(np.diff(acc) >= 0)))
    rows.append(("denser graphs do better (ring <= bipartite <= fully connected)", dense))
    out = []
    for claim, results in rows:
        if not results:
            verdict = "not run"
        elif all(results):
            verdict = f"holds ({len(results)} of {len(results)})"
        else:
            verdict = f"fails ({len(results) - sum(results)} of {len(results)} comparisons)"
        out.append({"claim": claim, "verdict": verdict})
    return pd.DataFrame(out)


def _display(table: pd.DataFrame) -> list[dict]:
    rows = []
    for _, r in table.iterrows():
        ours = _fmt(r["ours_mean"], r["ours_std"], int(r["runs"]))
        rows.append({
            "alpha_d": r["alpha_d"], "topology": r["topology"], "N": int(r["n_agents"]), "epsilon": r["epsilon"],
            "algorithm": DISPLAY_NAMES[r["algorithm"]], "ours (%)": ours, "_bold": bool(r["best"]),
            "paper (%)": "—" if pd.isna(r["paper_mean"]) else _fmt(r["paper_mean"], r["paper_std"]),
            "diff": "—" if pd.isna(r["diff"]) else f"{r['diff']:+.1f}",
        })
    return rows


def write_table(table: pd.DataFrame, claims_df: pd.DataFrame, name: str, title: str, note: str) -> str:
    """Render to ``figures/<name>.md`` and ``figures/<name>.tex``; return the Markdown."""
    rows = _display(table)
    cols = [c for c in rows[0] if not c.startswith("_")] if rows else []
    md = [f"**{title}**", "", f"_{note}_", "", "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        cells = [str(r[c]) for c in cols]
        if r["_bold"]:
            cells[cols.index("ours (%)")] = f"**{cells[cols.index('ours (%)')]}**"
        md.append("| " + " | ".join(cells) + " |")
    md += ["", "| claim of the paper | at this scale |", "|---|---|"]
    md += [f"| {c.claim} | {c.verdict} |" for c in claims_df.itertuples()]
    text = "\n".join(md) + "\n"
    (figures_dir() / f"{name}.md").write_text(text)

    def tex(s):
        return str(s).replace("_", r"\_").replace("±", r"$\pm$").replace("—", "--")

    lines = [r"\begin{table}[t]", r"\centering", r"\caption{" + tex(title) + ". " + tex(note) + "}",
             r"\begin{tabular}{" + "l" * len(cols) + "}", r"\hline", " & ".join(tex(c) for c in cols) + r" \\", r"\hline"]
    for r in rows:
        cells = [tex(r[c]) for c in cols]
        if r["_bold"]:
            i = cols.index("ours (%)")
            cells[i] = r"\textbf{" + cells[i] + "}"
        lines.append(" & ".join(cells) + r" \\")
    lines += [r"\hline", r"\end{tabular}", r"\end{table}"]
    (figures_dir() / f"{name}.tex").write_text("\n".join(lines) + "\n")
    return text


TABLES = {
    "Table I": ("mnist", ["bipartite", "fully_connected"]),
    "Table II": ("cifar10", ["bipartite", "fully_connected"]),
    "Table V": ("mnist", ["ring"]),
    "Table VI": ("cifar10", ["ring"]),
}


def summary_markdown(profile: str, store: ResultStore | None = None) -> str:
    """Reproduced-vs-paper summary over the accuracy tables of a profile: per table and
    algorithm, our mean final accuracy over the cells that ran beside the paper's mean over
    the same cells, and the claims verdicts. Cells without stored runs are skipped."""
    store = store or ResultStore()
    out = [f"Profile `{profile}`. Mean over the cells that ran of the final average-model test accuracy (%).", "",
           "| table | data that ran | algorithm | cells | ours | paper (same cells) |", "|---|---|---|---|---|---|"]
    verdicts = []
    for name, (dataset, topos) in TABLES.items():
        configs = [c for c in grid(dataset, topos, profile) if store.has(c.hash)]
        if not configs:
            continue
        table, claims_df, label = accuracy_table(configs, store)
        for alg, g in table.groupby("algorithm"):
            out.append(f"| {name} | {label} | {DISPLAY_NAMES[alg]} | {len(g)} | {g['ours_mean'].mean():.1f} | {g['paper_mean'].mean():.1f} |")
        verdicts += [f"| {name} | {c.claim} | {c.verdict} |" for c in claims_df.itertuples()]
    out += ["", "| table | claim of the paper | at this scale |", "|---|---|---|"] + verdicts
    text = "\n".join(out) + "\n"
    (figures_dir() / f"dpdl_summary_{profile}.md").write_text(text)
    return text
