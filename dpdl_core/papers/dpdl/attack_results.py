"""DPDL Figures 5–6 and Tables III–IV (gradient inversion), and the same attack on every
baseline's messages.

The profile's ``attack`` section sets the scale: attacked rounds (the paper's 200, 400,
800), training batch size, the grid of topologies × N, victims per cell and the inversion
budget. Each notebook calls one builder, :func:`inversion_figure_notebook`,
:func:`attack_table_notebook` or :func:`attack_algorithms_notebook` (the cells of
:func:`figure_cell` / :func:`table_cells` / :func:`algorithm_cells` through
:func:`run_cells`, then drawn or tabulated), which returns an
:class:`~dpdl_core.verdicts.outputs.Output`. The paper's numbers come from
``reference/dpdl_attack.csv`` beside this file and only ever fill a "paper" column.
"""
from __future__ import annotations

import functools
import math

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ...runs import ExperimentConfig, ResultStore, load_profile
from ...sim import DATASETS, METRIC_NOTE, InversionConfig, denormalize, display_name, progress_enabled
from ...verdicts import (
    Output,
    accountant_note,
    caption,
    claims_frame,
    figures_dir,
    load_reference,
    save_figure,
    table_output,
)
from .claims import attack_claims
from .presets import preset
from .threat_models import SUCCESS_PSNR, AttackResult, AttackSpec, attack_cell

__all__ = [
    "algorithm_cells",
    "algorithms_figure",
    "algorithms_table",
    "attack_algorithms_notebook",
    "attack_table",
    "attack_table_notebook",
    "figure_cell",
    "inversion_figure",
    "inversion_figure_notebook",
    "paper_attack_value",
    "privacy_claim",
    "run_cells",
    "scale_note",
    "table_cells",
    "table_note",
    "write_attack_table",
]

Cell = tuple[ExperimentConfig, AttackSpec]
SCENARIOS = ("ND-CG", "ND-MM", "DPDL-CG", "DPDL-MM")


def _section(profile: str, dataset: str | None = None) -> dict:
    p = load_profile(profile, paper="dpdl")["attack"]
    common = {k: v for k, v in p.items() if not isinstance(v, dict) or k == "inversion"}
    if dataset is None:
        return common
    if dataset not in p:
        raise ValueError(f"profile {profile!r} has no attack section for dataset={dataset!r}; allowed: mnist, cifar10")
    return {**common, **p[dataset]}


def _spec(s: dict, rounds) -> AttackSpec:
    return AttackSpec(
        rounds=tuple(rounds),
        n_victims=s["n_victims"],
        attack_batch=s["attack_batch"],
        sigma_batch_size=s.get("sigma_batch_size"),
        inversion=InversionConfig(**s["inversion"]),
    )


def _config(s: dict, dataset: str, topology: str, n_agents: int, rounds: int, algorithm: str = "dpdl",
            epsilon=None) -> ExperimentConfig:
    """The private training config of one cell (the paper's hyper-parameters, the profile's scale)."""
    return preset(
        dataset,
        topology,
        algorithm=algorithm,
        n_agents=n_agents,
        rounds=int(rounds),
        batch_size=s["batch_size"],
        train_samples=s["train_samples"],
        eval_samples=100,
        eval_every=int(rounds),
        epsilon=s["epsilon"] if epsilon is None else epsilon,
        sigma_rule=s["sigma_rule"],
    )


def figure_cell(dataset: str, profile: str) -> Cell:
    """Figures 5/6: N = 10 (profile), bipartite, every attacked round."""
    s = _section(profile, dataset)
    return _config(s, dataset, "bipartite", s["figure_n_agents"], max(s["rounds"])), _spec(s, s["rounds"])


def table_cells(dataset: str, profile: str) -> list[Cell]:
    """Tables III/IV: topologies × N at the last attacked round."""
    s = _section(profile, dataset)
    last = max(s["rounds"])
    return [
        (_config(s, dataset, topo, n, last), _spec(s, [last]))
        for topo in s["topologies"]
        for n in s["n_agents"]
    ]


def algorithm_cells(profile: str) -> list[Cell]:
    """Every algorithm at the DPDL attack's nominal ε and σ rule (``authors_code``: not equal
    privacy) on the profile's ``all_algorithms`` setting."""
    extra = load_profile(profile, paper="dpdl")["attack"]["all_algorithms"]
    d = extra["dataset"]
    s = {**_section(profile, d), **extra}
    last = max(s["rounds"])
    return [(_config(s, d, s["topology"], s["n_agents"], last, algorithm=a), _spec(s, [last])) for a in s["algorithms"]]


def scale_note(dataset: str, profile: str) -> str:
    """One line naming the attack scale of a profile."""
    s = _section(profile, dataset)
    inv = s["inversion"]
    return (
        f"epsilon {s['epsilon']}, attacked rounds {s['rounds']} (paper 200/400/800), training B = {s['batch_size']}, "
        f"sigma rule {s['sigma_rule']} (tapped messages: the rule at B = "
        f"{s.get('sigma_batch_size', s['batch_size'])}), {s['n_victims']} victim(s) x {s['attack_batch']} image, "
        f"{inv.get('iterations', InversionConfig.iterations)} iterations x "
        f"{inv.get('restarts', InversionConfig.restarts)} restarts"
    )


def run_cells(cells: list[Cell], store: ResultStore | None = None, progress: bool | None = None) -> list[AttackResult]:
    """Attack every cell (cached cells are loaded; an interrupted sweep resumes)."""
    show = progress_enabled(progress)
    it = cells
    if show:
        from tqdm.auto import tqdm

        it = tqdm(cells, desc="attack cells", unit="cell")
    return [attack_cell(cfg, spec, store=store, progress=show) for cfg, spec in it]


def _to_image(x: np.ndarray) -> tuple[np.ndarray, str | None]:
    if x.shape[0] == 1:
        return x[0], "gray"
    return np.transpose(x, (1, 2, 0)), None


def inversion_figure(result: AttackResult, config: ExperimentConfig, profile: str, name: str, title: str):
    """Ground truth and the reconstructions of every scenario at every attacked round
    (columns: rounds × victims), PSNR ([0, 1] pixels) under each image; saved to
    ``figures/<name>``.

    Returns
    -------
    fig, files
        ``files``: the saved ``.pdf`` and ``.png``.
    """
    spec = DATASETS[config.dataset]
    rounds = sorted({r for _, r in result.recon})
    scenarios = [s for s in SCENARIOS if any(k[0] == s for k in result.recon)] or sorted({k[0] for k in result.recon})
    n = result.truth[(scenarios[0], rounds[0])].shape[0]
    cols = len(rounds) * n
    fig, axes = plt.subplots(1 + len(scenarios), cols, figsize=(0.95 * cols + 1.2, 1.15 * (1 + len(scenarios)) + 0.9),
                             squeeze=False)
    m = result.metrics
    for ri, r in enumerate(rounds):
        truth = denormalize(result.truth[(scenarios[0], r)], spec).clamp(0, 1).numpy()
        for v in range(n):
            c = ri * n + v
            img, cmap = _to_image(truth[v])
            axes[0, c].imshow(img, cmap=cmap, vmin=0, vmax=1)
            axes[0, c].set_title(f"round {r}" if v == 0 else "", fontsize=8, loc="left")
            for si, s in enumerate(scenarios):
                rec = denormalize(result.recon[(s, r)], spec).clamp(0, 1).numpy()
                img, cmap = _to_image(rec[v])
                ax = axes[1 + si, c]
                ax.imshow(img, cmap=cmap, vmin=0, vmax=1)
                row = m[(m["scenario"] == s) & (m["round"] == r)].iloc[v]
                ax.set_xlabel(f"{row['PSNR_01']:.1f} dB", fontsize=7)
    for ax in axes.flat:
        ax.set_xticks([])
        ax.set_yticks([])
    for si, label in enumerate(["ground truth", *scenarios]):
        axes[si, 0].set_ylabel(label, fontsize=8)
    fig.suptitle(title, fontsize=10)
    extra = (
        f"N = {config.n_agents}, {config.topology}, tapped-message sigma = {result.meta['sigma']['True']:.3g} "
        f"(training sigma {result.meta['train_sigma']['True']:.3g}, accountant epsilon {_accountant(result)}); "
        f"{scale_note(config.dataset, profile)}; PSNR on [0, 1] pixels under each image"
    )
    return fig, save_figure(fig, name, caption(result.meta["dataset_label"], profile, extra))


@functools.cache
def _attack_reference() -> pd.DataFrame:
    # Read once: every row of a table looks a value up (callers only filter it).
    return load_reference("dpdl", "dpdl_attack")


def paper_attack_value(dataset: str, topology: str, n_agents: int, scenario: str, metric: str) -> float:
    """Tables III-IV's value of ``metric`` for ``scenario`` in one cell; NaN where the paper
    prints none (``PSNR_01``, ``success_%``)."""
    ref = _attack_reference()
    hit = ref[(ref["dataset"] == dataset) & (ref["metric"] == metric) & (ref["scenario"] == scenario)
              & (ref["topology"] == topology) & (ref["n_agents"] == n_agents)]
    return float(hit["value"].iloc[0]) if len(hit) else np.nan


def attack_table(cells: list[Cell], results: list[AttackResult]) -> pd.DataFrame:
    """Long table: ``topology, n_agents, scenario, metric, ours, paper`` at the last round.

    Metrics: MSE and PSNR (normalised space, the paper's columns), SSIM_x100 (SSIM × 100
    on [0, 1] pixels), PSNR_01, and ``success_%`` (share of images with PSNR_01 at or above
    the dataset's :data:`~dpdl_core.papers.dpdl.threat_models.SUCCESS_PSNR`), the last two without a
    paper value. ``ours_std`` and ``n``: the standard deviation of the metric over the
    attacked images and their number (the claims' spread).
    """
    rows = []
    for (cfg, spec), res in zip(cells, results):
        last = max(spec.rounds)
        s = res.summary()
        s = s[s["round"] == last]
        images = res.metrics[res.metrics["round"] == last].assign(SSIM_x100=lambda m: 100 * m["SSIM"])
        std = images.groupby("scenario")[["MSE", "PSNR", "SSIM_x100", "PSNR_01"]].std(ddof=1)
        count = images.groupby("scenario").size()
        for _, r in s.iterrows():
            ours = {"MSE": r["MSE"], "PSNR": r["PSNR"], "SSIM_x100": 100 * r["SSIM"], "PSNR_01": r["PSNR_01"],
                    "success_%": 100 * r["success"]}
            for metric, value in ours.items():
                rows.append({
                    "topology": cfg.topology, "n_agents": cfg.n_agents, "scenario": r["scenario"], "metric": metric,
                    "ours": float(value),
                    "paper": paper_attack_value(cfg.dataset, cfg.topology, cfg.n_agents, r["scenario"], metric),
                    "ours_std": float(std.loc[r["scenario"], metric]) if metric in std.columns else np.nan,
                    "n": int(count[r["scenario"]]),
                })
    return pd.DataFrame(rows)


def privacy_claim(table: pd.DataFrame) -> pd.DataFrame:
    """The paper's privacy claims per channel (:data:`.claims.ATTACK_SPECS`), as
    :func:`~dpdl_core.verdicts.claims.claims_frame`: the DP message is harder to invert than the
    unperturbed one (higher MSE, lower PSNR and SSIM, by more than the stated tolerance plus
    t SE over the attacked images) in every cell, and no DP reconstruction passes the
    success threshold while some unperturbed ones do (inconclusive when none does)."""
    return claims_frame(attack_claims(table))


def _fmt(v: float, metric: str) -> str:
    if np.isnan(v):
        return "—"
    return f"{v:.0f}" if metric == "success_%" else f"{v:.2f}"


def write_attack_table(table: pd.DataFrame, claim: pd.DataFrame, name: str, title: str, note: str) -> Output:
    """Render ``ours (paper)`` per metric × scenario (rows) and topology × N (columns) to
    ``figures/<name>.md`` and ``.tex``, the claims under it; the Output holds ``table`` as
    ``tables["table"]``."""
    cells = table[["topology", "n_agents"]].drop_duplicates().values.tolist()
    heads = [f"{t} N={n}" for t, n in cells]
    order = ["MSE", "PSNR", "SSIM_x100", "PSNR_01", "success_%"]
    body = []
    for metric in order:
        for scenario in dict.fromkeys(table["scenario"]):
            vals = []
            for t, n in cells:
                hit = table[(table["topology"] == t) & (table["n_agents"] == n) & (table["scenario"] == scenario)
                            & (table["metric"] == metric)]
                if not len(hit):
                    vals.append("—")
                    continue
                o, p = hit["ours"].iloc[0], hit["paper"].iloc[0]
                vals.append(_fmt(o, metric) + ("" if np.isnan(p) else f" ({_fmt(p, metric)})"))
            body.append([metric, scenario, *vals])
    cols = ["metric", "scenario", *heads]
    return table_output(name, title, note, cols, body, claim, {"table": table})


def _accountant(result: AttackResult) -> str:
    """The accountant's ε of a cell's DP training run (over all its rounds, max over agents)."""
    value = (result.meta.get("train_epsilon_rdp") or {}).get("True")
    return "not recorded (a cache from before it was)" if value is None else f"{value:.3g}"


def table_note(results: list[AttackResult], dataset: str, profile: str) -> str:
    """Caption line: data that ran, profile, scale, the accountant's ε of each cell's DP
    training run, metric definitions."""
    accountant = ", ".join(f"{c['topology']} N={c['n_agents']} {_accountant(r)}"
                           for r in results for c in [r.meta["configs"]["True"]])
    return (f"{results[0].meta['dataset_label']}; profile {profile}; {scale_note(dataset, profile)}; accountant "
            f"epsilon of the DP training runs: {accountant}; ours (paper); {METRIC_NOTE}; success = PSNR [0,1] >= "
            f"{SUCCESS_PSNR[dataset]:g} dB")


def algorithms_table(cells: list[Cell], results: list[AttackResult]) -> pd.DataFrame:
    """Mean metrics per algorithm and scenario (message with and without its noise) at
    the last attacked round; SSIM × 100, success in %."""
    frames = []
    for (cfg, spec), res in zip(cells, results):
        s = res.summary()
        s = s[s["round"] == max(spec.rounds)].drop(columns="round")
        s.insert(0, "algorithm", display_name(cfg.algorithm))
        private = s["scenario"].map(res.metrics.groupby("scenario")["private"].first())
        s.insert(2, "sigma", [res.meta["sigma"][str(p)] for p in private])
        # No defence is not private: its ε is infinite.
        accountant = (res.meta.get("train_epsilon_rdp") or {}).get("True")
        s.insert(3, "accountant_eps", [(math.nan if accountant is None else accountant) if p else math.inf
                                       for p in private])
        frames.append(s)
    out = pd.concat(frames, ignore_index=True)
    out["SSIM"] *= 100
    out["success"] *= 100
    return out.rename(columns={"SSIM": "SSIM_x100", "success": "success_%"})


def algorithms_figure(table: pd.DataFrame, results: list[AttackResult], cells: list[Cell], profile: str, name: str):
    """PSNR ([0, 1] pixels) of the reconstructions from each algorithm's messages, with and
    without its noise, per channel; saved to ``figures/<name>`` with the table as Markdown.

    Returns
    -------
    fig, files
        ``files``: the saved ``.pdf``, ``.png`` and ``.md``.
    """
    import seaborn as sns

    t = table.assign(
        message=[("no noise" if s.startswith("ND") else "with DP noise") + f" ({s.rsplit('-', 1)[1]})"
                 for s in table["scenario"]]
    )
    fig, ax = plt.subplots(figsize=(8, 3.6))
    sns.barplot(data=t, x="algorithm", y="PSNR_01", hue="message", ax=ax)
    threshold = results[0].success_psnr
    ax.axhline(threshold, color="0.4", ls="--", lw=1)
    ax.set_ylabel("PSNR of reconstruction (dB, [0, 1] pixels)")
    ax.set_xlabel("")
    ax.legend(fontsize=7, title=None)
    cfg, spec = cells[0]
    ax.set_title(f"Gradient inversion on every algorithm's messages, round {max(spec.rounds)}", fontsize=10)
    eps = pd.DataFrame([{"curve": display_name(c.algorithm), "nominal": c.epsilon,
                         "epsilon_rdp": (r.meta.get("train_epsilon_rdp") or {}).get("True", math.nan)}
                        for (c, _), r in zip(cells, results)])
    extra = (f"N = {cfg.n_agents}, {cfg.topology}, the same nominal epsilon and sigma rule ({cfg.sigma_rule}) for "
             f"every algorithm; {accountant_note(eps)}; dashed: success threshold {threshold:g} dB; "
             f"{scale_note(cfg.dataset, profile)}")
    files = save_figure(fig, name, caption(results[0].meta["dataset_label"], profile, extra))
    cols = list(table.columns)
    md = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    md += ["| " + " | ".join(f"{v:.3g}" if isinstance(v, float) else str(v) for v in r) + " |"
           for r in table.itertuples(index=False)]
    path = figures_dir(profile) / f"{name}.md"
    path.write_text(f"_{caption(results[0].meta['dataset_label'], profile, extra)}_\n\n" + "\n".join(md) + "\n")
    return fig, [*files, path]


# Notebook key -> (dataset, title) of Figures 5-6 and Tables III-IV.
INVERSION_FIGURES = {
    "fig05_mnist_inversion": ("mnist", "Figure 5: gradient inversion on MNIST (N = 10, bipartite)"),
    "fig06_cifar10_inversion": ("cifar10", "Figure 6: gradient inversion on CIFAR-10 (N = 10, bipartite)"),
}
ATTACK_TABLES = {
    "tab03_mnist_attack": ("mnist", "Table III: gradient inversion attacks on MNIST"),
    "tab04_cifar10_attack": ("cifar10", "Table IV: gradient inversion attacks on CIFAR-10"),
}


def inversion_figure_notebook(key: str, profile: str) -> Output:
    """Figure ``key`` of :data:`INVERSION_FIGURES`: attack the cell (cached), draw, check.

    Returns
    -------
    Output
        The figure and its files; no claims (Tables III-IV check them);
        ``tables["summary"]``: mean metrics per scenario and attacked round.
    """
    dataset, title = INVERSION_FIGURES[key]
    cell = figure_cell(dataset, profile)
    (result,) = run_cells([cell])
    fig, files = inversion_figure(result, cell[0], profile, f"dpdl_{key}", title)
    summary = result.summary()
    assert set(summary["scenario"]) == set(SCENARIOS), "a scenario is missing"
    assert len(summary) == len(SCENARIOS) * len(cell[1].rounds), "an attacked round is missing"
    assert summary[["MSE", "PSNR", "SSIM"]].notna().all().all() and summary["SSIM"].between(-1, 1).all()
    return Output(files, claims_frame([]), {"summary": summary}, figure=fig)


def attack_table_notebook(key: str, profile: str) -> Output:
    """Table ``key`` of :data:`ATTACK_TABLES`: attack every cell (cached), tabulate beside the
    paper, check the privacy claim, write ``figures/<profile>/dpdl_<key>.md/.tex``.

    Returns
    -------
    Output
        ``tables["table"]`` (:func:`attack_table`), the privacy claims per channel, the
        Markdown as ``text``.
    """
    dataset, title = ATTACK_TABLES[key]
    cells = table_cells(dataset, profile)
    results = run_cells(cells)
    table = attack_table(cells, results)
    claim = privacy_claim(table)
    assert len(results) == len(cells) and set(table["scenario"]) == set(SCENARIOS)
    assert table.loc[table["metric"].isin(["MSE", "PSNR", "SSIM_x100"]), "paper"].notna().all(), \
        "a paper value is missing"
    assert table["ours"].notna().all()
    return write_attack_table(table, claim, f"dpdl_{key}", title, table_note(results, dataset, profile))


def attack_algorithms_notebook(profile: str) -> Output:
    """The attack on every algorithm's messages, with and without its noise (beyond the
    paper, notebook ``ext03_attack_all_algorithms``): attack the cells (cached), tabulate,
    draw, write ``figures/<profile>/dpdl_attack_all_algorithms.{pdf,png,md}``.

    Returns
    -------
    Output
        The figure and its files; no claims (the paper makes none on the baselines);
        ``tables["table"]``: :func:`algorithms_table`.
    """
    cells = algorithm_cells(profile)
    results = run_cells(cells)
    table = algorithms_table(cells, results)
    fig, files = algorithms_figure(table, results, cells, profile, "dpdl_attack_all_algorithms")
    return Output(files, claims_frame([]), {"table": table}, figure=fig)
