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
