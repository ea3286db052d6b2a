"""LEASGD's Figure 2 and Table 1, the beyond-the-paper communication plot, and the claims
checks. One builder per notebook; each runs what the results store lacks (a sweep), draws
or tabulates, saves ``figures/<profile>/leasgd_*`` with the data that ran and the profile in the
caption, checks the paper's claims on the numbers it shows, and returns an
:class:`~dpdl_core.verdicts.outputs.Output`.

- :func:`fig02_mnist_communication` — Fig. 2: non-private MNIST, m = 5, average training
  loss of all workers against (a) iteration and (b) transmitted vectors, LEASGD vs
  D-PSGD; the communication saving at a loss both reach.
- :func:`tab01_accuracy_epsilon` — Table 1: accuracy and total ε, m ∈ {5, 15}, MNIST and
  CIFAR-10, early stopping on validation accuracy; the paper's values in "paper" columns.
- :func:`communication_all_algorithms` — every registered algorithm at one setting,
  training loss against the loop's ``vectors_sent`` counter.

Scales come from ``profiles.yaml`` beside this file (sections ``fig02``, ``tab01``,
``communication``).
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.ticker import MaxNLocator

from ...runs import DEVICES, ExperimentConfig, ResultStore, RunGroup, load_profile, run_sweep, select_groups
from ...sim import check_choice, check_int, display_name, known_algorithms
from ...verdicts import (
    Output,
    caption,
    claims_frame,
    legend_below,
    load_histories,
    load_reference,
    save_figure,
    table_output,
)
from .claims import CLAIMED_SAVING, fig02_claims, tab01_claims
from .presets import NONPRIVATE_CLIP, SETTINGS, preset
from .privacy import early_stopping, total_epsilon

__all__ = [
    "COMM_NAME", "FIG02_NAME", "TAB01_NAME", "CommSettings", "Fig02Settings", "Tab01Scale", "Tab01Settings",
    "communication_all_algorithms", "communication_saving", "configs", "fig02_analysis", "fig02_figure",
    "fig02_mnist_communication", "tab01_accuracy_epsilon", "tab01_analysis", "tab01_run_row",
]

PAPER = "leasgd"
FIG02_NAME = "leasgd_fig02_mnist_communication"
TAB01_NAME = "leasgd_tab01_accuracy_epsilon"
COMM_NAME = "leasgd_communication_all_algorithms"
PAIR = ("leasgd", "dp_dpsgd")
# The paper's names in the reference CSV and its legends.
PAPER_NAMES = {"leasgd": "LEASGD", "dp_dpsgd": "D-PSGD"}
COLORS = {"leasgd": "C0", "dp_dpsgd": "C1"}


def _settings(cls, profile: str, key: str):
    """Section ``key`` of the profile as ``cls``; the profile's ``device`` applies to every run."""
    prof = load_profile(profile, paper=PAPER)
    section = {"device": prof.get("device", "cpu"), **prof[key]}
    known = {f.name for f in fields(cls)}
    unknown = sorted(set(section) - known)
    if unknown:
        raise ValueError(f"profile {profile!r} section {key!r}: unknown field(s) {unknown}; allowed: {sorted(known)}")
    return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in section.items()})


def _workers(profile: str, workers: int | None) -> int | None:
    """Sweep processes: the argument, else the profile's ``workers`` (None: one per core)."""
    return workers if workers is not None else load_profile(profile, paper=PAPER).get("workers")


def _check_scale(obj) -> None:
    check_choice(obj, "device", DEVICES)
    for name in ("rounds", "batch_size", "eval_every"):
        check_int(obj, name, 1)
    for name in ("train_samples", "eval_samples"):
        check_int(obj, name, 1, optional=True)
    if not obj.seeds or not all(isinstance(s, int) and s >= 0 for s in obj.seeds):
        raise ValueError(f"seeds={obj.seeds!r} must be a non-empty list of integers >= 0")


def _cell(value: float, spec: str) -> str:
    """``value`` in format ``spec``, or "–" where there is none (the paper reports no such m)."""
    return "–" if pd.isna(value) else format(value, spec)


def _smooth(series: pd.Series, window: int) -> pd.Series:
    """Trailing moving average (the per-round minibatch loss is noisy)."""
    return series.rolling(window, min_periods=1).mean()


# -- Figure 2 ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fig02Settings:
    """Scale of Figure 2 (profile section ``fig02``).

    Attributes
    ----------
    model : str
        The paper's 3-layer MLP (``leasgd_mlp``); the smoke profile uses ``logreg``.
    n_agents : int
        m (the paper: 5).
    rounds, batch_size, eval_every : int
    train_samples, eval_samples : int or None
        Training images before partitioning; test images per evaluation (None: all).
    seeds : tuple of int
        Runs averaged per algorithm.
    smooth : int
        Window (iterations) of the moving average drawn and used by the claims.
    """

    model: str = "leasgd_mlp"
    n_agents: int = 5
    rounds: int = 2000
    batch_size: int = 64
    train_samples: int | None = None
    eval_samples: int | None = 1000
    eval_every: int = 100
    seeds: tuple = (0, 1, 2)
    smooth: int = 25
    device: str = "cpu"

    def __post_init__(self):
        _check_scale(self)
        check_int(self, "n_agents", 3)
        check_int(self, "smooth", 1)

    @classmethod
    def from_profile(cls, profile: str) -> Fig02Settings:
        return _settings(cls, profile, "fig02")

    def configs(self) -> list[ExperimentConfig]:
        """Non-private runs (no noise, a clipping threshold no gradient reaches) of both
        algorithms and every seed."""
        return [
            preset("mnist", alg, self.n_agents, model=self.model, epsilon=None, clip=NONPRIVATE_CLIP,
                   rounds=self.rounds, batch_size=self.batch_size, train_samples=self.train_samples,
                   eval_samples=self.eval_samples, eval_every=self.eval_every, seed=seed, device=self.device)
            for alg in PAIR for seed in self.seeds
        ]


def communication_saving(curves: dict[str, pd.DataFrame]) -> dict:
    """Vectors each algorithm sends until its smoothed loss first reaches the higher of
    the two final smoothed losses (a level both reach), and the saving of LEASGD.

    Parameters
    ----------
    curves : {"leasgd": df, "dp_dpsgd": df}
        Per round: ``vectors`` (cumulative) and ``loss`` (smoothed).

    Returns
    -------
    dict with ``target`` (loss), ``vectors`` and ``rounds`` per algorithm, and ``saving``
    = 1 − V_LEASGD / V_D-PSGD.
    """
    target = max(float(c["loss"].iloc[-1]) for c in curves.values())
    out = {"target": target, "vectors": {}, "rounds": {}}
    for alg, c in curves.items():
        first = c.index[c["loss"].to_numpy() <= target][0]
        out["vectors"][alg] = float(c.loc[first, "vectors"])
        out["rounds"][alg] = int(first)
    out["saving"] = 1.0 - out["vectors"]["leasgd"] / out["vectors"]["dp_dpsgd"]
    return out


def _seed_savings(wide: pd.DataFrame, smooth: int) -> list[float]:
    """:func:`communication_saving` of each seed's own curves (the "~30%" claim's spread)."""
    out = []
    for seed in sorted(set(wide["seed"])):
        runs = {alg: wide[(wide["algorithm"] == alg) & (wide["seed"] == seed)].set_index("round") for alg in PAIR}
        if any(r.empty for r in runs.values()):
            continue
        out.append(communication_saving({alg: pd.DataFrame({"vectors": r["vectors_sent"],
                                                             "loss": _smooth(r["train_loss_mean"], smooth)})
                                         for alg, r in runs.items()})["saving"])
    return out


def fig02_analysis(configs, smooth: int, store: ResultStore) -> tuple[dict, dict, list, str]:
    """Figure 2's curves, saving and claims from the stored runs of ``configs`` (both
    algorithms, any seeds; nothing is computed).

    Returns
    -------
    curves : {"leasgd": df, "dp_dpsgd": df}
        Seed means per iteration: ``vectors`` (cumulative), ``loss`` (smoothed over
        ``smooth`` iterations), ``raw_loss``.
    saving : dict
        :func:`communication_saving` of ``curves``.
    claims : list of Claim
        :func:`~dpdl_core.papers.leasgd.claims.fig02_claims`.
    label : str
        The data the runs used.
    """
    df, label = load_histories(configs, store, ["train_loss_mean", "vectors_sent"])
    wide = df.pivot_table(index=["algorithm", "seed", "round"], columns="metric", values="value").reset_index()
    curves, seeds = {}, {}
    for alg in PAIR:
        runs = wide[wide["algorithm"] == alg]
        mean = runs.groupby("round")[["train_loss_mean", "vectors_sent"]].mean()
        curves[alg] = pd.DataFrame({"vectors": mean["vectors_sent"], "loss": _smooth(mean["train_loss_mean"], smooth),
                                    "raw_loss": mean["train_loss_mean"]})
        seeds[alg] = runs.pivot(index="round", columns="seed", values="train_loss_mean")
    saving = communication_saving(curves)
    claims = fig02_claims(curves, saving, seeds, seed_savings=_seed_savings(wide, smooth))
    return curves, saving, claims, label


def fig02_figure(curves: dict, saving: dict, s: Fig02Settings):
    """Figure 2's two panels from :func:`fig02_analysis`' curves and saving."""
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
    for alg in PAIR:
        c = curves[alg]
        axes[0].plot(c.index, c["loss"], color=COLORS[alg], lw=1.3, label=PAPER_NAMES[alg])
        axes[1].plot(c["vectors"], c["loss"], color=COLORS[alg], lw=1.3, label=PAPER_NAMES[alg])
    axes[1].axhline(saving["target"], color="0.5", lw=0.8, ls=":")
    axes[0].set(xlabel="iteration", ylabel="average training loss", title="(a) loss vs iteration")
    axes[1].set(xlabel="transmitted vectors", title="(b) loss vs transmitted vectors")
    axes[1].xaxis.set_major_locator(MaxNLocator(5))  # fewer, unclipped labels (up to 20,000 vectors)
    fig.suptitle(f"LEASGD Figure 2: MNIST, non-private, m = {s.n_agents}", fontsize=10)
    legend_below(fig, [Line2D([], [], color=COLORS[alg], lw=1.3, label=PAPER_NAMES[alg]) for alg in PAIR]
                 + [Line2D([], [], color="0.5", lw=0.8, ls=":", label="loss at which the saving is read")])
    return fig


def fig02_mnist_communication(profile: str, workers: int | None = None, store: ResultStore | None = None) -> Output:
    """Figure 2 at ``profile``: run, draw, save ``figures/<profile>/leasgd_fig02_mnist_communication``.

    Returns
    -------
    Output
        The figure and its files, its claims; ``tables["leasgd"]`` and
        ``tables["dp_dpsgd"]``: the seed-mean per iteration, ``vectors`` (cumulative),
        ``loss`` (smoothed) and ``raw_loss``; ``text``: the caption, then the communication
        saving (:func:`communication_saving`).
    """
    s = Fig02Settings.from_profile(profile)
    configs = s.configs()
    store = store or ResultStore()
    run_sweep(configs, store=store, workers=_workers(profile, workers))
    curves, saving, claims, label = fig02_analysis(configs, s.smooth, store)
    fig = fig02_figure(curves, saving, s)
    note = (f"model {s.model}, m = {s.n_agents}, {s.rounds} iterations, B = {s.batch_size}, {len(s.seeds)} seed(s), "
            f"moving average over {s.smooth} iterations; LEASGD p = 4, tau = 1; D-PSGD ring, momentum 0; "
            f"saving {100 * saving['saving']:.1f}% at loss {saving['target']:.3f} (dotted)")
    text = caption(label, profile, note)
    files = save_figure(fig, FIG02_NAME, text)
    return Output(files, claims_frame(claims), curves, figure=fig, text="\n".join([
        text, f"target loss {saving['target']:.4f} (the higher of the two final smoothed losses)",
        *(f"  {PAPER_NAMES[a]}: {saving['vectors'][a]:,.0f} vectors, {saving['rounds'][a]} iterations" for a in PAIR),
        f"communication saving of LEASGD: {100 * saving['saving']:.1f}% (paper: ~{100 * CLAIMED_SAVING:.0f}%)",
    ]))


# -- Table 1 ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Tab01Scale:
    """One dataset's scale in Table 1.

    Attributes
    ----------
    model : str
    rounds : int
        T_max, the iteration budget; σ₂ is calibrated so that ε(T_max) = the target.
    patience : int
        Early stopping: iterations without a better validation accuracy.
    validation_samples : int
        Validation images carved from the test set (the rest is the test set).
    lr, rho : float, optional
        η and LEASGD's ρ when not the preset's (0.05, 4.5); keep α = ηρ = 0.225 so that
        the elastic coupling β = pα = 0.9 stays the spec's.
    """

    model: str
    rounds: int
    batch_size: int
    eval_every: int
    patience: int
    validation_samples: int
    train_samples: int | None = None
    eval_samples: int | None = None
    seeds: tuple = (0,)
    lr: float | None = None
    rho: float | None = None
    device: str = "cpu"

    def __post_init__(self):
        _check_scale(self)
        check_int(self, "patience", 1)
        check_int(self, "validation_samples", 1)
        for name in ("lr", "rho"):
            value = getattr(self, name)
            if value is not None and not (isinstance(value, (int, float)) and value > 0):
                raise ValueError(f"{name}={value!r} must be a number > 0 or null")

    def changes(self, algorithm: str) -> dict:
        """Config fields this scale changes from the preset for ``algorithm``."""
        out = {} if self.lr is None else {"lr": float(self.lr)}
        if algorithm == "leasgd" and self.rho is not None:
            out["algo"] = {"rho": float(self.rho)}
        return out


@dataclass(frozen=True)
class Tab01Settings:
    """Scale of Table 1 (profile section ``tab01``).

    Attributes
    ----------
    n_agents : tuple of int
        m (the paper: 5 and 15).
    epsilon : float
        Target ε at T_max (spec: 5.0).
    accuracy_tol : float
        Claims: a difference of LEASGD's and D-PSGD's accuracy within this (plus t SE over
        seeds) is inconclusive.
    mnist, cifar10 : Tab01Scale
    """

    n_agents: tuple = (5, 15)
    epsilon: float = 5.0
    accuracy_tol: float = 0.01
    mnist: Tab01Scale = None
    cifar10: Tab01Scale = None
    device: str = "cpu"

    def __post_init__(self):
        for ds in ("mnist", "cifar10"):
            value = getattr(self, ds)
            if isinstance(value, dict):
                value = Tab01Scale(device=self.device,
                                   **{k: tuple(v) if isinstance(v, list) else v for k, v in value.items()})
                object.__setattr__(self, ds, value)
            if not isinstance(value, Tab01Scale):
                raise ValueError(f"{ds} must be a mapping of Tab01Scale fields, got {value!r}")
        if not self.n_agents or not all(isinstance(m, int) and m >= 3 for m in self.n_agents):
            raise ValueError(f"n_agents={self.n_agents!r} must be integers >= 3")
        if not (isinstance(self.epsilon, (int, float)) and self.epsilon > 0):
            raise ValueError(f"epsilon={self.epsilon!r} must be a number > 0")

    @classmethod
    def from_profile(cls, profile: str) -> Tab01Settings:
        return _settings(cls, profile, "tab01")

    def configs(self) -> list[ExperimentConfig]:
        out = []
        for ds in ("mnist", "cifar10"):
            sc: Tab01Scale = getattr(self, ds)
            for m in self.n_agents:
                for alg in PAIR:
                    for seed in sc.seeds:
                        out.append(preset(
                            ds, alg, m, model=sc.model, epsilon=float(self.epsilon), rounds=sc.rounds,
                            batch_size=sc.batch_size, train_samples=sc.train_samples, eval_samples=sc.eval_samples,
                            validation_samples=sc.validation_samples, eval_every=sc.eval_every, seed=seed,
                            device=sc.device, **sc.changes(alg),
                        ))
        return out


def tab01_run_row(cfg: ExperimentConfig, patience: int, store: ResultStore) -> dict:
    """Early-stopped and fixed-T accuracy and ε of one stored run, and the validation accuracy
    at the best validation step (what the best-faith search chooses by)."""
    header, hist = store.load_run(cfg.hash)
    meta = header["meta"]
    per_agent = hist[hist["agent"] >= 0].pivot_table(index="round", columns="metric", values="value", aggfunc="mean")
    evals = per_agent.dropna(subset=["val_acc"])
    stop = early_stopping(evals.index.to_numpy(), evals["val_acc"].to_numpy(), patience, cfg.rounds)
    sigma = float(meta["sigma"][0])
    eps_stop = float(total_epsilon(sigma, meta["local_sizes"], cfg.batch_size, stop.stop_step, cfg.delta).max())
    last = evals.index.max()
    for step in (stop.best_step, last):
        if np.isnan(evals.loc[step, "test_acc"]):  # test_at: best_validation tests these, and only
            raise ValueError(f"run {cfg.hash} has no test accuracy at round {step}, which early stopping reads "
                             f"(test_at={cfg.test_at!r}); recompute it with this package version")
    return {
        "dataset": cfg.dataset, "m": cfg.n_agents, "algorithm": cfg.algorithm, "seed": cfg.seed,
        "sigma": sigma, "stop_step": stop.stop_step, "best_step": stop.best_step,
        "accuracy": float(evals.loc[stop.best_step, "test_acc"]), "epsilon": eps_stop,
        "val_acc": float(evals.loc[stop.best_step, "val_acc"]),
        "accuracy_T": float(evals.loc[last, "test_acc"]), "epsilon_T": float(max(meta["epsilon_rdp"])),
        "diverged": bool(meta["diverged"]), "label": meta["dataset_label"],
    }


def tab01_analysis(configs, s: Tab01Settings, store: ResultStore) -> tuple[pd.DataFrame, pd.DataFrame, list]:
    """Table 1's rows and claims from the stored runs of ``configs`` (nothing is computed).

    Returns
    -------
    table : DataFrame
        Per (dataset, m, algorithm): seed means of accuracy and epsilon at the stopping step,
        accuracy_T and epsilon_T at T_max, sigma, stop_step, best_step; and the paper's
        (paper_accuracy, paper_epsilon; NaN where the paper has no such m).
    runs : DataFrame
        The same per run (seed), with the dataset label and divergence flag.
    claims : list of Claim
        :func:`~dpdl_core.papers.leasgd.claims.tab01_claims` with ``s.accuracy_tol``.
    """
    runs = pd.DataFrame([tab01_run_row(c, getattr(s, c.dataset).patience, store) for c in configs])
    numeric = ["sigma", "stop_step", "best_step", "accuracy", "epsilon", "accuracy_T", "epsilon_T"]
    table = runs.groupby(["dataset", "m", "algorithm"], sort=False)[numeric].mean().reset_index()
    ref = load_reference(PAPER, "leasgd_table1").rename(columns={"n_workers": "m"})
    ref["algorithm"] = ref["algorithm"].map({v: k for k, v in PAPER_NAMES.items()})
    ref = ref.rename(columns={"accuracy": "paper_accuracy", "total_epsilon": "paper_epsilon"})
    table = table.merge(ref[["dataset", "m", "algorithm", "paper_accuracy", "paper_epsilon"]],
                        on=["dataset", "m", "algorithm"], how="left")
    return table, runs, tab01_claims(table, s.accuracy_tol, runs)


def tab01_accuracy_epsilon(profile: str, workers: int | None = None, store: ResultStore | None = None) -> Output:
    """Table 1 at ``profile``: run, tabulate beside the paper, save ``figures/<profile>/leasgd_tab01_*``.

    Returns
    -------
    Output
        The ``.md`` and ``.tex`` (the Markdown as ``text``), the claims, and
        ``tables["table"]``: per (dataset, m, algorithm), seed means, ours (accuracy,
        epsilon at the stopping step; accuracy_T, epsilon_T at T_max; sigma, stop_step,
        best_step) and the paper's (paper_accuracy, paper_epsilon; NaN where the paper has
        no such m); ``tables["runs"]``: the same per run (seed), with the dataset label and
        divergence flag.
    """
    s = Tab01Settings.from_profile(profile)
    configs = s.configs()
    store = store or ResultStore()
    run_sweep(configs, store=store, workers=_workers(profile, workers))
    table, runs, claims = tab01_analysis(configs, s, store)
    labels = "; ".join(dict.fromkeys(runs["label"]))
    scales = "; ".join(
        f"{ds}: {sc.model}, T_max {sc.rounds}, B {sc.batch_size}, lr {sc.lr or SETTINGS['lr']}"
        f"{f', rho {sc.rho}' if sc.rho else ''}, patience {sc.patience}, {len(sc.seeds)} seed(s)"
        for ds, sc in (("mnist", s.mnist), ("cifar10", s.cifar10)))
    note = (f"target epsilon {s.epsilon} at T_max (delta {SETTINGS['delta']}), one sigma_2 per (dataset, m) for "
            f"both algorithms; accuracy: mean test accuracy of the workers' models at the best validation step; "
            f"epsilon: RDP accountant at the stopping step, per worker; {scales}")
    text = caption(labels, profile, note)
    cols = ["dataset", "m", "algorithm", "paper acc.", "acc.", "paper total ε", "total ε", "stop step",
            "acc. at T_max", "ε at T_max", "σ₂"]
    rows = [
        [r.dataset, r.m, PAPER_NAMES[r.algorithm], _cell(r.paper_accuracy, ".2f"), f"{r.accuracy:.3f}",
         _cell(r.paper_epsilon, ".3f"), f"{r.epsilon:.3f}", f"{r.stop_step:.0f}", f"{r.accuracy_T:.3f}",
         f"{r.epsilon_T:.3f}", f"{r.sigma:.3f}"]
        for r in table.itertuples()
    ]
    return table_output(TAB01_NAME, "LEASGD Table 1: accuracy and total ε (private setting)", text, cols, rows,
                        claims_frame(claims), {"table": table, "runs": runs})


# -- every algorithm's communication cost -------------------------------------------------------


@dataclass(frozen=True)
class CommSettings:
    """Scale of the all-algorithms communication plot (profile section ``communication``).

    Attributes
    ----------
    dataset : {"mnist", "cifar10"}
    model : str
    algorithms : tuple of str, or "all"
        Registered algorithm names; ``all`` takes every registered algorithm.
    topology : str
        Graph of the gossip algorithms; LEASGD always runs on the fully connected graph
        and uses only its leader–follower links.
    epsilon : float or None
        Privacy budget of every run (each algorithm's own σ under the ``rdp`` rule).
    validation_samples : int or None
        Carved from the test set for every run (PDSL needs a validation set).
    overrides : dict
        Per algorithm, config fields to change (e.g. an algorithm that needs another graph).
    """

    dataset: str = "mnist"
    model: str = "leasgd_mlp"
    algorithms: tuple | str = "all"
    n_agents: int = 6
    topology: str = "ring"
    epsilon: float | None = 5.0
    rounds: int = 500
    batch_size: int = 64
    train_samples: int | None = None
    eval_samples: int | None = 1000
    eval_every: int = 50
    validation_samples: int | None = 1000
    seeds: tuple = (0,)
    smooth: int = 25
    overrides: dict = field(default_factory=dict)
    device: str = "cpu"

    def __post_init__(self):
        _check_scale(self)
        check_int(self, "n_agents", 3)
        check_int(self, "smooth", 1)
        check_int(self, "validation_samples", 1, optional=True)

    @classmethod
    def from_profile(cls, profile: str) -> CommSettings:
        return _settings(cls, profile, "communication")

    def names(self) -> list[str]:
        return sorted(known_algorithms()) if self.algorithms == "all" else list(self.algorithms)

    def configs(self) -> list[ExperimentConfig]:
        out = []
        for alg in self.names():
            fields_ = {
                **SETTINGS, "sigma_rule": "rdp", "dataset": self.dataset, "model": self.model, "algorithm": alg,
                "topology": "fully_connected" if alg == "leasgd" else self.topology, "n_agents": self.n_agents,
                "epsilon": self.epsilon, "rounds": self.rounds, "batch_size": self.batch_size,
                "train_samples": self.train_samples, "eval_samples": self.eval_samples, "eval_every": self.eval_every,
                "validation_samples": self.validation_samples, "device": self.device,
            }
            fields_.update(self.overrides.get(alg, {}))
            out += [ExperimentConfig.from_dict({**fields_, "seed": seed}) for seed in self.seeds]
        return out


def communication_all_algorithms(profile: str, workers: int | None = None, store: ResultStore | None = None) -> Output:
    """Training loss against vectors sent (the loop's counter) for every algorithm at one
    setting; saves ``figures/<profile>/leasgd_communication_all_algorithms``.

    Returns
    -------
    Output
        The figure and its files, the caption as ``text``; no claims (beyond the paper);
        ``tables["table"]``: per algorithm, topology, vectors per round, first, final and largest
        smoothed loss, ``learned`` (final loss finite and below the first), final mean test
        accuracy of the agents, and the vectors sent until the loss first reaches the
        highest final loss of the algorithms that learned (NaN for the others). The plot's
        y-axis stops a little above the first loss; a curve that rises past it is named in
        the caption.
    """
    s = CommSettings.from_profile(profile)
    configs = s.configs()
    store = store or ResultStore()
    run_sweep(configs, store=store, workers=_workers(profile, workers))
    df, label = load_histories(configs, store, ["train_loss_mean", "vectors_sent", "test_acc"],
                               keys=("algorithm", "seed", "topology"))
    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    curves, rows = {}, []
    for alg in s.names():
        d = df[df["algorithm"] == alg]
        net = d[d["agent"] == -1].pivot_table(index=["seed", "round"], columns="metric", values="value")
        mean = net.groupby("round")[["train_loss_mean", "vectors_sent"]].mean()
        c = pd.DataFrame({"vectors": mean["vectors_sent"], "loss": _smooth(mean["train_loss_mean"], s.smooth)})
        curves[alg] = c
        topo = d["topology"].iloc[0]
        ax.plot(c["vectors"], c["loss"], lw=1.2, label=f"{display_name(alg)} ({topo})")
        acc = d[(d["metric"] == "test_acc") & (d["agent"] >= 0)]
        first, final = float(c["loss"].iloc[0]), float(c["loss"].iloc[-1])
        rows.append({"algorithm": display_name(alg), "topology": topo,
                     "vectors_per_round": float(c["vectors"].iloc[-1] / len(c)),
                     "first_loss": first, "final_loss": final, "max_loss": float(c["loss"].max()),
                     "learned": bool(np.isfinite(final) and final < first),
                     "test_acc": float(acc[acc["round"] == acc["round"].max()]["value"].mean())})
    table = pd.DataFrame(rows)
    learned = table["learned"].to_numpy()
    target = float(table.loc[learned, "final_loss"].max()) if learned.any() else np.nan
    table["vectors_to_target"] = [
        float(c.loc[c.index[c["loss"].to_numpy() <= target][0], "vectors"]) if ok else np.nan
        for c, ok in zip(curves.values(), learned)
    ]
    top = 1.1 * float(table["first_loss"].max())
    off = [f"{r.algorithm} (final loss {r.final_loss:.3g})" for r in table.itertuples() if not r.max_loss <= top]
    ax.set_ylim(0, top)
    if np.isfinite(target):
        ax.axhline(target, color="0.5", lw=0.8, ls=":")
    ax.set(xlabel="vectors sent (network-wide, cumulative)", ylabel="average training loss")
    ax.legend(fontsize=7)
    eps = "non-private" if s.epsilon is None else f"epsilon {s.epsilon} (rdp rule, each algorithm its own sigma)"
    note = (f"{s.dataset}, {s.model}, N = {s.n_agents}, {s.rounds} rounds, B = {s.batch_size}, {eps}, "
            f"{len(s.seeds)} seed(s), lr {SETTINGS['lr']}, momentum 0, C {SETTINGS['clip']}; "
            f"moving average over {s.smooth} rounds; dotted: loss {target:.3f} (vectors_to_target)"
            + (f"; off the axis: {', '.join(off)}" if off else ""))
    text = caption(label, profile, note)
    fig.suptitle("Communication cost of every algorithm", fontsize=10)
    return Output(save_figure(fig, COMM_NAME, text), claims_frame([]), {"table": table}, figure=fig, text=text)


def configs(profile: str, group: str | None = None) -> list[RunGroup]:
    """The runs the LEASGD notebooks sweep at ``profile`` (``python -m dpdl_core plan``), or
    only ``group`` (``fig02``, ``tab01`` or ``ext01``): those of
    :func:`fig02_mnist_communication`, :func:`tab01_accuracy_epsilon` and
    :func:`communication_all_algorithms`."""
    return select_groups([RunGroup("fig02", Fig02Settings.from_profile(profile).configs()),
                          RunGroup("tab01", Tab01Settings.from_profile(profile).configs()),
                          RunGroup("ext01", CommSettings.from_profile(profile).configs())], group)
