"""Controls beside PDSL's claims (beyond the paper; notebook ``ext01_controls``): what limits
PDSL as written?

On one cell of Table I (MNIST, fully connected, the profile's first M and largest ε, seed 0,
the profile's scale) the same PDSL run is repeated with one thing changed at a time:

- **uniform weights** (``floor = 1``: every Shapley share 1/n, so π = 1/(n·ω) keeps eq (20)'s
  scale): what the Shapley weighting adds;
- **σ = 0**: the ceiling, PDSL without noise;
- **equal ε**: σ from the accountant for PDSL's own messages (``rdp``), as DPDL's tables do;
- **a σ sweep** (``sigma_rule: fixed``, multiples of the per-message σ): which σ, if any,
  brings PDSL as written to Table I's accuracy, and the accountant ε that σ buys.

Every run stores the accountant ε of the mechanism that ran, shown beside its accuracy.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ...runs import ResultStore, run_sweep
from ...verdicts import ClaimSpec, Comparison, Output, claims_frame, load_reference, margin_note, table_output
from .claims import ACCURACY_TOL
from .figures import PAPER_M, GridSettings, Run, scale_note
from .presets import preset
from .privacy import per_message_sigma

__all__ = ["SIGMA_MULTIPLES", "SPECS", "control_runs", "controls_notebook"]

# Multiples of the per-message σ in the sweep (1 is PDSL as written's σ).
SIGMA_MULTIPLES = (0.01, 0.1, 0.3)
KEY = "ext01_controls"

SPECS = {s.id: s for s in (
    ClaimSpec("pdsl", "controls.shapley_helps", "the Shapley weighting beats uniform weights",
              "", "beyond the paper (Algorithm 1's eqs 19-20)", "the controls' cell",
              f"PDSL as written's final average-model accuracy at least uniform weights' (floor = 1); within "
              f"{ACCURACY_TOL} pp is inconclusive (one seed)", kind="beyond the paper"),
    ClaimSpec("pdsl", "controls.sigma_reaches_table",
              "some sigma of the sweep, or sigma = 0 (not private), reaches Table I's PDSL accuracy",
              "", "beyond the paper (Table I)", "the controls' cell",
              f"the best accuracy over sigma = 0 and the sweep at least Table I's PDSL value for the cell, within "
              f"{ACCURACY_TOL} pp inconclusive", kind="beyond the paper"),
)}


def control_runs(profile: str) -> list[Run]:
    """The controls' runs at ``profile``: PDSL as written, then each control."""
    s = GridSettings.from_profile(profile, "mnist")
    scale = dict(rounds=s.rounds, batch_size=s.batch_size, eval_every=s.eval_every, train_samples=s.train_samples,
                 eval_samples=s.eval_samples, validation_samples=s.validation_samples, sigma_rule=s.sigma_rule)
    base = preset("mnist", "pdsl", "fully_connected", epsilon=max(s.epsilons), n_agents=s.n_agents[0],
                  seed=s.seeds[0], algo=dict(s.pdsl), **scale)
    sigma = per_message_sigma(base.epsilon, base.delta, 1.0)  # the noise multiplier (std / C)
    runs = [Run("PDSL as written", base),
            Run("uniform weights (floor = 1)", base.replace(algo={**base.algo, "floor": 1.0})),
            Run("sigma = 0", base.replace(epsilon=None)),
            Run("equal eps (rdp)", base.replace(sigma_rule="rdp"))]
    runs += [Run(f"sigma = {m:g} x per-message", base.replace(sigma_rule="fixed", sigma=m * sigma))
             for m in SIGMA_MULTIPLES]
    return runs


def _paper_value(config) -> tuple[float, int]:
    """Table I's PDSL accuracy (%) at the paper's M of the same rank as the cell's M."""
    s_m = sorted(PAPER_M)
    ref = load_reference("pdsl", "pdsl_accuracy")
    m = config.n_agents if config.n_agents in PAPER_M else s_m[0]
    row = ref[(ref["dataset"] == "mnist") & (ref["algorithm"] == "PDSL") & (ref["topology"] == "fully_connected")
              & (ref["n_agents"] == m) & np.isclose(ref["epsilon"], config.epsilon)]
    return (100 * float(row["accuracy"].iloc[0]) if len(row) else float("nan")), m


def controls_table(runs: list[Run], store: ResultStore) -> tuple[pd.DataFrame, str]:
    """Per control: σ (mean), the accountant ε, the final accuracies; and the data label."""
    rows, label = [], ""
    for r in runs:
        header, hist = store.load_run(r.config.hash)
        meta = header["meta"]
        label = meta.get("dataset_label", label)
        last = hist[hist["round"] == hist[hist["metric"] == "avg_test_acc"]["round"].max()]
        rows.append({"control": r.label, "sigma": meta.get("sigma_mean"), "accountant eps": meta.get("epsilon_rdp_max"),
                     "avg model (%)": 100 * float(last.loc[last["metric"] == "avg_test_acc", "value"].iloc[0]),
                     "agents (%)": 100 * float(last.loc[last["metric"] == "test_acc", "value"].mean()),
                     "diverged": bool(meta.get("diverged"))})
    return pd.DataFrame(rows), label


def controls_claims(table: pd.DataFrame, paper: float) -> list:
    acc = table.set_index("control")["avg model (%)"]
    out = [SPECS["controls.shapley_helps"].judge(
        [Comparison(f"as written {acc['PDSL as written']:.1f} vs uniform {acc['uniform weights (floor = 1)']:.1f}",
                    acc["PDSL as written"] - acc["uniform weights (floor = 1)"], ACCURACY_TOL,
                    interval=0.0, unit=" pp")],
        margin_note(f"{ACCURACY_TOL} pp", [1]))]
    swept = acc[[c for c in acc.index if c.startswith("sigma")]]
    best = swept.idxmax()
    out.append(SPECS["controls.sigma_reaches_table"].judge(
        [Comparison(f"best {best}: {swept[best]:.1f} vs Table I {paper:.1f}", swept[best] - paper, ACCURACY_TOL,
                    interval=0.0, unit=" pp")],
        margin_note(f"{ACCURACY_TOL} pp", [1])))
    return out


def controls_notebook(profile: str, workers: int | None = None, store: ResultStore | None = None) -> Output:
    """Run the controls (what the store lacks), tabulate them beside Table I's PDSL value,
    judge the two questions, write ``figures/<profile>/pdsl_ext01_controls.md``.

    Returns
    -------
    Output
        ``tables["table"]`` (:func:`controls_table`), the two claims, the Markdown as ``text``.
    """
    store = store or ResultStore()
    runs = control_runs(profile)
    run_sweep([r.config for r in runs], store=store, workers=workers)
    table, label = controls_table(runs, store)
    base = runs[0].config
    paper, paper_m = _paper_value(base)
    claims = claims_frame(controls_claims(table, paper))
    note = (f"{label}; profile {profile}; {scale_note('mnist', profile)}. Beyond the paper: one cell (fully "
            f"connected, M = {base.n_agents}, epsilon = {base.epsilon:g}, seed {base.seed}), PDSL with one thing "
            f"changed at a time; Table I's PDSL at M = {paper_m}: {paper:.1f}%. Accountant epsilon: of the mechanism "
            f"that ran (sigma = 0: not private).")
    cols = list(table.columns)
    rows = [[f"{v:.4g}" if isinstance(v, float) else v for v in r] for r in table.itertuples(index=False)]
    return table_output(f"pdsl_{KEY}", "PDSL controls: what limits PDSL as written?", note, cols, rows, claims,
                        {"table": table})
