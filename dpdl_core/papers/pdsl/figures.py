"""PDSL's Figures 1–6 (training loss against round) and Tables I–II (test accuracy).

One builder per notebook kind, keyed by the notebook's name:

- :func:`loss_figure_notebook` (``fig01_mnist_fully_connected`` … ``fig06_cifar10_ring``):
  average training loss (mean over agents; band: min–max over agents) against round, one
  panel per (ε, M) laid out as the paper's (a1) … (c2), one curve per algorithm; checks
  the loss claims of §VI-C on the curves.
- :func:`accuracy_table_notebook` (``tab01_mnist_accuracy``, ``tab02_cifar10_accuracy``):
  final test accuracy per (topology, ε, M, algorithm) — the mean over the agents' local
  models (spec §5.7) and the average model x̄ — the paper's value in a "paper" column
  beside ours, the difference, ours in bold where best in its cell, and the claims of
  §VI-C checked.

Each builder runs what the results store lacks (a sweep), then reads the stored runs, and
returns an :class:`~dpdl_core.verdicts.outputs.Output` (files, claims, the data shown). The
grid and scale come from ``profiles.yaml`` beside this file and are printed under every
figure and table, with the data that ran. PDSL variants (e.g. per-sample clipping) are
extra curves and rows, labelled, never mixed with the paper's PDSL.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ...runs import ExperimentConfig, ResultStore, RunGroup, diverged_round, load_profile, run_sweep, select_groups
from ...sim import DATASETS, check_int, display_name
from ...verdicts import Output, accountant_note, caption, claims_frame, load_reference, save_figure, table_output
from .claims import FLUCTUATION_ROUNDS, figure_claims, table_claims
from .presets import ALGORITHMS, SETTINGS, TOPOLOGIES, preset

__all__ = ["FIGURES", "TABLES", "GridSettings", "Run", "accuracy_table", "accuracy_table_notebook", "configs",
           "final_losses", "grid", "load_runs", "loss_claims", "loss_figure_notebook", "scale_note"]

PAPER = "pdsl"
# Notebook key -> (dataset, topology, title).
FIGURES = {
    "fig01_mnist_fully_connected": ("mnist", "fully_connected", "Figure 1: MNIST, fully connected graphs"),
    "fig02_mnist_bipartite": ("mnist", "bipartite", "Figure 2: MNIST, bipartite graphs"),
    "fig03_mnist_ring": ("mnist", "ring", "Figure 3: MNIST, ring graphs"),
    "fig04_cifar10_fully_connected": ("cifar10", "fully_connected", "Figure 4: CIFAR-10, fully connected graphs"),
    "fig05_cifar10_bipartite": ("cifar10", "bipartite", "Figure 5: CIFAR-10, bipartite graphs"),
    "fig06_cifar10_ring": ("cifar10", "ring", "Figure 6: CIFAR-10, ring graphs"),
}
# Notebook key -> (table, dataset).
TABLES = {"tab01_mnist_accuracy": ("Table I", "mnist"), "tab02_cifar10_accuracy": ("Table II", "cifar10")}
# The reference CSV's algorithm names -> the package's.
PAPER_NAMES = {"PDSL": "pdsl", "DP-DPSGD": "dp_dpsgd", "DP-CGA": "dp_cga", "MUFFLIATO": "muffliato",
               "DP-NET-FLEET": "dp_netfleet"}
# The paper's M (Tables I-II columns).
PAPER_M = (10, 20)
# Final training loss: mean over the last few logged rounds (one minibatch loss is noisy).
FINAL_WINDOW = 3


@dataclass(frozen=True)
class GridSettings:
    """The grid and scale of one dataset in a profile (``profiles.yaml``).

    Attributes
    ----------
    algorithms : tuple of str
        ``pdsl`` and the baselines.
    pdsl : dict
        PDSL options shared by every PDSL run (Shapley estimator, R, v(∅), ...).
    variants : dict
        Extra PDSL curves: label → options added to ``pdsl`` (e.g. per-sample clipping).
    n_agents, seeds, epsilons : tuple
    sigma_rule : str
    rounds, batch_size, eval_every : int
    train_samples, eval_samples : int or None
    validation_samples : int
        |Q| (the paper: 2,000).
    """

    algorithms: tuple = ALGORITHMS
    pdsl: dict = field(default_factory=dict)
    variants: dict = field(default_factory=dict)
    n_agents: tuple = (10, 20)
    seeds: tuple = (0,)
    epsilons: tuple = ()
    sigma_rule: str = "per_message"
    rounds: int = 200
    batch_size: int = 250
    eval_every: int = 5
    train_samples: int | None = None
    eval_samples: int | None = None
    validation_samples: int = 2000

    def __post_init__(self):
        for name in ("rounds", "batch_size", "eval_every", "validation_samples"):
            check_int(self, name)
        for name in ("train_samples", "eval_samples"):
            check_int(self, name, optional=True)
        unknown = sorted(set(self.algorithms) - set(ALGORITHMS))
        if unknown or "pdsl" not in self.algorithms:
            raise ValueError(f"algorithms={list(self.algorithms)} must include pdsl and use only {list(ALGORITHMS)}")
        for name in ("n_agents", "seeds", "epsilons"):
            if not getattr(self, name):
                raise ValueError(f"{name} must be a non-empty list")

    @classmethod
    def from_profile(cls, profile: str, dataset: str) -> GridSettings:
        """The profile's ``grid`` section, shared keys merged with the dataset's."""
        section = load_profile(profile, paper=PAPER)["grid"]
        if dataset not in section:
            raise ValueError(f"profile {profile!r} has no PDSL grid for dataset={dataset!r}; "
                             f"allowed: {sorted(SETTINGS)}")
        merged = {**{k: v for k, v in section.items() if k not in SETTINGS}, **section[dataset]}
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(merged) - known)
        if unknown:
            raise ValueError(f"profile {profile!r}: unknown grid field(s) {unknown}; allowed: {sorted(known)}")
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in merged.items()})


@dataclass(frozen=True)
class Run:
    """One point of the grid: the curve label it belongs to and its config."""

    label: str
    config: ExperimentConfig

    @property
    def base_algorithm(self) -> str:
        return self.config.algorithm


def grid(dataset: str, topologies, profile: str) -> list[Run]:
    """Every run of ``dataset``'s grid over ``topologies`` (PDSL's settings, the profile's scale)."""
    s = GridSettings.from_profile(profile, dataset)
    scale = dict(rounds=s.rounds, batch_size=s.batch_size, eval_every=s.eval_every, train_samples=s.train_samples,
                 eval_samples=s.eval_samples, validation_samples=s.validation_samples, sigma_rule=s.sigma_rule)
    curves = [(display_name(a), a, dict(s.pdsl) if a == "pdsl" else {}) for a in s.algorithms]
    curves += [(label, "pdsl", {**s.pdsl, **opts}) for label, opts in s.variants.items()]
    return [
        Run(label, preset(dataset, alg, topo, epsilon=eps, n_agents=M, seed=seed, algo=algo, **scale))
        for topo in topologies for eps in s.epsilons for M in s.n_agents
        for label, alg, algo in curves for seed in s.seeds
    ]


def configs(profile: str, group: str | None = None) -> list[RunGroup]:
    """The runs the PDSL notebooks sweep at ``profile`` (``python -m dpdl_core plan``), or only
    ``group`` (``figures`` or ``tables``): the grids of :func:`loss_figure_notebook` and
    :func:`accuracy_table_notebook`."""
    figures = [r.config for dataset, topology, _ in FIGURES.values() for r in grid(dataset, [topology], profile)]
    tables = [r.config for _, dataset in TABLES.values() for r in grid(dataset, TOPOLOGIES, profile)]
    return select_groups([RunGroup("figures", figures), RunGroup("tables", tables)], group)


def scale_note(dataset: str, profile: str) -> str:
    """One line naming the grid and scale a profile runs at (printed under every output)."""
    s = GridSettings.from_profile(profile, dataset)
    pdsl = ", ".join(f"{k}={v}" for k, v in s.pdsl.items()) or "defaults"
    return (f"M in {list(s.n_agents)}, epsilon in {list(s.epsilons)}, {s.rounds} rounds, B = {s.batch_size}, "
            f"|Q| = {s.validation_samples}, {len(s.seeds)} seed(s), sigma rule {s.sigma_rule}; PDSL {pdsl}")


def load_runs(runs: list[Run], store: ResultStore, metrics) -> tuple[pd.DataFrame, str, pd.DataFrame]:
    """Stored histories (with label, topology, epsilon, n_agents, seed columns), the label of
    the data that ran, and one row of metadata per run."""
    frames, meta, label = [], [], None
    for r in runs:
        c = r.config
        if not store.has(c.hash):
            raise FileNotFoundError(f"run {c.hash} ({r.label}, epsilon={c.epsilon}, M={c.n_agents}) is not stored")
        header, hist = store.load_run(c.hash)
        last_round = int(hist["round"].max())
        hist = hist[hist["metric"].isin(metrics)].assign(label=r.label, topology=c.topology, epsilon=c.epsilon,
                                                         n_agents=c.n_agents, seed=c.seed)
        frames.append(hist)
        m = header["meta"]
        label = m.get("dataset_label", label)
        meta.append({"label": r.label, "topology": c.topology, "epsilon": c.epsilon, "n_agents": c.n_agents,
                     "seed": c.seed, "diverged": m["diverged"], "last_round": last_round, "rounds": c.rounds,
                     "diverged_at": diverged_round(m, last_round),
                     "sigma": m["sigma_max"],
                     "epsilon_rdp": m["epsilon_rdp_max"], "tie_fraction": m.get("shapley_tie_fraction")})
    return pd.concat(frames, ignore_index=True), label, pd.DataFrame(meta)


def _accountant(meta: pd.DataFrame) -> str:
    """The accountant's ε of every curve (:func:`~dpdl_core.verdicts.reporting.accountant_note`): the
    per-message σ rule gives PDSL half the baselines' noise scale, so equal nominal ε is not
    equal privacy."""
    return accountant_note(meta.rename(columns={"label": "curve", "epsilon": "nominal"}))


# -- Figures 1-6 -----------------------------------------------------------------------------


def _fluctuation(loss: pd.Series) -> float:
    """Standard deviation of ``loss`` (one run's last rounds, in order) about its least-squares
    line; 0 with fewer than three rounds."""
    y = loss.to_numpy(dtype=float)
    if len(y) < 3:
        return 0.0
    x = np.arange(len(y), dtype=float)
    residual = y - np.polyval(np.polyfit(x, y, 1), x)
    return float(np.sqrt((residual ** 2).sum() / (len(y) - 2)))


def final_losses(df: pd.DataFrame) -> pd.DataFrame:
    """Each run's final training loss, the input of :func:`.claims.figure_claims`.

    Parameters
    ----------
    df : DataFrame
        Histories with columns label, epsilon, n_agents, seed, round, value and, optionally,
        metric (only ``train_loss_mean`` rows are read).

    Returns
    -------
    DataFrame
        One row per (label, epsilon, n_agents, seed): ``value``, the mean of its last
        :data:`FINAL_WINDOW` logged rounds (one minibatch loss is noisy), and
        ``fluctuation``, the standard deviation of its last :data:`FLUCTUATION_ROUNDS`
        rounds about their straight line (the spread a one-seed row is judged with).
    """
    if "metric" in df.columns:
        df = df[df["metric"] == "train_loss_mean"]
    runs = df.sort_values("round").groupby(["label", "epsilon", "n_agents", "seed"])["value"]
    return pd.concat([runs.apply(lambda v: v.tail(FINAL_WINDOW).mean()).rename("value"),
                      runs.apply(lambda v: _fluctuation(v.tail(FLUCTUATION_ROUNDS))).rename("fluctuation")],
                     axis=1).reset_index()


def loss_claims(df: pd.DataFrame, key: str) -> pd.DataFrame:
    """The loss claims the text makes for figure ``key`` (:data:`.claims.FIGURE_SPECS`) on the
    curves that ran (the paper's PDSL, not variants), as :func:`~dpdl_core.verdicts.claims.claims_frame`,
    on :func:`final_losses`: the seeds give the spread, a one-seed row its own fluctuation.
    """
    return claims_frame(figure_claims(final_losses(df), key))


def loss_figure_notebook(key: str, profile: str, workers: int | None = None,
                         store: ResultStore | None = None) -> Output:
    """Figure ``key`` of :data:`FIGURES`: run the grid's missing runs, draw, check the claims.

    Returns
    -------
    Output
        The figure and its files, the figure's claims (:func:`loss_claims`), the data that
        ran as ``text``.
    """
    dataset, topology, title = FIGURES[key]
    store = store or ResultStore()
    runs = grid(dataset, [topology], profile)
    run_sweep([r.config for r in runs], store=store, workers=workers)
    df, label, meta = load_runs(runs, store, ["train_loss_mean", "train_loss_min", "train_loss_max"])
    wide = df.pivot_table(index=["label", "epsilon", "n_agents", "seed", "round"], columns="metric",
                          values="value").reset_index()
    eps_list, m_list = sorted(wide["epsilon"].unique()), sorted(wide["n_agents"].unique())
    labels = list(dict.fromkeys(r.label for r in runs))
    colors = dict(zip(labels, plt.rcParams["axes.prop_cycle"].by_key()["color"]))
    fig, axes = plt.subplots(len(eps_list), len(m_list), figsize=(4.4 * len(m_list), 3.0 * len(eps_list)),
                             squeeze=False, sharex=True)
    for r, eps in enumerate(eps_list):
        for c, M in enumerate(m_list):
            ax = axes[r, c]
            cell = wide[(wide["epsilon"] == eps) & (wide["n_agents"] == M)]
            for lab in labels:
                d = cell[cell["label"] == lab].groupby("round")
                if not len(cell[cell["label"] == lab]):
                    continue
                mean = d["train_loss_mean"].mean()
                ax.plot(mean.index, mean.values, label=lab, color=colors[lab], lw=1.2,
                        ls="--" if lab not in {display_name(a) for a in ALGORITHMS} else "-")
                ax.fill_between(mean.index, d["train_loss_min"].min(), d["train_loss_max"].max(), color=colors[lab],
                                alpha=0.1)
            ax.set_yscale("log")
            ax.set_title(f"({chr(97 + r)}{c + 1}) $\\epsilon$ = {eps} with M = {M}", fontsize=9)
            if r == len(eps_list) - 1:
                ax.set_xlabel("round")
            if c == 0:
                ax.set_ylabel("average training loss")
    axes[0, -1].legend(fontsize=7)
    fig.suptitle(f"PDSL paper, {title}", fontsize=10)
    diverged = meta[meta["diverged"]]
    note = f"{scale_note(dataset, profile)}; {_accountant(meta)}"
    if len(diverged):
        note += "; diverged: " + ", ".join(
            f"{r.label} eps={r.epsilon} M={r.n_agents} at round {int(r.diverged_at)} "
            + ("(curve stops)" if r.last_round < r.rounds else "(ran on)") for r in diverged.itertuples())
    files = save_figure(fig, f"pdsl_{key}", caption(label, profile, note))
    return Output(files, loss_claims(df, key), figure=fig, text=label)


# -- Tables I-II -----------------------------------------------------------------------------


def accuracy_table(runs: list[Run], store: ResultStore | None = None) -> tuple[pd.DataFrame, str, pd.DataFrame]:
    """Final test accuracy per (topology, ε, M, label), ours beside the paper's.

    Returns
    -------
    table : DataFrame
        topology, epsilon, n_agents, label, algorithm, ours (mean over seeds of the mean
        over agents' local models, %), ours_std (its standard deviation over seeds),
        ours_avg (the average model x̄, %), runs, paper_m (the paper's M this row is
        compared with: the same M, or by rank when the profile uses other M), paper (%,
        NaN where the paper has no such row), diff (ours − paper, only where M is the
        paper's), best (ours best in its cell).
    label : str
        The data that ran.
    meta : DataFrame
        Per run: diverged, the round it diverged at, the last round it ran and the rounds it
        was set to (a run stopped early has its accuracy at the round it stopped as its row),
        σ multiplier, accountant ε, Shapley tie fraction.
    """
    store = store or ResultStore()
    df, label, meta = load_runs(runs, store, ["test_acc", "avg_test_acc"])
    last = df[df["round"] == df.groupby(["label", "topology", "epsilon", "n_agents", "seed"])["round"].transform("max")]
    per_run = last.pivot_table(index=["label", "topology", "epsilon", "n_agents", "seed"], columns="metric",
                               values="value", aggfunc="mean").reset_index()
    keys = ["topology", "epsilon", "n_agents", "label"]
    table = per_run.groupby(keys).agg(ours=("test_acc", "mean"), ours_std=("test_acc", "std"),
                                      ours_avg=("avg_test_acc", "mean"), runs=("seed", "count")).reset_index()
    table["ours_std"] = table["ours_std"].fillna(0.0)
    table[["ours", "ours_std", "ours_avg"]] *= 100
    algo_of = {r.label: r.base_algorithm for r in runs}
    table["algorithm"] = table["label"].map(algo_of)
    ref = load_reference(PAPER, "pdsl_accuracy")
    ref = ref[ref["dataset"] == runs[0].config.dataset].assign(label=lambda d: d["algorithm"].map(
        {k: display_name(v) for k, v in PAPER_NAMES.items()}), paper=lambda d: 100 * d["accuracy"])
    # A reduced profile's M values stand for the paper's by rank (smallest ↔ 10, largest ↔
    # 20); the difference is only computed where the M is the paper's own.
    ours_m = sorted(table["n_agents"].unique())
    table["paper_m"] = table["n_agents"].map(dict(zip(ours_m, PAPER_M)) if set(ours_m) - set(PAPER_M) else
                                             {m: m for m in ours_m})
    ref = ref.rename(columns={"n_agents": "paper_m"})
    table = table.merge(ref[["topology", "epsilon", "paper_m", "label", "paper"]], on=["topology", "epsilon", "paper_m",
                                                                                      "label"], how="left")
    table["diff"] = (table["ours"] - table["paper"]).where(table["n_agents"] == table["paper_m"])
    cell = ["topology", "epsilon", "n_agents"]
    table["best"] = table["ours"] == table.groupby(cell)["ours"].transform("max")
    order = {t: k for k, t in enumerate(TOPOLOGIES)}
    table = table.sort_values(cell + ["label"], key=lambda s: s.map(order) if s.name == "topology" else s)
    return table.reset_index(drop=True), label, meta


def accuracy_table_notebook(key: str, profile: str, workers: int | None = None,
                            store: ResultStore | None = None) -> Output:
    """Table ``key`` of :data:`TABLES`: run the dataset's grid (all three topologies), tabulate
    beside the paper, check the claims, write ``figures/<profile>/pdsl_<key>.md`` and ``.tex``.

    Returns
    -------
    Output
        ``tables["table"]`` (:func:`accuracy_table`), the table's claims, the Markdown as
        ``text``.
    """
    table_name, dataset = TABLES[key]
    store = store or ResultStore()
    runs = grid(dataset, TOPOLOGIES, profile)
    run_sweep([r.config for r in runs], store=store, workers=workers)
    table, label, meta = accuracy_table(runs, store)
    claims = claims_frame(table_claims(table, key))
    note = (f"{label}; profile {profile}; {scale_note(dataset, profile)}. Ours: mean over the agents' local models "
            f"at the last round (x-bar: the average model); paper: {table_name} at 'paper M' (the same M, or the "
            f"paper's M of the same rank when the profile runs other M; diff only at the paper's own M); "
            f"{_accountant(meta)}. Q (the validation images) is public data outside the DP guarantee.")
    acc = meta.groupby(["topology", "epsilon", "n_agents", "label"])["epsilon_rdp"].max()
    cols = ["topology", "M", "epsilon", "accountant eps", "algorithm", "ours (%)", "ours x-bar (%)", "paper M",
            "paper (%)", "diff"]
    rows, bold = [], []
    for k, r in enumerate(table.itertuples()):
        rows.append([r.topology, int(r.n_agents), r.epsilon, f"{acc[(r.topology, r.epsilon, r.n_agents, r.label)]:.3g}",
                     r.label, f"{r.ours:.1f}", f"{r.ours_avg:.1f}",
                     int(r.paper_m) if not pd.isna(r.paper_m) else "—", "—" if pd.isna(r.paper) else f"{r.paper:.1f}",
                     "—" if pd.isna(r.diff) else f"{r.diff:+.1f}"])
        if r.best:
            bold.append((k, cols.index("ours (%)")))
    title = f"{table_name}: test accuracy (%) on {DATASETS[dataset].pretty}"
    return table_output(f"pdsl_{key}", title, note, cols, rows, claims, {"table": table}, bold)
