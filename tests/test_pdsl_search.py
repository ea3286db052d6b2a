"""PDSL's declared best-faith search: every method gets the same gamma grid, PDSL each
reading the text leaves open, and the choice reads validation accuracy among runs that
trained."""
import pandas as pd

from dpdl_core.papers.pdsl.search import GAMMAS, READINGS, WEIGHTINGS, choose, search_runs
from dpdl_core.papers.pdsl.study import search_base


def test_every_method_gets_the_same_gamma_grid_and_pdsl_every_reading():
    runs = search_runs(search_base())
    by_label = {}
    for r in runs:
        by_label.setdefault(r.label, set()).add((r.reading, r.weighting, r.gamma))
    assert {label: {g for _, _, g in points} for label, points in by_label.items()} == dict.fromkeys(by_label,
                                                                                                      set(GAMMAS))
    assert len(by_label["PDSL"]) == len(GAMMAS) * len(READINGS) * len(WEIGHTINGS)
    assert len({r.config.hash for r in runs}) == len({r.key for r in runs}) == len(runs)
    assert {r.config.seed for r in runs} == {0} and {r.config.epsilon for r in runs} == {0.3}
    pdsl = [r.config for r in runs if r.label == "PDSL"]
    assert {c.sigma_rule for c in pdsl} == {"per_message", "pdsl_code_base"}
    assert {c.algo["clipping"] for c in pdsl} == {"batch", "per_sample"}


def test_the_choice_reads_validation_accuracy_among_runs_that_trained():
    results = pd.DataFrame([
        {"label": "PDSL", "reading": "sigma_b", "weighting": "omega", "gamma": 0.001, "val_acc": 0.99,
         "diverged": True},
        {"label": "PDSL", "reading": "code_base", "weighting": "average", "gamma": 0.01, "val_acc": 0.9,
         "diverged": False},
        {"label": "PDSL", "reading": "per_sample", "weighting": "omega", "gamma": 0.1, "val_acc": 0.8,
         "diverged": False},
        {"label": "DP-CGA", "reading": "paper", "weighting": "", "gamma": 0.03, "val_acc": 0.85, "diverged": False},
        {"label": "MUFFLIATO", "reading": "paper", "weighting": "", "gamma": 0.03, "val_acc": 0.5, "diverged": True},
    ])
    chosen = choose(results).set_index("label")
    assert chosen.loc["PDSL", ["reading", "weighting", "gamma"]].tolist() == ["code_base", "average", 0.01]
    assert chosen.loc["DP-CGA", "gamma"] == 0.03 and "MUFFLIATO" not in chosen.index


def test_every_search_point_is_a_run_of_the_pdsl_study_last_in_priority():
    from dpdl_core.papers.pdsl.study import SEARCH_PRIORITY, _as_studied, cells, study

    st = study()
    by_hash = {r.hash: r for r in st.runs}
    first = cells()[0]
    points = [by_hash.get(_as_studied(first, p.config).hash) for p in search_runs(search_base())]
    assert None not in points, "a search point the PDSL study does not run"
    new = [r for r in points if r.priority == SEARCH_PRIORITY]
    # the paper's gamma, the gamma cell's and the scan's points are the cells' own runs
    assert len(new) == 28 and len(points) - len(new) == 12
    assert SEARCH_PRIORITY > max(r.priority for r in st.runs if r not in new)
    assert all(r.key.startswith("mnist/fc10/eps0.3/search/") for r in new)
