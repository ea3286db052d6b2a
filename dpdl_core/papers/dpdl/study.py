"""The DPDL paper-scale study (``make studies PAPER=dpdl``): the runs that decide Table I / II.

Setting of the decisive cells: MNIST, ε = 0.5, N = 10 bipartite, α_d = 0.25, B = 216, 1,000
rounds, all 60,000 training and 10,000 test images; CIFAR-10, ε = 4, 500 rounds. Groups, in
the order they run (the pair that decides "DPDL is best" lands first):

``code_hp``
    The five algorithms at the authors' released code's η = 0.1 and C = 1 (its command-line
    defaults, ``docs/dpdl_authors_code.md`` row 9), under paper noise (``authors_code``). The
    paper's Table I is consistent with these, not with its stated η = 0.005, C = 2, so "DPDL
    is best" is a finding only if every algorithm gets them.
``paper_hp``
    The five algorithms at the paper's §VI-A settings (η = 0.005, C = 2), under paper noise
    and at equal ε (``rdp``: each algorithm calibrated by the accountant for its own messages).
``authors``
    DPDL's ``authors`` variant (every default of the authors' code) with one shared initial
    model, with per-agent random initial models as their code does, and with those and
    their random per-agent mixing matrix (``mixing: random_sinkhorn``) together.
``cifar10``
    Table II's cell at the paper's settings under paper noise: DPDL, DP-CGA and DP-DPSGD, then
    (after the MNIST decisive cells) DP-NETFLEET, the paper's runner-up there. MUFFLIATO is not run on
    CIFAR-10: the cell's verdict names the baselines it compared.
``cifar10/authors_config`` (priority 2-3: the heaviest runs, made for a GPU)
    Tables II's cell at the configuration of the authors' released code: their CIFAR-10 CNN
    with its dropout (1,059,306 parameters, ``per_sample_strategy: bookkeeping``), η = 0.1
    decayed by 0.995 every 30 rounds, C = 1, β = 0.9, B = 256, 1,000 rounds (the code's 100
    epochs of 10 rounds). The five algorithms under paper noise and at equal ε, per-sample
    clipping, no weight decay for any (the baselines have no such option: every method gets
    the same regulariser); DPDL's ``authors`` variant (their micro-batch mechanism, weight
    decay 5e-4, per-tensor cosine), which is what the paper's 64.0 is calibrated against;
    seeds 1 and 2 of DPDL and DP-CGA under paper noise.
seeds 1 and 2
    Of DPDL and the two strongest baselines of the paper's table (DP-NETFLEET and DP-CGA on
    MNIST; DP-CGA, then DP-NETFLEET last, on CIFAR-10), for the seed spread: in every setting
    where "DPDL is best" is judged (MNIST at the code's η, C, and at the paper's under paper
    noise and at equal ε; CIFAR-10 under paper noise).

``ring`` and ``trends`` (after everything above: MNIST, then CIFAR-10)
    The runs that decide the tables' other claims, each in one cell of the decisive
    setting (MNIST at the code's η, C; CIFAR-10 at the paper's; paper noise): Table V / VI's
    "DPDL is best" on the ring (every algorithm of the dataset's cell, seeds 1 and 2 of DPDL
    and of the paper's two strongest baselines there, as in the decisive cells: the one that
    decides the cell is the strongest of ours, which need not be the paper's first); DPDL's
    growth with ε (Tables I, II, and VI on the ring: DPDL at the table's other two ε) and
    with a denser graph (Tables I, II: DPDL on the fully connected graph), seeds 0-2 of
    every point.

loss curves (priority 14 seed 0, 15 seeds 1-2: after every run above)
    The points the text's statements on the MNIST loss curves read (:data:`.claims.CURVE_POINTS`,
    N = 10, the code's η, C, paper noise) that no group above runs, seeds 0-2 of each: the four
    baselines on the fully connected graph (Figure 2), the four baselines at ε 0.25 and 1 on
    the bipartite graph (Figure 1), and the five algorithms at ε 0.25 and 1 on the ring
    (Figure 8).

``attack`` (priority 10 MNIST, 12 CIFAR-10)
    One gradient-inversion cell per dataset (Tables III-IV, Figures 5-6), a job of
    :mod:`.attack_study`: the ``paper`` profile's attack on the bipartite graph with N = 10.

A cell's "DPDL is best" is judged only once every algorithm of its row is stored; until then
its verdict is *inconclusive* and names what is missing. A trend is judged once each of its
points has :data:`MIN_PAIR_SEEDS` seeds.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from ...runs import Job, Study, StudyRun
from ...sim import make_topology
from .attack_study import ATTACK_FUNCTION, attack_spec, estimate_seconds
from .presets import SETTINGS, preset

__all__ = ["ALGORITHMS", "study"]

ALGORITHMS = ("dpdl", "dp_netfleet", "dp_cga", "muffliato", "dp_dpsgd")
# The paper's two best baselines in the decisive cells (Table I: 91.2, 90.9; Table II: 56.4, 55.7).
PAIR_BASELINES = {"mnist": ("dp_netfleet", "dp_cga"), "cifar10": ("dp_cga", "dp_netfleet")}
# Table II's cell: the first three run at priority 5, the runner-up after the MNIST decisive cells.
CIFAR_FIRST = ("dpdl", "dp_cga", "dp_dpsgd")
CIFAR_ALGORITHMS = CIFAR_FIRST + (PAIR_BASELINES["cifar10"][1],)
# The algorithms of each dataset's cell: "DPDL is best" is judged once all of them are stored.
CELL_ALGORITHMS = {"mnist": ALGORITHMS, "cifar10": CIFAR_ALGORITHMS}
CODE_HP = {"lr": 0.1, "clip": 1.0}
NOISE = {"authors_code": "paper_noise", "rdp": "equal_eps"}
# Seconds per training round on one core of the 2-core machine, the other core busy, on the
# bipartite graph (5 neighbours; per-sample kernel as below). DPDL and DP-CGA compute a gradient
# at every neighbour's model, so theirs scale with the degree + 1; the others' barely depend on
# the graph. Source: docs/benchmarks.md, "Planner estimates".
_SECONDS_PER_ROUND = {("mnist", "dpdl"): 1.05, ("mnist", "dp_cga"): 1.07, ("mnist", "dp_netfleet"): 0.39,
                      ("mnist", "muffliato"): 0.2, ("mnist", "dp_dpsgd"): 0.2,
                      ("cifar10", "dpdl"): 2.8, ("cifar10", "dp_cga"): 2.75, ("cifar10", "dp_netfleet"): 0.9,
                      ("cifar10", "muffliato"): 0.45, ("cifar10", "dp_dpsgd"): 0.45}
_PER_NEIGHBOUR = ("dpdl", "dp_cga")
_BIPARTITE_DEGREE = 5
# A training round's cost with another per-sample kernel, relative to the rates' kernel (MNIST
# vmap, CIFAR-10 per-model): the CIFAR-10 runs stored with the vmap kernel took 2.1-2.3x the
# training time of the same work stored with the per-model one.
_KERNEL_COST = {("cifar10", "vmap"): 2.2}
# Seconds per evaluation of all N agents' models on the 10,000 test images, by evaluation
# strategy. MNIST: one value fits the stored runs of both; CIFAR-10 per-model: the ring runs'
# wall times less their training rounds; vmap: 7.24x that, the measured ratio of the two
# (docs/benchmarks.md, "Evaluation forward").
_SECONDS_PER_EVAL = {"mnist": {"vmap": 12.0, "per_model": 12.0}, "cifar10": {"vmap": 65.0, "per_model": 9.0}}

MNIST = dict(n_agents=10, alpha_d=0.25, rounds=1000, batch_size=216, train_samples=None, eval_samples=None,
             eval_every=50, epsilon=0.5, checkpoint_every=25)
CIFAR = dict(n_agents=10, alpha_d=0.25, rounds=500, batch_size=216, train_samples=None, eval_samples=None,
             eval_every=25, epsilon=4.0, checkpoint_every=25)
# The authors' released code's configuration on CIFAR-10 (docs/dpdl_authors_code.md, rows 5-9, C).
AUTHORS_CIFAR = dict(n_agents=10, alpha_d=0.25, rounds=1000, batch_size=256, train_samples=None, eval_samples=None,
                     eval_every=50, epsilon=4.0, checkpoint_every=25, model="dpdl_cnn_authors_dropout",
                     per_sample_strategy="bookkeeping", momentum=0.9, lr_decay=0.995, lr_decay_every=30)
# A round's cost relative to the dataset's default model (_SECONDS_PER_ROUND): the authors'
# CIFAR-10 CNN with B = 256 (bench_engine.py's kernel rows; docs/benchmarks.md).
_MODEL_COST = {"dpdl_cnn_authors_dropout": 5.0}


# The graphs of the study (the decisive cells are bipartite).
GRAPHS = ("bipartite", "ring", "fully_connected")
# Where the tables' other claims are judged: the setting whose decisive cell the study runs
# (MNIST at the code's eta, C, where the paper's DPDL number is reproduced; CIFAR-10 at the
# paper's, the only one the study runs there), under paper noise.
TREND_SETTING = {"mnist": ("code_hp", MNIST, CODE_HP), "cifar10": ("paper_hp", CIFAR, {})}


def _purpose(dataset: str, graph: str, eps: float, cell: float) -> str:
    table = {"mnist": ("I", "V"), "cifar10": ("II", "VI")}[dataset]
    if graph == "ring" and eps == cell:
        return f"Table {table[1]} (ring): is DPDL best?"
    if graph == "fully_connected":
        return f"Table {table[0]}: do denser graphs do better for DPDL?"
    return f"Table {table[1] if graph == 'ring' else table[0]}: does DPDL's accuracy grow with eps?"


# Why the loss-curve runs are made, per graph and N (the text's statements they serve).
_CURVE_PURPOSE = {("fully_connected", 10): "Figure 2: does DPDL's advantage grow on a denser graph?",
                  ("bipartite", 10): "Figure 1 (N = 10): does the baselines' convergence fail at eps 0.25 and "
                                     "DPDL's not?",
                  ("ring", 10): "Figure 8 (N = 10): does DPDL converge fastest on the ring?",
                  ("bipartite", 20): "Figure 1 (N = 20): are the losses at 500 rounds the text's?",
                  ("bipartite", 30): "Figure 1 (N = 30): does N change DPDL's convergence little?",
                  ("fully_connected", 20): "Figure 2 (N = 20): does DPDL reach its minimum in 200 rounds?"}
# The N and data heterogeneity alpha_d of the study's cells (the paper's Tables I-II and V-VI
# at N = 10, alpha_d = 0.25; alpha_d = 1.0 is each table's other half).
N10 = 10
ALPHA = 0.25


def cell_setting(setting: str, n: int = N10, alpha_d: float = ALPHA) -> str:
    """The setting tag of a run at N = ``n`` and ``alpha_d``: ``setting`` at N = 10, alpha_d =
    0.25, else ``<setting>/n<n>`` and / or ``<setting>/alpha<alpha_d>``, so that a run elsewhere
    never joins a cell of the tables' N = 10, alpha_d = 0.25 half."""
    return setting + (f"/n{n}" if n != N10 else "") + (f"/alpha{alpha_d:g}" if alpha_d != ALPHA else "")


def _trend_run(dataset: str, graph: str, eps: float, alg: str, seed: int, purpose: str, priority: int,
               n: int = N10, alpha_d: float = ALPHA) -> tuple:
    """``add``'s arguments for a run in the dataset's :data:`TREND_SETTING` under paper noise at
    (``graph``, ``eps``, N = ``n``, ``alpha_d``): its key names the graph and eps where they are
    not the decisive cell's, and N and alpha_d where they are not 10 and 0.25 (:func:`cell_setting`)."""
    setting, base, hp = TREND_SETTING[dataset]
    cell_graph, cell = _CELL[dataset]
    part = graph if eps == cell else (f"eps{eps:g}" if graph == cell_graph else f"{graph}/eps{eps:g}")
    return (f"{dataset}/{cell_setting(setting, n, alpha_d)}/paper_noise/{part}/{alg}/seed{seed}", purpose, priority,
            preset(dataset, topology=graph, algorithm=alg, sigma_rule="authors_code", seed=seed,
                   **{**base, "epsilon": eps, "n_agents": n, "alpha_d": alpha_d}, **hp))


def _estimate(cfg) -> float:
    """Seconds of one run on one core, the other core busy, with the kernels it runs; a round
    and an evaluation cost in proportion to N."""
    per_round = (_SECONDS_PER_ROUND[(cfg.dataset, cfg.algorithm)] * _MODEL_COST.get(cfg.model, 1.0)
                 * _KERNEL_COST.get((cfg.dataset, cfg.per_sample_strategy), 1.0))
    if cfg.algorithm in _PER_NEIGHBOUR:
        degree = int(np.count_nonzero(make_topology(cfg.topology, cfg.n_agents).W[0])) - 1
        per_round *= (degree + 1) / (_BIPARTITE_DEGREE + 1)
    seconds = cfg.rounds * per_round + cfg.rounds // cfg.eval_every * _SECONDS_PER_EVAL[cfg.dataset][cfg.eval_strategy]
    return seconds * cfg.n_agents / N10


def study() -> Study:
    """The DPDL study's runs (see the module docstring)."""
    runs: list[StudyRun] = []

    def add(key, purpose, priority, cfg):
        # Every run is declared with the default (fastest) kernels; one stored with another
        # kernel or the vmap evaluation counts as its twin.
        # The setting is the key's middle without the noise mode, graph and eps (tags of their own).
        setting, mode = key.split("/")[1:-2], "equal_eps" if cfg.sigma_rule == "rdp" else "paper_noise"
        setting = [p for p in setting if p not in ("paper_noise", "equal_eps", *GRAPHS) and not p.startswith("eps")]
        tags = {"dataset": cfg.dataset, "setting": "/".join(setting), "mode": mode, "algorithm": cfg.algorithm,
                "seed": cfg.seed, "topology": cfg.topology, "epsilon": cfg.epsilon, "n_agents": cfg.n_agents,
                "alpha_d": cfg.alpha_d, "lr": cfg.lr, "clip": cfg.clip}
        runs.append(StudyRun(key, purpose, priority, cfg, _estimate(cfg), tags, estimator=_estimate))

    # 0: the decisive pair at the code's eta and C, then the rest of that table row.
    for alg in ALGORITHMS:
        prio = 0 if alg in ("dpdl",) + PAIR_BASELINES["mnist"] else 1
        add(f"mnist/code_hp/paper_noise/{alg}/seed0", "Table I at the authors' code's eta, C: is DPDL best?", prio,
            preset("mnist", algorithm=alg, sigma_rule="authors_code", **MNIST, **CODE_HP))
    # 2-3: CIFAR-10 at the authors' code's configuration; the pair that decides "DPDL is best" first.
    for rule, mode in NOISE.items():
        for alg in ALGORITHMS:
            prio = 2 if (mode, alg) in (("paper_noise", "dpdl"), ("paper_noise", "dp_cga")) else 3
            add(f"cifar10/authors_config/{mode}/{alg}/seed0", "Table II at the authors' code's configuration: "
                "is DPDL best?", prio, preset("cifar10", algorithm=alg, sigma_rule=rule, **AUTHORS_CIFAR, **CODE_HP))
    add("cifar10/authors_variant/authors_config/dpdl/seed0", "DPDL as the authors' code runs it on CIFAR-10 "
        "(their micro-batch mechanism): does it reach the paper's 64.0?", 2,
        preset("cifar10", variant="authors", **{k: v for k, v in AUTHORS_CIFAR.items() if k != "batch_size"}))
    for seed in (1, 2):
        for alg in ("dpdl", PAIR_BASELINES["cifar10"][0]):
            add(f"cifar10/authors_config/paper_noise/{alg}/seed{seed}", "seed spread of the decisive pair "
                "(CIFAR-10, the authors' configuration)", 3,
                preset("cifar10", algorithm=alg, sigma_rule="authors_code", seed=seed, **AUTHORS_CIFAR, **CODE_HP))
    # 1: DPDL as the authors' code runs it (every default of the code), shared and per-agent x_0.
    authors = {k: v for k, v in MNIST.items() if k != "batch_size"}
    for init in ("shared", "per_agent"):
        add(f"mnist/authors_variant/code_hp/{init}_init/dpdl/seed0",
            f"DPDL as the authors' code runs it (eta 0.1, C 1), {init.replace('_', '-')} initial model", 1,
            preset("mnist", variant="authors", init=init, **authors))
    for seed in (1, 2):
        for alg in ("dpdl",) + PAIR_BASELINES["mnist"]:
            add(f"mnist/code_hp/paper_noise/{alg}/seed{seed}", "seed spread of the decisive pair (code eta, C)", 3,
                preset("mnist", algorithm=alg, sigma_rule="authors_code", seed=seed, **MNIST, **CODE_HP))
    # 4: the paper's stated hyper-parameters, both noise modes.
    for rule, mode in NOISE.items():
        for alg in ALGORITHMS:
            add(f"mnist/paper_hp/{mode}/{alg}/seed0", f"Table I at the paper's eta, C ({mode.replace('_', ' ')})", 4,
                preset("mnist", algorithm=alg, sigma_rule=rule, **MNIST))
    # 4: the authors' code as released, as far as it is an option here: per-agent x_0 and each
    # agent's own random Sinkhorn W (its --avg 0), seeded.
    add("mnist/authors_variant/code_hp/per_agent_init_random_w/dpdl/seed0",
        "DPDL as the authors' released code runs it, their random per-agent W included", 4,
        preset("mnist", variant="authors", init="per_agent", mixing="random_sinkhorn", **authors))
    # 4: the authors' variant as first designed (the paper's eta and C, the code's other defaults).
    add("mnist/authors_variant/paper_hp/dpdl/seed0", "DPDL as the authors' code runs it, at the paper's eta, C", 4,
        preset("mnist", variant="authors", lr=0.005, clip=2.0, **authors))
    # 5: CIFAR-10 Table II cell (beside PDSL's baselines).
    for alg in CIFAR_FIRST:
        add(f"cifar10/paper_hp/paper_noise/{alg}/seed0", "Table II at the paper's eta, C: is DPDL best?", 5,
            preset("cifar10", algorithm=alg, sigma_rule="authors_code", **CIFAR))
    # 8: the paper's runner-up of Table II's cell, after the MNIST decisive cells (ahead of the seed spread).
    runner_up = PAIR_BASELINES["cifar10"][1]
    add(f"cifar10/paper_hp/paper_noise/{runner_up}/seed0", "Table II: the paper's runner-up (DP-NETFLEET)", 8,
        preset("cifar10", algorithm=runner_up, sigma_rule="authors_code", **CIFAR))
    # 7-8: seed spread at the paper's settings, both noise modes (each is a setting of its own).
    for seed in (1, 2):
        for alg in ("dpdl",) + PAIR_BASELINES["mnist"]:
            add(f"mnist/paper_hp/paper_noise/{alg}/seed{seed}", "seed spread of the decisive pair (paper eta, C)", 7,
                preset("mnist", algorithm=alg, sigma_rule="authors_code", seed=seed, **MNIST))
        for alg in ("dpdl", PAIR_BASELINES["cifar10"][0]):
            add(f"cifar10/paper_hp/paper_noise/{alg}/seed{seed}", "seed spread of the decisive pair (CIFAR-10)", 8,
                preset("cifar10", algorithm=alg, sigma_rule="authors_code", seed=seed, **CIFAR))
    for seed in (1, 2):
        for alg in ("dpdl",) + PAIR_BASELINES["mnist"]:
            add(f"mnist/paper_hp/equal_eps/{alg}/seed{seed}", "seed spread of the decisive pair (paper eta, C, "
                "equal eps)", 7, preset("mnist", algorithm=alg, sigma_rule="rdp", seed=seed, **MNIST))
    # 9: the runner-up's seed spread (CIFAR-10), last.
    for seed in (1, 2):
        add(f"cifar10/paper_hp/paper_noise/{runner_up}/seed{seed}", "seed spread of the runner-up (CIFAR-10)", 9,
            preset("cifar10", algorithm=runner_up, sigma_rule="authors_code", seed=seed, **CIFAR))
    # 10-13: the tables' other claims (see the module docstring), MNIST first, seed 0 first.
    for dataset, prio in (("mnist", 10), ("cifar10", 12)):
        setting, base, hp = TREND_SETTING[dataset]
        cell = base["epsilon"]
        ring_seeded = ("dpdl", *_paper_strongest(dataset, "ring", cell, 2))
        # The ring cell: seeds 0-2 of DPDL and two baselines, seed 0 of its other algorithms.
        points = [("ring", cell, alg, seeds) for alg in CELL_ALGORITHMS[dataset]
                  for seeds in [(0, 1, 2) if alg in ring_seeded else (0,)]]
        # Seeds 0-2 of DPDL at every other point of the trends (:data:`_TRENDS`).
        trend = dict.fromkeys(p for _, rule, graph, n in _TRENDS[dataset] if n == N10
                              for p in _trend_points(dataset, rule, graph))
        points += [(graph, eps, "dpdl", (0, 1, 2)) for graph, eps in trend
                   if (graph, eps) not in (("bipartite", cell), ("ring", cell))]
        for seed_prio, seeds in ((prio, (0,)), (prio + 1, (1, 2))):
            for graph, eps, alg, alg_seeds in points:
                for seed in (x for x in seeds if x in alg_seeds):
                    add(*_trend_run(dataset, graph, eps, alg, seed, _purpose(dataset, graph, eps, cell), seed_prio))
    # 14-15: the loss-curve statements' points (:data:`.claims.CURVE_POINTS`) no run above
    # declares, seeds 0-2 of each (seed 0 first), after every run above.
    from .claims import CURVE_POINTS

    setting = TREND_SETTING["mnist"][0]
    have = {(r.tags["algorithm"], r.tags["topology"], r.tags["epsilon"], r.tags["n_agents"]) for r in runs
            if (r.tags["dataset"], r.tags["setting"], r.tags["mode"]) == (
                "mnist", cell_setting(setting, r.tags["n_agents"]), "paper_noise")}
    curve = [p for p in dict.fromkeys(p for cases in CURVE_POINTS.values() for ps in cases.values() for p in ps)
             if p not in have]
    for seed_prio, seeds in ((14, (0,)), (15, (1, 2))):
        for alg, graph, eps, n in curve:
            for seed in seeds:
                add(*_trend_run("mnist", graph, eps, alg, seed, _CURVE_PURPOSE[graph, n], seed_prio, n))
    # 16-17: Table I's alpha_d = 1.0 half in the decisive cell ("still achieves the best
    # performance" at low heterogeneity), every algorithm, seeds 0-2 (seed 0 first).
    for seed_prio, seeds in ((16, (0,)), (17, (1, 2))):
        for alg in CELL_ALGORITHMS["mnist"]:
            for seed in seeds:
                add(*_trend_run("mnist", *_CELL["mnist"], alg, seed, "Table I (alpha_d = 1.0): is DPDL still best?",
                                seed_prio, alpha_d=1.0))
    # 10, 12: the gradient-inversion cell of each dataset (Tables III-IV, Figures 5-6).
    for dataset, prio in (("mnist", 10), ("cifar10", 12)):
        job = Job(ATTACK_FUNCTION, attack_spec(dataset))
        cfg = job.spec["config"]
        runs.append(StudyRun(f"{dataset}/attack/bipartite_n10", f"Table {'III' if dataset == 'mnist' else 'IV'}, "
                             f"Figure {5 if dataset == 'mnist' else 6}: does DP defeat gradient inversion?", prio, job,
                             estimate_seconds(job.spec),
                             {"dataset": dataset, "setting": "attack", "mode": "paper_noise", "algorithm": "dpdl",
                              "seed": cfg["seed"], "topology": cfg["topology"], "epsilon": cfg["epsilon"],
                              "n_agents": cfg["n_agents"], "alpha_d": cfg["alpha_d"],
                              "lr": cfg["lr"], "clip": cfg["clip"]}))
    return Study(
        paper="dpdl",
        title="DPDL study (Tables I-VI: decisive cells, ring cells, DPDL's trends, the attack; full data)",
        runs=tuple(runs),
        order=0,
        notes="MNIST eps 0.5 / CIFAR-10 eps 4, N = 10 bipartite, alpha_d = 0.25, B = 216; paper scale, full data.",
    )


# -- rendering (from the store alone) --------------------------------------------------------

SETTING_NAMES = {
    "code_hp": "code's eta {lr:g}, C {clip:g}",
    "paper_hp": "paper's eta {lr:g}, C {clip:g}",
    "authors_variant/code_hp/shared_init": "authors variant (code eta, C), shared x0",
    "authors_variant/code_hp/per_agent_init": "authors variant (code eta, C), per-agent x0",
    "authors_variant/code_hp/per_agent_init_random_w": "authors variant (code eta, C), per-agent x0, their random W",
    "authors_variant/paper_hp": "authors variant at the paper's eta, C",
    "authors_config": "authors' configuration (their CNN with dropout, eta {lr:g} decayed, C {clip:g}, B 256)",
    "authors_variant/authors_config": "authors variant at their configuration (micro-batch clipping)",
    "code_hp/n20": "code's eta {lr:g}, C {clip:g}, N = 20",
    "code_hp/alpha1": "code's eta {lr:g}, C {clip:g}, alpha_d = 1.0",
}
_TABLES = {"tab01_mnist_accuracy": "Table I", "tab02_cifar10_accuracy": "Table II",
           "tab05_mnist_ring_accuracy": "Table V", "tab06_cifar10_ring_accuracy": "Table VI"}
# The decisive cell's graph and eps per dataset; a row elsewhere names its own.
_CELL = {"mnist": ("bipartite", MNIST["epsilon"]), "cifar10": ("bipartite", CIFAR["epsilon"])}


def _setting_name(setting: str, lr: float, clip: float) -> str:
    return SETTING_NAMES.get(setting, setting).format(lr=lr, clip=clip)


def _where(dataset: str, graph: str, eps: float) -> str:
    """The cell in words where it is not the decisive one (graph, eps)."""
    default = _CELL[dataset]
    parts = ([graph.replace("_", " ")] if graph != default[0] else []) + ([f"eps {eps:g}"] if eps != default[1] else [])
    return ", ".join(parts)


def _paper_cell(dataset: str, algorithm: str, epsilon: float, topology: str = "bipartite",
                n: int = N10, alpha_d: float = ALPHA) -> tuple[float, float]:
    """The paper's mean and std for one cell (N = ``n``, ``alpha_d``): Table I / II, or V / VI
    on the ring."""
    from ...sim import display_name
    from ...verdicts import load_reference

    ref = load_reference("dpdl", "dpdl_accuracy")
    row = ref[(ref["dataset"] == dataset) & (ref["algorithm"] == display_name(algorithm))
              & (ref["topology"] == topology) & (ref["n_agents"] == n) & (ref["alpha_d"] == alpha_d)
              & (ref["epsilon"] == epsilon)]
    return (float(row["accuracy_mean"].iloc[0]), float(row["accuracy_std"].iloc[0])) if len(row) else (np.nan, np.nan)


def _paper_strongest(dataset: str, topology: str, epsilon: float, n: int) -> tuple[str, ...]:
    """The paper's ``n`` strongest baselines of the dataset's cell algorithms in one cell,
    strongest first."""
    ref = {alg: _paper_cell(dataset, alg, epsilon, topology)[0] for alg in CELL_ALGORITHMS[dataset] if alg != "dpdl"}
    return tuple(sorted(ref, key=ref.get, reverse=True)[:n])


def table(store=None) -> pd.DataFrame:
    """Per (dataset, setting, noise mode, graph, eps, algorithm): seeds stored, final
    average-model test accuracy (mean and std over seeds, %), the agents' mean accuracy, σ,
    the accountant's ε of the mechanism that ran, divergence, and the paper's value of the
    cell."""
    from ...sim import display_name

    finals = study().finals(store)
    if finals.empty:
        return pd.DataFrame(columns=["data", "setting", "noise", "graph", "eps", "algorithm", "seeds", "ours (%)",
                                     "ours std", "agents (%)", "sigma", "accountant eps", "paper (%)", "paper std",
                                     "diverged"])
    rows = []
    keys = ["dataset", "setting", "mode", "topology", "epsilon", "algorithm"]
    for (dataset, setting, mode, graph, eps, alg), g in finals.groupby(keys, sort=False):
        # The authors' configuration is meant to produce the paper's numbers; their variants
        # (micro-batch clipping) are compared with the per-sample runs, not with the tables.
        n, alpha = int(g["n_agents"].iloc[0]), float(g["alpha_d"].iloc[0])
        paper, paper_std = (_paper_cell(dataset, alg, eps, graph, n, alpha) if not setting.startswith("authors_variant")
                            else (np.nan, np.nan))
        acc = 100 * g["avg_test_acc"]
        rows.append({"data": g["dataset_label"].iloc[0], "setting": _setting_name(setting, g["lr"].iloc[0],
                                                                                   g["clip"].iloc[0]),
                     "noise": mode.replace("_", " "), "graph": graph.replace("_", " "), "eps": eps,
                     "algorithm": display_name(alg), "seeds": len(g),
                     "ours (%)": acc.mean(), "ours std": acc.std(ddof=1) if len(g) > 1 else np.nan,
                     "agents (%)": 100 * g["test_acc"].mean(), "sigma": g["sigma_mean"].mean(),
                     "accountant eps": g["epsilon_rdp_max"].max(), "paper (%)": paper, "paper std": paper_std,
                     "diverged": bool(g["diverged"].any()), "_dataset": dataset, "_setting": setting, "_mode": mode,
                     "_topology": graph, "_epsilon": eps, "_n": n, "_alpha": alpha, "_lr": g["lr"].iloc[0],
                     "_clip": g["clip"].iloc[0],
                     "_algorithm": alg, "_values": acc.tolist(), "_seeds": g["seed"].astype(int).tolist()})
    return pd.DataFrame(rows)


# Seeds each side of the pair (each point of a trend) needs before a claim is judged.
MIN_PAIR_SEEDS = 2
_CELL_KEYS = ["_dataset", "_setting", "_mode", "_topology", "_epsilon"]


def _seeded(g: pd.DataFrame, baseline: str) -> bool:
    """Whether the study declares seeds 1 and 2 of DPDL and ``baseline`` in the cell of ``g``
    (one cell's rows of :func:`table`)."""
    cell = tuple(g[k].iloc[0] for k in _CELL_KEYS)
    seeded = {(r.tags["dataset"], r.tags["setting"], r.tags["mode"], r.tags["topology"], r.tags["epsilon"],
               r.tags["algorithm"]) for r in study().runs if r.tags["seed"] in (1, 2)}
    return all((*cell, alg) in seeded for alg in ("dpdl", baseline))


# "DPDL is best" per (dataset, graph): Tables I-II on the decisive (bipartite) cells, V-VI on the ring.
_BEST = {("mnist", "bipartite"): "tab01_mnist_accuracy", ("cifar10", "bipartite"): "tab02_cifar10_accuracy",
         ("mnist", "ring"): "tab05_mnist_ring_accuracy", ("cifar10", "ring"): "tab06_cifar10_ring_accuracy"}


def _best_claim(spec, dataset: str, mode: str, g: pd.DataFrame, cond: str):
    """"DPDL is best" in one cell: DPDL's seeds against the strongest stored baseline's, once
    every algorithm of the cell (:data:`CELL_ALGORITHMS`) is stored; *inconclusive*, naming
    the missing ones, before."""
    from ...verdicts import Comparison, effect_note, margin_note, paired_margin
    from .claims import ACCURACY_TOL

    cell = CELL_ALGORITHMS[dataset]
    graph, eps = g["_topology"].iloc[0], g["_epsilon"].iloc[0]
    a = g.loc["dpdl", "_values"]
    others = g.drop("dpdl")
    top = others["ours (%)"].idxmax()
    b, name = others.loc[top, "_values"], g.loc[top, "algorithm"]
    by_seed = [dict(zip(g.loc[alg, "_seeds"], g.loc[alg, "_values"])) for alg in ("dpdl", top)]
    paired = paired_margin(*by_seed) is not None
    missing = [alg for alg in cell if alg not in g.index]
    compared = [_display(alg) for alg in cell if alg != "dpdl" and alg in g.index]
    not_in_study = [_display(alg) for alg in ALGORITHMS if alg not in cell]
    ref = {alg: _paper_cell(dataset, alg, eps, graph, int(g["_n"].iloc[0]), float(g["_alpha"].iloc[0]))[0]
           for alg in cell if alg != "dpdl"}
    paper_top = max(ref, key=ref.get)
    tol = margin_note(f"{ACCURACY_TOL} pp", [len(a), len(b)], paired)
    scope = f"baselines compared: {', '.join(compared)}" + (
        f" ({', '.join(not_in_study)} not in this study's cell)" if not_in_study else "")
    if missing:
        claim = spec.claim("inconclusive", f"not judged: the cell's row is incomplete, not yet run: "
                           f"{', '.join(_display(m) for m in missing)}", tol, condition=cond)
    elif min(len(a), len(b)) < MIN_PAIR_SEEDS:
        # One seed says nothing of the seed spread, which at this scale is about a point
        # (the code's eta, C: DPDL's std over 3 seeds 0.8 pp): the study runs seeds 1 and 2 of
        # the pair that decides the cell before it judges.
        claim = spec.claim("inconclusive", f"not judged: DPDL {np.mean(a):.1f} vs {name} {np.mean(b):.1f} on "
                           f"{len(a)}/{len(b)} seeds; the seed spread needs {MIN_PAIR_SEEDS} seeds of each ("
                           + ("seeds 1 and 2 of both are in the study" if _seeded(g, top) else
                              f"the study does not seed {name} in this setting: {name} needs seeds 1 and 2 too")
                           + ")", tol, condition=cond)
    else:
        comp = Comparison.paired(f"DPDL {np.mean(a):.1f} vs {name} {np.mean(b):.1f}", *by_seed, ACCURACY_TOL)
        claim = spec.judge([comp], tol, condition=cond, effect=False)  # "ours" shows the effect
    acc_eps = (g.loc["dpdl", "accountant eps"], others.loc[top, "accountant eps"])
    # Paper noise is the authors' sigma rule, not a calibration: whether the two sides end at
    # the same privacy is whatever the accountant says of the mechanisms that ran.
    if mode == "equal_eps":
        privacy = "equal eps"
    elif f"{acc_eps[0]:.2g}" == f"{acc_eps[1]:.2g}":
        privacy = f"paper noise: accountant eps {acc_eps[0]:.2g} for both DPDL and {name}"
    else:
        privacy = f"paper noise, not equal privacy: accountant eps DPDL {acc_eps[0]:.2g}, {name} {acc_eps[1]:.2g}"
    effect = effect_note(*by_seed, g.loc["dpdl", "paper (%)"] - ref[paper_top])
    return dataclasses.replace(claim, evidence={
        "paper": f"DPDL {g.loc['dpdl', 'paper (%)']:.1f} vs {_display(paper_top)} {ref[paper_top]:.1f} "
                 f"(best of {', '.join(_display(x) for x in ref)})",
        "ours": f"DPDL {np.mean(a):.1f} vs {name} {np.mean(b):.1f} ({len(a)}/{len(b)} seeds; {effect})",
        "why": f"{claim.evidence}; {scope}; {privacy}"})


def _trend_points(dataset: str, rule: str, graph: str) -> list[tuple[str, float]]:
    """The (graph, eps) points of one trend claim in the study's cell."""
    cell = _CELL[dataset][1]
    if rule == "grows_with_epsilon":
        return [(graph, eps) for eps in SETTINGS[dataset]["epsilons"]]
    return [("bipartite", cell), ("fully_connected", cell)]


# DPDL's trends (the tables' other claims) per dataset: (table key, rule, graph of the eps steps,
# N). The study declares the N = 10 points here; the N = 20 graphs are the loss-curve points.
_TRENDS = {"mnist": [("tab01_mnist_accuracy", "grows_with_epsilon", "bipartite", N10),
                     ("tab01_mnist_accuracy", "denser_is_better", "bipartite", N10),
                     ("tab01_mnist_accuracy", "denser_is_better", "bipartite", 20)],
           "cifar10": [("tab02_cifar10_accuracy", "grows_with_epsilon", "bipartite", N10),
                       ("tab02_cifar10_accuracy", "denser_is_better", "bipartite", N10),
                       ("tab06_cifar10_ring_accuracy", "grows_with_epsilon", "ring", N10)]}


def _trend_claims(tab: pd.DataFrame, cal: dict | None = None) -> list:
    """DPDL's growth with eps and with a denser graph, in the setting the study runs them
    (:data:`TREND_SETTING`), by the paper's own rules (:data:`.claims.RULES`) on DPDL's seeds;
    *inconclusive*, naming what is missing, until every point has :data:`MIN_PAIR_SEEDS`
    seeds. The paper's numbers at the same points are beside ours."""
    from ...verdicts import margin_note, worst_calibration
    from .claims import ACCURACY_TOL, RULES, TABLE_SPECS

    out = []
    cal = cal if cal is not None else cell_calibration(tab) if not tab.empty else {}
    dpdl = tab[tab["_algorithm"] == "dpdl"] if not tab.empty else tab
    for dataset, trends in _TRENDS.items():
        for key, rule, graph, n in trends:
            setting = cell_setting(TREND_SETTING[dataset][0], n)
            rows = dpdl[(dpdl["_dataset"] == dataset) & (dpdl["_setting"] == setting)
                        & (dpdl["_mode"] == "paper_noise")]
            if rows.empty:
                continue
            by_point = {(r["_topology"], r["_epsilon"]): r["_values"] for r in rows.to_dict("records")}
            seeds_at = {(r["_topology"], r["_epsilon"]): dict(zip(r["_seeds"], r["_values"]))
                        for r in rows.to_dict("records")}
            name = _setting_name(setting, rows["_lr"].iloc[0], rows["_clip"].iloc[0])
            spec = next(x for x in TABLE_SPECS[key] if x.id.endswith(rule))
            points = _trend_points(dataset, rule, graph)
            label = " / ".join(f"{p[0].replace('_', ' ')}" if rule == "denser_is_better" else f"eps {p[1]:g}"
                               for p in points)
            paper = [_paper_cell(dataset, "dpdl", eps, g, n)[0] for g, eps in points]
            cond = f"{dataset}, {name}, paper noise" + (f", {graph}" if graph != "bipartite" else "")
            short = [p for p in points if len(by_point.get(p, [])) < MIN_PAIR_SEEDS]
            seeds = [len(by_point.get(p, [])) for p in points]
            paired = len({tuple(sorted(seeds_at.get(p, {}))) for p in points}) == 1 and min(seeds) >= 2
            tol = margin_note(f"{ACCURACY_TOL} pp", [max(n, 1) for n in seeds], paired)
            if short:
                claim = spec.claim("inconclusive", "not judged: each point needs "
                                   f"{MIN_PAIR_SEEDS} seeds; short: " + ", ".join(
                                       f"{_where(dataset, *p) or 'the decisive cell'} ({seeds[points.index(p)]})"
                                       for p in short), tol, condition=cond)
            else:
                frame = pd.DataFrame([{"noise": "paper_noise", "alpha_d": ALPHA, "topology": g, "n_agents": n,
                                       "epsilon": eps, "algorithm": "dpdl",
                                       "ours_mean": float(np.mean(by_point[g, eps])),
                                       "ours_std": float(np.std(by_point[g, eps], ddof=1)),
                                       "ours_seeds": seeds_at[g, eps], "runs": len(by_point[g, eps]),
                                       "paper_mean": _paper_cell(dataset, "dpdl", eps, g, n)[0]}
                                      for g, eps in points])
                claim = spec.judge(RULES[rule](spec.select(frame)), tol, condition=cond)
            out.append(dataclasses.replace(claim, evidence={
                "paper": f"DPDL {' / '.join(f'{v:.1f}' for v in paper)} ({label})",
                "ours": f"DPDL {' / '.join(f'{np.mean(by_point[p]):.1f}' if p in by_point else '-' for p in points)}"
                        f" ({'/'.join(str(n) for n in seeds)} seeds)",
                "why": claim.evidence}).calibrated(*worst_calibration(
                    [cal.get((dataset, setting, g, eps),
                             ("no paper number", f"no DPDL run at {_where(dataset, g, eps)}"))
                     for g, eps in points] + ([_testable(rows, points)] if rule == "grows_with_epsilon" else []))))
    return out


def _testable(rows: pd.DataFrame, points) -> tuple[str, str]:
    """Whether DPDL's ``rows`` (one per (graph, eps) of :func:`table`) can test a trend in eps
    at ``points``: not where every point's accountant eps exceeds
    :data:`~dpdl_core.verdicts.claims.NOT_TESTABLE_EPSILON` (the noise then buys no privacy at any of
    them, and a trend in it says nothing of the privacy-accuracy trade-off)."""
    from ...verdicts import NOT_TESTABLE_EPSILON

    eps = {(r["_topology"], r["_epsilon"]): r["accountant eps"] for r in rows.to_dict("records")}
    got = [eps[p] for p in points if p in eps]
    if len(got) == len(points) and min(got) > NOT_TESTABLE_EPSILON:
        return ("not testable here", f"accountant eps {min(got):,.0f}–{max(got):,.0f} (nominal {points[0][1]:g}–"
                f"{points[-1][1]:g}; every point above {NOT_TESTABLE_EPSILON:g})")
    return "", ""


def claims(tab: pd.DataFrame, store=None) -> list:
    """"DPDL is best" (Tables I / II on the decisive cells, V / VI on the ring) in every cell
    the study has run, DPDL's seeds against the best baseline's (margin: the paper's print
    precision plus t SE over seeds), *inconclusive* until every algorithm of the cell is
    stored; DPDL's trends in eps and graph density (:func:`_trend_claims`); as a check
    beside the claims, whether DPDL's accuracy is the paper's, under paper noise only (the
    paper's number was produced under its own noise, not at equal ε); and, given the
    ``store``, the attack claims of every stored attack cell (:func:`_attack_claims`). Each
    claim's ``evidence`` is a dict with ``paper`` and ``ours`` (numbers as text) and ``why``."""
    from ...verdicts import ClaimSpec, calibration, interval_note, mean_interval
    from .claims import TABLE_SPECS

    out = [] if store is None else _attack_claims(store) + _round_claims(store)
    if tab.empty:
        return out
    cal = cell_calibration(tab)
    if store is not None:
        out += _loss_claims(store, cal) + _curve_claims(store, cal)
    for (dataset, setting, mode, graph, eps), g in tab.groupby(_CELL_KEYS, sort=False):
        g = g.set_index("_algorithm")
        if "dpdl" not in g.index:
            continue
        a = g.loc["dpdl", "_values"]
        where = _where(dataset, graph, eps)
        cond = (f"{dataset}, {_setting_name(setting, g['_lr'].iloc[0], g['_clip'].iloc[0])}, {mode.replace('_', ' ')}"
                + (f", {where}" if where else ""))
        paper, paper_std = g.loc["dpdl", "paper (%)"], g.loc["dpdl", "paper std"]
        best = _BEST.get((dataset, graph)) if eps == _CELL[dataset][1] else None
        # An equal-eps cell is calibrated by the paper-noise cell of its setting: the operating
        # point (model, eta, C) is what the paper's number calibrates; the noise is then ours.
        cell_cal = cal.get((dataset, setting, graph, eps), ("no paper number", "no paper-noise run of DPDL here"))
        variant = setting.startswith("authors_variant")
        if len(g) > 1 and not variant and best:
            out.append(_best_claim(TABLE_SPECS[best][0], dataset, mode, g, cond).calibrated(*cell_cal))
        if variant:  # the authors' released mechanism against the number it was meant to give
            paper, paper_std = _paper_cell(dataset, "dpdl", eps, graph)
        if np.isfinite(paper) and mode == "paper_noise":
            key = _BEST[(dataset, "ring" if graph == "ring" else "bipartite")]
            suffix, words, scope = _VARIANT_CHECK if variant else _DPDL_CHECK
            spec = ClaimSpec("dpdl", f"{_TABLES[key]}.{suffix}", words, "", TABLE_SPECS[key][0].where, scope,
                             f"our DPDL mean within the paper's mean +- {CALIBRATION_RULE}", kind="check")
            spread = np.std(a, ddof=1) if len(a) > 1 else 0.0
            margin = _calibration_margin(paper_std, a)
            dist = np.mean(a) - paper
            if variant:
                cell_cal = calibration("DPDL (the authors' mechanism)", float(np.mean(a)), paper, margin)
            accountant = f"; accountant ε {g.loc['dpdl', 'accountant eps']:.2g} at nominal {eps:g}" if variant else ""
            out.append(spec.claim("holds" if abs(dist) <= margin else "fails", {
                "paper": f"{paper:.1f} +- {paper_std:.1f}",
                "ours": f"{np.mean(a):.1f} ({len(a)} seed{'s' * (len(a) > 1)})",
                "why": f"ours - paper = {dist:+.1f} pp, margin {margin:.1f} pp; "
                       + interval_note(float(np.mean(a)), mean_interval(a), paper, "%", level=True) + accountant},
                f"2 x (paper std {paper_std:.1f} + our seed std {spread:.1f})", condition=cond).calibrated(*cell_cal))
    return out + _trend_claims(tab, cal)


# The checks beside the claims (id suffix, words, scope): DPDL's accuracy against the paper's,
# and the authors' released mechanism against the number it was meant to give.
_DPDL_CHECK = ("dpdl_value", "DPDL's accuracy is the paper's",
               "the study's cell, under paper noise (the noise the paper's number was produced under)")
_VARIANT_CHECK = ("authors_variant_value", "DPDL as the authors' code runs it gives the paper's accuracy",
                  "the authors' released mechanism (micro-batch clipping), whatever ε it buys")

# The calibration rule: the paper's DPDL number is reproduced when our mean is within it.
CALIBRATION_RULE = "2 x (its std over 20 runs + our seed std)"


def _calibration_margin(paper_std: float, values) -> float:
    """The margin of :data:`CALIBRATION_RULE` for our per-seed ``values``."""
    return 2 * (paper_std + (np.std(values, ddof=1) if len(values) > 1 else 0.0))


def cell_calibration(tab: pd.DataFrame) -> dict:
    """(dataset, setting, graph, eps) -> (calibration state, note) of every paper-noise cell
    where DPDL ran: whether our DPDL reproduces the paper's number there
    (:func:`~dpdl_core.verdicts.claims.calibration`, margin :data:`CALIBRATION_RULE`)."""
    from ...verdicts import calibration

    out = {}
    rows = tab[(tab["_algorithm"] == "dpdl") & (tab["_mode"] == "paper_noise")]
    for r in rows.to_dict("records"):
        out[(r["_dataset"], r["_setting"], r["_topology"], r["_epsilon"])] = calibration(
            "DPDL", float(np.mean(r["_values"])), r["paper (%)"], _calibration_margin(r["paper std"], r["_values"]))
    return out


def _display(algorithm: str) -> str:
    from ...sim import display_name

    return display_name(algorithm)


def _attack_claims(store, s: Study | None = None) -> list:
    """The attack claims (:func:`.claims.attack_claims`, per channel) of every stored attack
    cell of ``s`` (default: the study): DP against no defence at the last attacked round,
    our means and the paper's beside."""
    from .attack_study import attack_frame
    from .claims import attack_claims

    out = []
    for r in (s or study()).runs:
        h = r.found(store) if r.tags["setting"] == "attack" else None
        if h is None:
            continue
        header, hist = store.load_run(h)
        frame = attack_frame(hist, r.work.spec)
        spec = r.work.spec
        where = (f"{spec['config']['dataset']}, {spec['config']['topology'].replace('_', ' ')} N = "
                 f"{spec['config']['n_agents']}, round {max(spec['attack']['rounds'])}, "
                 f"{spec['attack']['n_victims']} victims x {spec['attack']['inversion']['restarts']} restarts x "
                 f"{spec['attack']['inversion']['iterations']:,} iterations")
        for c in attack_claims(frame):
            rows = frame[frame["scenario"].str.endswith(f"-{c.condition}")].set_index(["scenario", "metric"])
            nd, dp = f"ND-{c.condition}", f"DPDL-{c.condition}"
            metrics = ["MSE", "PSNR", "SSIM_x100"] + (["success_%"] if c.id == "attack.success" else [])

            def side(col, rows=rows, nd=nd, dp=dp, metrics=metrics):
                return "; ".join(f"{m} ND {rows.loc[(nd, m), col]:.3g} vs DP {rows.loc[(dp, m), col]:.3g}"
                                 for m in metrics if np.isfinite(rows.loc[(nd, m), col]))
            eps = header["meta"].get("epsilon_rdp")
            privacy = f"; DP run: accountant eps {eps:.3g} (nominal {spec['config']['epsilon']:g})" if eps else ""
            out.append(dataclasses.replace(c, condition=f"{where}, {c.condition} channel", evidence={
                "paper": side("paper") or "no numbers (Figures 5-6 show images)", "ours": side("ours"),
                "why": c.evidence + privacy}).calibrated(*_attack_calibration(rows, nd, dp)))
    return out


def _round_claims(store, s: Study | None = None) -> list:
    """The attack over its rounds, per stored attack cell and channel: ``attack.later_rounds``
    (the undefended reconstructions at the last attacked round against the first) and
    ``attack.success_every_round`` (attack.success's rule at every attacked round)."""
    from ...verdicts import Comparison, combine, margin_from_stats
    from .attack_study import attack_frame
    from .claims import _ATTACK_TOL_TEXT, _WORSE, ATTACK_TOL, ROUND_SPECS, attack_claims

    out = []
    for r in (s or study()).runs:
        h = r.found(store) if r.tags["setting"] == "attack" else None
        if h is None:
            continue
        _, hist = store.load_run(h)
        spec = r.work.spec
        rounds = sorted(int(x) for x in hist["round"].unique())
        frames = {t: attack_frame(hist[hist["round"] == t], spec) for t in rounds}
        where = (f"{spec['config']['dataset']}, {spec['config']['topology'].replace('_', ' ')} N = "
                 f"{spec['config']['n_agents']}, rounds {', '.join(map(str, rounds))}, "
                 f"{spec['attack']['n_victims']} victims")
        first, last = (frames[t] for t in (rounds[0], rounds[-1]))
        for channel in sorted({sc.split("-", 1)[1] for sc in last["scenario"]}):
            nd, dp = f"ND-{channel}", f"DPDL-{channel}"
            a, b = (f[f["scenario"] == nd].set_index("metric") for f in (last, first))
            def margin(m, tol, a=a, b=b):
                return margin_from_stats(a.loc[m, "ours_std"], a.loc[m, "n"], b.loc[m, "ours_std"], b.loc[m, "n"], tol)
            comps = [Comparison(f"{m} round {rounds[-1]} {a.loc[m, 'ours']:.3g} vs round {rounds[0]} "
                                f"{b.loc[m, 'ours']:.3g}", -_WORSE[m] * (a.loc[m, "ours"] - b.loc[m, "ours"]),
                                margin(m, ATTACK_TOL[m]), strict=True, interval=margin(m, 0.0), unit=f" {m}")
                     for m in ATTACK_TOL if m in a.index and m in b.index]
            cond = f"{where}, {channel} channel"
            cal = _attack_calibration(last.set_index(["scenario", "metric"]), nd, dp)
            later = ROUND_SPECS["attack.later_rounds"].judge(comps, f"{_ATTACK_TOL_TEXT} + t SE over the attacked "
                                                             "images", condition=cond)
            out.append(dataclasses.replace(later, evidence={
                "paper": "\"later rounds reveal more detailed and clearer information\" (Figures 5-6 show images)",
                "ours": "; ".join(c.label for c in comps), "why": later.evidence}).calibrated(*cal))
            per_round = {t: next(c for c in attack_claims(frames[t]) if c.id == "attack.success"
                                 and c.condition == channel) for t in rounds}
            every = ROUND_SPECS["attack.success_every_round"].claim(
                combine(c.verdict for c in per_round.values()),
                "; ".join(f"round {t}: {c.verdict} ({c.evidence})" for t, c in per_round.items()),
                next(iter(per_round.values())).tolerance, condition=cond)
            out.append(dataclasses.replace(every, evidence={
                "paper": "\"the privacy protection remains robust\" as the rounds increase (Figures 5-6)",
                "ours": "; ".join(f"round {t}: {c.verdict}" for t, c in per_round.items()),
                "why": every.evidence}).calibrated(*cal))
    return out


def _loss_claims(store, cal: dict, s: Study | None = None) -> list:
    """Figure 1's loss statements on DPDL (MNIST, bipartite, N = 10, the code's eta and C,
    paper noise): the mean training loss over the last tenth of the rounds, per seed, at eps
    0.25, 0.5 and 1, once each point has :data:`MIN_PAIR_SEEDS` seeds."""
    from ...verdicts import LOSS_REL_TOL, Comparison, difference_margin, paired_margin, seed_mean, worst_calibration
    from .claims import LOSS_SPECS

    end: dict[float, dict[int, float]] = {}
    for r in (s or study()).runs:
        t = r.tags
        if (t["dataset"], t["setting"], t["mode"], t["algorithm"], t["topology"]) != (
                "mnist", "code_hp", "paper_noise", "dpdl", "bipartite") or (h := r.found(store)) is None:
            continue
        _, hist = store.load_run(h)
        loss = hist[hist["metric"] == "train_loss_mean"].groupby("round")["value"].mean().sort_index()
        end.setdefault(float(t["epsilon"]), {})[int(t["seed"])] = float(loss.iloc[-max(1, len(loss) // 10):].mean())
    if not all(len(end.get(e, {})) >= MIN_PAIR_SEEDS for e in (0.25, 0.5, 1.0)):
        return []
    mean = {e: seed_mean(v) for e, v in end.items()}

    def spread(a, b) -> float:
        m = paired_margin(a, b)
        return m if m is not None else difference_margin(list(a.values()), list(b.values()))

    cond = f"mnist, {_setting_name('code_hp', **CODE_HP)}, paper noise, seeds {len(end[0.5])}"
    ours = "last-tenth mean loss " + " / ".join(f"{mean[e]:.3f}" for e in (0.25, 0.5, 1.0)) + " (eps 0.25 / 0.5 / 1)"
    calibration = worst_calibration([cal.get(("mnist", "code_hp", "bipartite", e), ("", "")) for e in mean])
    tol = f"loss tolerance {LOSS_REL_TOL:.0%} of the larger + t SE of the per-seed differences"
    lower = Comparison(f"eps 0.25 {mean[0.25]:.3f} vs eps 0.5 {mean[0.5]:.3f}", mean[0.25] - mean[0.5],
                       spread(end[0.25], end[0.5]) + LOSS_REL_TOL * max(mean[0.25], mean[0.5]),
                       interval=spread(end[0.25], end[0.5]))
    gain = mean[0.5] - mean[1.0]
    # "little to no" gain: the tolerance less the gain (the interval is the gain's).
    little = Comparison(f"eps 0.5 -> 1 lowers the loss by {gain:.3f} ({gain / mean[0.5]:+.1%}); the tolerance "
                        f"{LOSS_REL_TOL * mean[0.5]:.3g} less the gain", LOSS_REL_TOL * mean[0.5] - gain,
                        spread(end[0.5], end[1.0]), interval=spread(end[0.5], end[1.0]))
    out = []
    for spec_id, comp, paper in (("fig01.loss_eps_025_05", lower, "noticeably lower at eps 0.5 (Figure 1, curves)"),
                                 ("fig01.loss_eps_05_1", little, "little to no improvement at eps 1 (Figure 1)")):
        c = LOSS_SPECS[spec_id].judge([comp], tol, condition=cond)
        out.append(dataclasses.replace(c, evidence={"paper": paper, "ours": ours, "why": c.evidence}
                                       ).calibrated(*calibration))
    return out


def _curve_claims(store, cal: dict, s: Study | None = None) -> list:
    """The text's statements on the loss curves (:data:`.claims.CURVE_SPECS`) in the study's
    MNIST setting (the code's eta and C, paper noise, N = 10 unless a point names another N),
    per claim and eps of
    :data:`.claims.CURVE_POINTS`, on every declared seed of each point; *inconclusive*, naming
    the runs not yet stored, until all of them are. Calibrated as DPDL's cells are."""
    from ...sim import display_name
    from ...verdicts import worst_calibration
    from .claims import CURVE_PAPER, CURVE_POINTS, CURVE_SPECS, CURVE_TOLERANCE, curve_claim, window_means

    setting = TREND_SETTING["mnist"][0]
    declared: dict[tuple[str, str, float, int], list[StudyRun]] = {}
    for r in (s or study()).runs:
        t = r.tags
        if (t["dataset"], t["setting"], t["mode"]) == ("mnist", cell_setting(setting, t["n_agents"]), "paper_noise"):
            declared.setdefault((t["algorithm"], t["topology"], float(t["epsilon"]), t["n_agents"]), []).append(r)
    means: dict = {}

    def load(point) -> bool:
        """Whether every declared run of ``point`` is stored (its window means then in ``means``)."""
        if point not in means:
            found = {r.tags["seed"]: (r, r.found(store)) for r in declared.get(point, [])}
            if not found or any(h is None for _, h in found.values()):
                return False
            means[point] = {}
            for seed, (r, h) in sorted(found.items()):
                header, hist = store.load_run(h)
                loss = hist[hist["metric"] == "train_loss_mean"].groupby("round")["value"].mean()
                means[point][int(seed)] = window_means(loss, r.work.rounds, bool(header["meta"].get("diverged")))
        return True

    out = []
    for spec_id, cases in CURVE_POINTS.items():
        for eps, points in cases.items():
            graphs = " / ".join(dict.fromkeys(g.replace("_", " ") for _, g, _, _ in points))
            ns = " / ".join(dict.fromkeys(str(n) for *_, n in points))
            cond = f"mnist, {_setting_name(setting, **CODE_HP)}, paper noise, N = {ns}, {graphs}, eps {eps:g}"
            calibration = worst_calibration([cal.get(("mnist", cell_setting(setting, n), g, e), ("", ""))
                                             for a, g, e, n in points if a == "dpdl"])
            missing = [p for p in points if not load(p)]
            if missing:
                waiting = "; ".join(f"{display_name(a)} {g.replace('_', ' ')} eps {e:g}"
                                    + (f" N = {n} " if n != N10 else " ") + (
                    "seeds " + ", ".join(str(r.tags["seed"]) for r in declared[a, g, e, n] if r.found(store) is None)
                    if (a, g, e, n) in declared else "(no run declared)") for a, g, e, n in missing)
                claim = CURVE_SPECS[spec_id].claim("inconclusive", {
                    "paper": CURVE_PAPER[spec_id], "ours": "not run yet", "why": f"not judged: not yet run: {waiting}"},
                    CURVE_TOLERANCE[spec_id], condition=cond)
            else:
                claim = curve_claim(spec_id, eps, means, cond)
            out.append(claim.calibrated(*calibration))
    return out


def _attack_calibration(rows: pd.DataFrame, nd: str, dp: str) -> tuple[str, str]:
    """An attack cell is calibrated when our attack's MSE, undefended and against DPDL, is
    the paper's within the claim's MSE tolerance plus 2 SE over the attacked images. MSE is
    read in the normalised input space, the only one where the paper's values above 1 can
    arise (docs/attacks.md, "Metrics"); the PSNR's peak is one the paper does not state."""
    from ...verdicts import SPREAD_Z, calibration, worst_calibration
    from .claims import ATTACK_TOL

    parts = []
    for name, scenario in (("ND", nd), ("DPDL", dp)):
        r = rows.loc[(scenario, "MSE")]
        se = r["ours_std"] / np.sqrt(r["n"]) if "n" in r and r["n"] > 1 else 0.0
        parts.append(calibration(f"{name} MSE", float(r["ours"]), float(r["paper"]),
                                 ATTACK_TOL["MSE"] + SPREAD_Z * float(se)))
    return worst_calibration(parts)


def answer(store=None) -> pd.DataFrame:
    """Rows of the "Does it replicate?" table for DPDL, from the committed store."""
    from ...verdicts import answer_frame

    store = store or study().store()
    return answer_frame(claims(table(store), store))


def figure(store=None):
    """Training loss and average-model test accuracy against round of every stored run: a pair
    of panels per (dataset, setting, noise mode, graph), four pairs a row. One colour per
    algorithm in every panel, one line style per eps (the cell's solid), each seed its own
    line; one legend for the figure, outside the curves."""
    from matplotlib.lines import Line2D

    from ...sim import display_name
    from ...verdicts import legend_below, loss_accuracy_panels, series_colours

    colour = series_colours(ALGORITHMS)
    styles = ["-", "--", ":", "-."]

    def style(r) -> dict:
        eps_rank = sorted(SETTINGS[r.tags["dataset"]]["epsilons"], key=lambda e: e != _CELL[r.tags["dataset"]][1])
        ls = styles[eps_rank.index(r.tags["epsilon"]) % len(styles)] if r.tags["epsilon"] in eps_rank else "-"
        return {"ls": ls, "color": colour.get(r.tags["algorithm"], "black")}

    s = study()
    store = store or s.store()
    stored = [r for r in s.ordered() if r.tags["setting"] != "attack" and r.found(store)]
    panel_of = {r.key: (r.tags["dataset"], r.tags["setting"], r.tags["mode"], r.tags["topology"]) for r in stored}
    panels = []
    for panel in sorted(set(panel_of.values())):
        runs = [r for r in stored if panel_of[r.key] == panel]
        dataset, setting, mode, graph = panel
        name = _setting_name(setting, runs[0].tags["lr"], runs[0].tags["clip"])
        panels.append((f"{dataset}, {graph.replace('_', ' ')}: {name}, {mode.replace('_', ' ')}",
                       [(store.load_run(r.found(store))[1], style(r)) for r in runs]))
    fig = loss_accuracy_panels(panels)
    shown = [a for a in ALGORITHMS if any(r.tags["algorithm"] == a for r in stored)]
    handles = [Line2D([], [], color=colour[a], label=display_name(a)) for a in shown]
    handles += [Line2D([], [], color="grey", ls=st, label=f"eps {e:g}" + (" (the cell's)" if k == 0 else ""))
                for dataset in ("mnist",) for k, (e, st) in enumerate(zip(
                    sorted(SETTINGS[dataset]["epsilons"], key=lambda e: e != _CELL[dataset][1]), styles))]
    legend_below(fig, handles, ncol=len(handles),
                 title="one line per seed; CIFAR-10's eps 4 (the cell's), 2 and 8 take the same three styles")
    return fig
