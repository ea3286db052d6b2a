"""The DPDL paper's convergence figures (1–4, 8, 9) and accuracy tables (I, II, V, VI).

Each notebook calls one builder: :func:`loss_figure_notebook` or :func:`accuracy_table_notebook`
with its key in :data:`FIGURES` / :data:`TABLES`; both return an
:class:`~dpdl_core.verdicts.outputs.Output`. The scale (ε, N, α_d, seeds, rounds, batch size, σ
rule) comes from the profile's ``dpdl`` section and is printed on every output. The
paper's numbers are read from ``reference/dpdl_accuracy.csv`` beside this file (a copy of
the shared reference tables) and only ever shown in a "paper" column.
"""
from __future__ import annotations

import pandas as pd

from ...runs import ExperimentConfig, Grid, ResultStore, RunGroup, expand, load_profile, run_sweep, select_groups
from ...sim import DATASETS, display_name, known_algorithms
from ...verdicts import (
    Output,
    accountant_note,
    check_stored,
    claims_frame,
    figures_dir,
    fmt_mean_std,
    load_histories,
    load_reference,
    loss_figure,
    table_output,
)
from .claims import table_claims
from .presets import preset

__all__ = ["FIGURES", "TABLES", "accuracy_table", "accuracy_table_notebook", "claims", "configs", "grid",
           "loss_figure_notebook", "scale_note", "summary_markdown", "write_accuracy_table"]

# Notebook key -> (dataset, topologies, title) of the convergence figures.
FIGURES = {
    "fig01_mnist_bipartite": ("mnist", ["bipartite"], "Figure 1: MNIST, bipartite graph, alpha_d = 0.25"),
    "fig02_mnist_fully_connected": ("mnist", ["fully_connected"],
                                    "Figure 2: MNIST, fully connected graph, alpha_d = 0.25"),
    "fig03_cifar10_bipartite": ("cifar10", ["bipartite"], "Figure 3: CIFAR-10, bipartite graph, alpha_d = 0.25"),
    "fig04_cifar10_fully_connected": ("cifar10", ["fully_connected"],
                                      "Figure 4: CIFAR-10, fully connected graph, alpha_d = 0.25"),
    "fig08_mnist_ring": ("mnist", ["ring"], "Figure 8: MNIST, ring graph, alpha_d = 0.25"),
    "fig09_cifar10_ring": ("cifar10", ["ring"], "Figure 9: CIFAR-10, ring graph, alpha_d = 0.25"),
}


def _paper_names() -> dict[str, str]:
    return {cls.display_name: name for name, cls in known_algorithms().items()}


def _section(profile: str, dataset: str) -> dict:
    p = load_profile(profile, paper="dpdl")["dpdl"]
    if dataset not in p:
        raise ValueError(f"profile {profile!r} has no dpdl grid for dataset={dataset!r}; "
                         f"allowed: {sorted(k for k in p if isinstance(p[k], dict))}")
    return {**{k: v for k, v in p.items() if not isinstance(v, dict)}, **p[dataset]}


# The two comparison modes of the tables: the σ rule of each.
NOISE_MODES = {"authors_code": "paper noise", "rdp": "equal ε"}


def grid(dataset: str, topologies: list[str], profile: str, alpha_d: list[float] | None = None,
         sigma_rules: list[str] | None = None) -> list[ExperimentConfig]:
    """Configs of the profile's DPDL grid for ``dataset`` over ``topologies``, for the σ
    rules ``sigma_rules`` (default: the profile's, i.e. both comparison modes).

    Hyper-parameters are the paper's (:func:`~dpdl_core.papers.dpdl.preset`); the profile
    sets the grid and the scale.
    """
    s = _section(profile, dataset)
    base = preset(dataset).to_dict()
    base.update(
        rounds=s["rounds"], batch_size=s["batch_size"], train_samples=s["train_samples"],
        eval_samples=s["eval_samples"], eval_every=s["eval_every"],
    )
    base.pop("algo")
    axes = {
        "algorithms": s["algorithms"],
        "epsilons": s["epsilons"],
        "n_agents": s["n_agents"],
        "topologies": topologies,
        "alpha_d": alpha_d if alpha_d is not None else s["alpha_d"],
        "seeds": s["seeds"],
        "sigma_rules": sigma_rules if sigma_rules is not None else s["sigma_rules"],
    }
    return expand(Grid(axes, base))


def scale_note(dataset: str, profile: str) -> str:
    """One line naming the scale a profile runs at."""
    s = _section(profile, dataset)
    return (f"N in {s['n_agents']}, {s['rounds']} rounds, B = {s['batch_size']}, {len(s['seeds'])} seed(s), "
            f"alpha_d in {s['alpha_d']}, noise: "
            + ", ".join(f"{NOISE_MODES.get(r, r)} ({r})" for r in s["sigma_rules"]))


def loss_figure_notebook(key: str, profile: str, workers: int | None = None) -> Output:
    """Figure ``key`` of :data:`FIGURES`: run the grid's missing runs, check them, draw.

    Returns
    -------
    Output
        The figure and its files; no claims (the text makes none on the curves); ``text``:
        the data that ran, then a line per run that diverged (where, and whether its curve
        stops there or it ran on).
    """
    dataset, topologies, title = FIGURES[key]
    configs = grid(dataset, topologies, profile, alpha_d=[0.25], sigma_rules=["authors_code"])
    run_sweep(configs, workers=workers)
    notes = check_stored(configs)
    store = ResultStore()
    eps = pd.DataFrame([{"curve": display_name(c.algorithm), "nominal": c.epsilon,
                         "epsilon_rdp": store.read_header(c.hash)["meta"]["epsilon_rdp_max"]} for c in configs])
    # The figures run one alpha_d (the scale note lists the tables' two).
    note = (scale_note(dataset, profile).split(", alpha_d in")[0] + ", alpha_d = 0.25, paper noise (sigma rule "
            f"authors_code); {accountant_note(eps)}")
    fig, label, files = loss_figure(configs, profile, f"dpdl_{key}", title, note, store=store)
    return Output(files, claims_frame([]), figure=fig, text="\n".join([label, *notes]))


def accuracy_table(configs: list[ExperimentConfig], key: str,
                   store: ResultStore | None = None) -> tuple[pd.DataFrame, pd.DataFrame, str]:
    """Final test accuracy (%) per noise mode, cell and algorithm, beside the paper's.

    Two accuracies: the average model's (x̄, what the tables' "ours" and the claims use) and
    the mean over the agents' own models; the paper does not say which it reports.

    Returns
    -------
    table : DataFrame
        Columns noise, alpha_d, topology, n_agents, epsilon, algorithm, ours_mean, ours_std,
        agents_mean, runs, epsilon_rdp (the accountant's ε of the run, max over agents),
        paper_mean, paper_std, diff (ours − paper), best (ours best in its cell and mode).
    claims : DataFrame
        The claims of table ``key`` (:func:`claims`) per noise mode: holds / fails /
        inconclusive, with the evidence and the margin used.
    label : str
        The dataset that ran.
    """
    store = store or ResultStore()
    keys = ["sigma_rule", "alpha_d", "topology", "n_agents", "epsilon", "algorithm"]
    df, label = load_histories(configs, store, ["avg_test_acc", "test_acc"], keys=[*keys, "seed"])
    last_round = df.groupby([*keys, "seed"])["round"].transform("max")
    final = df[df["round"] == last_round]
    avg = final[final["metric"] == "avg_test_acc"]
    agents = final[final["metric"] == "test_acc"].groupby([*keys, "seed"])["value"].mean().reset_index()
    ours = avg.groupby(keys)["value"].agg(["mean", "std", "count"]).reset_index()
    ours["ours_mean"] = 100 * ours["mean"]
    ours["ours_std"] = 100 * ours["std"].fillna(0.0)
    ours = ours.rename(columns={"count": "runs"})[keys + ["ours_mean", "ours_std", "runs"]]
    ours = ours.merge(100 * agents.groupby(keys)["value"].mean().rename("agents_mean"), on=keys)
    eps = {c.hash: c for c in configs}
    rdp_eps = pd.DataFrame([
        {**{k: getattr(c, k) for k in keys}, "epsilon_rdp": store.read_header(h)["meta"]["epsilon_rdp_max"]}
        for h, c in eps.items() if store.has(h)
    ]).groupby(keys)["epsilon_rdp"].max().reset_index()
    ours = ours.merge(rdp_eps, on=keys, how="left")
    ref = load_reference("dpdl", "dpdl_accuracy")
    ref = ref[ref["dataset"] == configs[0].dataset].copy()
    ref["algorithm"] = ref["algorithm"].map(_paper_names())
    ref_keys = keys[1:]
    ref = ref.rename(columns={"accuracy_mean": "paper_mean", "accuracy_std": "paper_std"})
    ref = ref[ref_keys + ["paper_mean", "paper_std"]]
    table = ours.merge(ref, on=ref_keys, how="left")
    table["diff"] = table["ours_mean"] - table["paper_mean"]
    table.insert(0, "noise", table.pop("sigma_rule").map(lambda r: NOISE_MODES.get(r, r)))
    cell = ["noise", "alpha_d", "topology", "n_agents", "epsilon"]
    table["best"] = table["ours_mean"] == table.groupby(cell)["ours_mean"].transform("max")
    table = table.sort_values(cell + ["algorithm"]).reset_index(drop=True)
    return table, claims(table, key), label


def claims(table: pd.DataFrame, key: str) -> pd.DataFrame:
    """The claims the text makes for table ``key`` (:data:`.claims.TABLE_SPECS`) on the cells
    that ran, per noise mode (the ``condition`` column), as :func:`~dpdl_core.verdicts.claims.claims_frame`."""
    return claims_frame(table_claims(table, key))


def write_accuracy_table(table: pd.DataFrame, claims_df: pd.DataFrame, name: str, title: str, note: str) -> Output:
    """Render to ``figures/<name>.md`` and ``.tex`` (ours in bold where best in its cell and
    noise mode), the claims under it; the Output holds ``table`` as ``tables["table"]``."""
    cols = ["noise", "alpha_d", "topology", "N", "epsilon", "algorithm", "RDP epsilon", "ours: avg model (%)",
            "ours: agents (%)", "paper (%)", "diff"]
    rows, bold = [], []
    for k, r in enumerate(table.itertuples()):
        rows.append([r.noise, r.alpha_d, r.topology, int(r.n_agents), r.epsilon, display_name(r.algorithm),
                     f"{r.epsilon_rdp:.3g}", fmt_mean_std(r.ours_mean, r.ours_std, int(r.runs)), f"{r.agents_mean:.1f}",
                     "—" if pd.isna(r.paper_mean) else fmt_mean_std(r.paper_mean, r.paper_std),
                     "—" if pd.isna(r.diff) else f"{r.diff:+.1f}"])
        if r.best:
            bold.append((k, cols.index("ours: avg model (%)")))
    note += ("; paper noise = the authors' sigma rule for every algorithm (not equal privacy); equal epsilon = "
             "each algorithm's sigma calibrated by the RDP accountant for its own messages; diff and bold use the "
             "average model")
    return table_output(name, title, note, cols, rows, claims_df, {"table": table}, bold)


# Notebook key -> (table name, dataset, topologies) of the accuracy tables.
TABLES = {
    "tab01_mnist_accuracy": ("Table I", "mnist", ["bipartite", "fully_connected"]),
    "tab02_cifar10_accuracy": ("Table II", "cifar10", ["bipartite", "fully_connected"]),
    "tab05_mnist_ring_accuracy": ("Table V", "mnist", ["ring"]),
    "tab06_cifar10_ring_accuracy": ("Table VI", "cifar10", ["ring"]),
}


def accuracy_table_notebook(key: str, profile: str, workers: int | None = None) -> Output:
    """Table ``key`` of :data:`TABLES`: run the grid's missing runs (both α_d), tabulate
    beside the paper, check the claims, write ``figures/<profile>/dpdl_<key>.md/.tex``.

    Returns
    -------
    Output
        ``tables["table"]`` (:func:`accuracy_table`), the claims per noise mode, the
        Markdown as ``text``.
    """
    table_name, dataset, topologies = TABLES[key]
    configs = grid(dataset, topologies, profile)
    run_sweep(configs, workers=workers)
    table, claims_df, label = accuracy_table(configs, key)
    cell = ["noise", "alpha_d", "topology", "n_agents", "epsilon"]
    assert table.groupby(cell)["algorithm"].nunique().eq(table["algorithm"].nunique()).all(), "a cell is missing"
    assert table["ours_mean"].between(0, 100).all() and table["agents_mean"].between(0, 100).all()
    assert table["paper_mean"].notna().any(), "no paper value matched these cells"
    title = f"{table_name}: test accuracy (%) on {DATASETS[dataset].pretty}"
    note = f"{label}; profile {profile}; {scale_note(dataset, profile)}"
    return write_accuracy_table(table, claims_df, f"dpdl_{key}", title, note)


def configs(profile: str, group: str | None = None) -> list[RunGroup]:
    """The runs the DPDL notebooks sweep into a results store at ``profile`` (``python -m
    dpdl_core plan``), or only ``group`` (``figures`` or ``tables``): the grids of the loss
    figures and the accuracy tables, as :func:`loss_figure_notebook` and
    :func:`accuracy_table_notebook` build them (the paper-scale study has its own plan:
    ``study plan``). The attack cells (Figures 5-6,
    Tables III-IV, ext03) are cached by :mod:`dpdl_core.papers.dpdl.threat_models`, not swept, and the
    quickstart and baselines notebooks (ext01, ext02) define their few runs themselves."""
    figures = [c for dataset, topologies, _ in FIGURES.values()
               for c in grid(dataset, topologies, profile, alpha_d=[0.25], sigma_rules=["authors_code"])]
    tables = [c for _, dataset, topologies in TABLES.values() for c in grid(dataset, topologies, profile)]
    return select_groups([RunGroup("figures", figures), RunGroup("tables", tables)], group)


def summary_markdown(profile: str, store: ResultStore | None = None) -> str:
    """Reproduced-vs-paper summary over the accuracy tables of a profile: per table and
    algorithm, our mean final accuracy over the cells that ran beside the paper's mean over
    the same cells, and the claims verdicts. Cells without stored runs are skipped.

    Raises
    ------
    FileNotFoundError
        When no cell of any table is stored (nothing to summarise).
    """
    store = store or ResultStore()
    if not any(store.has(c.hash) for _, dataset, topologies in TABLES.values()
               for c in grid(dataset, topologies, profile)):
        raise FileNotFoundError(f"no run of the DPDL accuracy tables is stored at profile {profile} in {store.root}; "
                                f"run `make figures PROFILE={profile} PAPER=dpdl` first")
    out = [f"Profile `{profile}`. Mean over the cells that ran of the final average-model test accuracy (%).", "",
           "| table | noise | data that ran | algorithm | cells | ours | paper (same cells) |",
           "|---|---|---|---|---|---|---|"]
    verdicts = []
    for key, (name, dataset, topos) in TABLES.items():
        configs = [c for c in grid(dataset, topos, profile) if store.has(c.hash)]
        if not configs:
            continue
        table, claims_df, label = accuracy_table(configs, key, store)
        for (mode, alg), g in table.groupby(["noise", "algorithm"], sort=False):
            out.append(f"| {name} | {mode} | {label} | {display_name(alg)} | {len(g)} | "
                       f"{g['ours_mean'].mean():.1f} | {g['paper_mean'].mean():.1f} |")
        verdicts += [f"| {name} | {c.condition} | {c.claim} | {c.verdict} |" for c in claims_df.itertuples()]
    out += ["", "| table | noise | claim of the paper | at this scale |", "|---|---|---|---|"] + verdicts
    text = "\n".join(out) + "\n"
    (figures_dir(profile) / f"dpdl_summary_{profile}.md").write_text(text)
    return text
