"""LEASGD's declared best-faith search: both methods of Table 1 get the same (C, T_max) grid,
the paper's point among it, every point keeps ε = 5 (σ calibrated over T_max), and the choice
reads validation accuracy."""
import pandas as pd

from dpdl_core.papers.leasgd.search import CLIPS, T_MAXES, choose, search_runs


def test_both_methods_get_the_same_grid_with_the_papers_point_at_the_papers_privacy():
    runs = search_runs()
    grid = {}
    for r in runs:
        grid.setdefault(r.algorithm, set()).add((r.clip, r.t_max))
    assert set(grid) == {"leasgd", "dp_dpsgd"}
    assert grid["leasgd"] == grid["dp_dpsgd"] == {(c, t) for c in CLIPS for t in T_MAXES}
    assert (1.0, 1500) in grid["leasgd"]  # the paper's stated C and T_max
    assert len({r.config.hash for r in runs}) == len({r.key for r in runs}) == len(runs)
    for r in runs:
        c = r.config
        assert (c.clip, c.rounds, c.epsilon, c.sigma_rule) == (r.clip, r.t_max, 5.0, "leasgd_common")
        assert (c.dataset, c.n_agents, c.seed) == ("mnist", 5, 0) and c.validation_samples


def test_the_choice_reads_validation_accuracy():
    results = pd.DataFrame([
        {"algorithm": "leasgd", "clip": 1.0, "t_max": 1500, "val_acc": 0.88, "test_acc": 0.99},
        {"algorithm": "leasgd", "clip": 10.0, "t_max": 6000, "val_acc": 0.95, "test_acc": 0.90},
        {"algorithm": "dp_dpsgd", "clip": 3.0, "t_max": 3000, "val_acc": 0.93, "test_acc": 0.80},
        {"algorithm": "dp_dpsgd", "clip": 1.0, "t_max": 1500, "val_acc": 0.90, "test_acc": 0.95},
    ])
    chosen = choose(results).set_index("algorithm")
    assert chosen.loc["leasgd", ["clip", "t_max"]].tolist() == [10.0, 6000]
    assert chosen.loc["dp_dpsgd", ["clip", "t_max"]].tolist() == [3.0, 3000]


def test_the_search_runs_are_never_pooled_into_table_1s_cells():
    """The search's keys start ``tab01/`` too: a search run read as a Table 1 run would move
    the cell's seed mean (m = 5: 0.877 to 0.884 with one search run)."""
    from dpdl_core.papers.leasgd import study as leasgd

    st = leasgd.study()
    store = st.store()
    search = [r for r in st.runs if r.tags["group"] == "tab01_search"]
    assert search and any(r.found(store) for r in search), "no search run is committed: this test checks nothing"
    table1 = {h for r in st.runs if r.tags["group"] == "tab01" for h in r.hashes()}
    stored = leasgd._stored_configs("tab01", store, "paper")
    assert stored and all(c.hash in table1 for c in stored)


def test_the_chosen_points_are_the_rule_applied_to_the_committed_search():
    """CHOSEN stays None while the committed search lacks a point, and is then what choose()
    reads from it: the declared rule, not a pick."""
    from dpdl_core.papers.leasgd import search
    from dpdl_core.papers.leasgd.study import search_table

    results = search_table()
    if len(results) < len(search_runs()):
        assert search.CHOSEN is None and search.chosen_runs() == []
        return
    chosen = choose(results).set_index("algorithm")
    assert search.CHOSEN == {a: (float(r["clip"]), int(r["t_max"])) for a, r in chosen.iterrows()}


def test_the_chosen_points_run_every_seed_and_their_claims_name_the_point(monkeypatch):
    """Once chosen, each method's point runs SEEDS_AT_CHOICE (seed 0 is the search's own run)
    and Table 1's claims at it wait for every seed, then name the point in their setting."""
    from dpdl_core.papers.leasgd import search
    from dpdl_core.papers.leasgd import study as leasgd

    monkeypatch.setattr(search, "CHOSEN", None)
    before = len(leasgd.study().runs)
    monkeypatch.setattr(search, "CHOSEN", {"leasgd": (3.0, 1500), "dp_dpsgd": (1.0, 1500)})
    runs = search.chosen_runs()
    assert [(r.algorithm, r.config.seed) for r in runs] == [(a, s) for a in ("leasgd", "dp_dpsgd") for s in (0, 1, 2)]
    st = leasgd.study()
    keys = {r.key for r in st.runs}
    # LEASGD's seed 0 there is the search's run; D-PSGD's point is the paper's: Table 1's own runs.
    assert "tab01/mnist/m5/search/leasgd/clip3/T1500/seed1" in keys
    assert not any(k.startswith("tab01/mnist/m5/search/dp_dpsgd/clip1/T1500") for k in keys)
    assert len(st.runs) == before + 2
    store = st.store()
    assert leasgd._tab01_best_faith_claims(store, "paper") == []  # LEASGD's seeds 1-2 there are not stored


def test_at_the_papers_point_the_best_faith_claims_read_table_1s_own_runs(monkeypatch):
    """Chosen at the paper's point (C 1, T_max 1,500), the best-faith claims read Table 1's own
    MNIST m = 5 runs: the same numbers as Table 1's claims there, the point named in their
    setting, and no claim over every m (only m = 5 is searched)."""
    from dpdl_core.papers.leasgd import search
    from dpdl_core.papers.leasgd import study as leasgd

    monkeypatch.setattr(search, "CHOSEN", {"leasgd": (1.0, 1500), "dp_dpsgd": (1.0, 1500)})
    store = leasgd.study().store()
    best = {c.id: c for c in leasgd._tab01_best_faith_claims(store, "paper")}
    table1 = {c.id: c for c in leasgd._tab01_claims(store, "paper")}
    assert set(best) == set(table1) - {"tab01.stable_in_m"}
    for claim_id, c in best.items():
        assert c.condition.startswith("best-faith point chosen by validation accuracy (search.py): LEASGD C 1")
        assert c.evidence["ours"] == table1[claim_id].evidence["ours"].split("; ")[0]
        assert c.verdict != "holds"  # one cell of six cannot hold a claim over every cell


def _noise_ablation(monkeypatch, cost: dict, stored: tuple = ("mnist",)) -> dict:
    """The noise claims with made-up accuracies: private LEASGD 91% (+-0.2 over seeds) and each
    noise-free twin ``cost[(dataset, m)]`` pp above it, the twins of the datasets in ``stored``."""
    from dpdl_core.papers.leasgd import study as leasgd

    st = leasgd.study()
    private = [r.work for r in st.runs if r.tags["group"] == "tab01" and r.work.algorithm == "leasgd"]
    twins = [r.work for r in st.runs if r.tags["group"] == leasgd.NOISE_FREE and r.work.dataset in stored]
    jitter = (-0.2, 0.0, 0.2)

    def row(cfg, patience, store):
        free = cost[cfg.dataset, cfg.n_agents] + 0.1 * jitter[cfg.seed] if cfg.epsilon is None else 0.0
        return {"accuracy": (91.0 + jitter[cfg.seed] + free) / 100}

    monkeypatch.setattr(leasgd, "_stored_configs", lambda group, store, profile: private if group == "tab01"
                        else twins if group == leasgd.NOISE_FREE else [])
    monkeypatch.setattr(leasgd, "tab01_run_row", row)
    monkeypatch.setattr(leasgd, "tab01_analysis", lambda configs, s, store: (None, pd.DataFrame({"label": ["x"]}), []))
    monkeypatch.setattr(leasgd, "_tab01_calibration", lambda *a: ("not calibrated", "made up"))
    return {c.id: c for c in leasgd._noise_claims(None, "paper")}


def test_the_noise_ablation_twins_table_1s_leasgd_runs_without_noise():
    from dpdl_core.papers.leasgd import study as leasgd

    st = leasgd.study()
    private = {(r.work.dataset, r.work.n_agents, r.work.seed): r.work for r in st.runs
               if r.tags["group"] == "tab01" and r.work.algorithm == "leasgd"}
    twins = [r for r in st.runs if r.tags["group"] == leasgd.NOISE_FREE]
    assert len(twins) == len(private) == 12
    for r in twins:
        p = private[r.work.dataset, r.work.n_agents, r.work.seed]
        assert r.work.epsilon is None and r.work == p.replace(epsilon=None)
        assert r.key.startswith(f"{leasgd.NOISE_FREE}/") and "/nonprivate/" in r.key


def test_the_noise_claims_come_with_their_twins_and_judge_each_cell_once_stored(monkeypatch):
    flat = {("mnist", 5): -2.0, ("mnist", 15): -2.0, ("cifar10", 5): -2.0, ("cifar10", 15): -2.0}
    assert _noise_ablation(monkeypatch, flat, stored=()) == {}
    # The noise 2 pp ahead in both MNIST cells, its cost flat in m: holds where run, CIFAR-10 still to come.
    mnist = _noise_ablation(monkeypatch, flat)
    assert mnist["tab01.noise_helps"].verdict == "inconclusive"
    why = mnist["tab01.noise_helps"].evidence["why"]
    assert "holds in the cells run; not yet run: cifar10 m=5, cifar10 m=15" in why
    every = _noise_ablation(monkeypatch, flat, stored=("mnist", "cifar10"))
    assert {c.verdict for c in every.values()} == {"holds"}
    assert every["tab01.noise_helps"].calibration == "not calibrated"
    # The noise-free twin ahead: one failing cell fails "every cell" before the rest are run.
    hurts = _noise_ablation(monkeypatch, {**flat, ("mnist", 15): 3.0})
    assert hurts["tab01.noise_helps"].verdict == "fails"
    # Its cost grows from 1 to 4 pp with m: the noise accumulates.
    grows = _noise_ablation(monkeypatch, {**flat, ("mnist", 5): 1.0, ("mnist", 15): 4.0})
    assert grows["tab01.noise_flat_in_m"].verdict == "fails"
