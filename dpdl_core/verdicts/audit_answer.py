"""The privacy audit in the answer: per mechanism, the nominal ε, the accountant's ε (an
upper bound) and the audited ε (a lower bound at 95% confidence) side by side, the one-run
bound's and beside it the f-DP bound's (tighter, for a Gaussian trade-off curve), as a table
for the README and docs/answer.md and as a figure (:func:`audit_summary`,
:func:`audit_markdown`, :func:`audit_figure`). The audits themselves are
:mod:`dpdl_core.runs.audit_run`'s committed results (``results/audit/``)."""
from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["audit_figure", "audit_markdown", "audit_summary"]

# The σ rule of each audited run, as the table names it. "paper" is the rule a paper's study
# runs as the paper's noise (PDSL: the per-message σ_b standing in for Theorem 1's σ = ∞).
_NOISE = {"authors_code": "paper", "rdp": "equal ε", "per_message": "paper (σ_b)", "leasgd_common": "paper",
          "pdsl_code_base": "code base", "pdsl_theorem1": "Theorem 1"}


def audit_summary(table: pd.DataFrame, kind: str = "gradient") -> pd.DataFrame:
    """One row per audited mechanism and noise (seeds together): the paper whose own mechanism
    it is (None for a variant or a baseline), nominal ε and where it comes from, accountant and
    audited ε (the informed observer's, the strongest; every seed's, and the smallest, which
    is the bound that holds for each of them), the same by the f-DP bound (``audited_fdp``,
    ``audited_fdp_min``, NaN where the table has none), and whether the stated ε is violated
    (the smallest one-run audited ε above the nominal one: the verdict needs no assumption on
    the shape of the mechanism's trade-off curve).

    ``kind`` picks the canaries: ``gradient`` (white-box, the default) or ``input`` (the
    table's input-canary rows, whose ``kind`` starts with "input"): these have one observer,
    of the victim's models, whose ε stands in both the audited and the neighbour's columns."""
    if "kind" in table:
        table = table[table["kind"].astype(str).str.startswith(kind)]
    if kind != "gradient":  # the canaries, score and models observed name the row
        detail = table["kind"].astype(str).str.removeprefix("input (").str.removesuffix(")")
        table = table.assign(mechanism=table["mechanism"] + ", " + detail,
                             epsilon_audit_informed=table["epsilon_audit"],
                             epsilon_audit_fdp_informed=table["epsilon_audit_fdp"])
    if table.empty:
        return pd.DataFrame(columns=["mechanism", "paper", "nominal_source", "noise", "channel", "rounds", "nominal",
                                     "accountant", "audited", "audited_min", "audited_fdp", "audited_fdp_min",
                                     "neighbour", "seeds", "m", "stated"])
    rows = []
    keys = ["mechanism", "sigma_rule", "epsilon_nominal", "channel", "rounds", "m"]
    for (mechanism, rule, nominal, channel, rounds, m), g in table.groupby(keys, sort=False, dropna=False):
        g = g.sort_values("seed")
        noise = "none (σ = 0)" if not np.isfinite(nominal) else _NOISE.get(rule, rule)
        audited = g["epsilon_audit_informed"].tolist()
        low = float(min(audited))
        fdp = (g["epsilon_audit_fdp_informed"].astype(float).tolist() if "epsilon_audit_fdp_informed" in g
               else [np.nan] * len(g))
        stated = ("— (no noise: the audit's power)" if not np.isfinite(nominal) else
                  "violated" if low > nominal else "not shown violated")
        rows.append({"mechanism": mechanism, "paper": g["paper"].iloc[0] if "paper" in g else None,
                     "nominal_source": g["nominal_source"].iloc[0] if "nominal_source" in g else "",
                     "noise": noise, "channel": channel, "rounds": int(rounds),
                     "nominal": nominal, "accountant": float(g["epsilon_accountant"].max()), "audited": audited,
                     "audited_min": low, "audited_fdp": fdp, "audited_fdp_min": float(np.min(fdp)),
                     "neighbour": g["epsilon_audit"].tolist(), "seeds": len(g), "m": int(m), "stated": stated})
    frame = pd.DataFrame(rows)
    return frame.sort_values(["noise", "mechanism"], key=lambda c: c.map(_noise_rank) if c.name == "noise" else c,
                             kind="stable").reset_index(drop=True)


def _noise_rank(noise: str) -> int:
    """The papers' noise first, then equal ε, then the other readings, then none."""
    return 0 if noise.startswith("paper") else 1 if noise == "equal ε" else 3 if noise.startswith("none") else 2


def _num(x: float) -> str:
    if not np.isfinite(x):
        return "∞" if x > 0 else "—"
    return f"{x:.2g}" if x < 100 else f"{x:,.0f}" if x < 1e5 else f"{x:.1e}".replace("e+0", "e")


def _bounds(values) -> str:
    return " / ".join("—" if not np.isfinite(a) else f"{a:.2f}" for a in values)


def audit_markdown(summary: pd.DataFrame, detail: bool = False) -> list[str]:
    """The table's lines (the rounds each audit ran: the accountant's ε is for them): the
    one-run audited ε, which the verdict on the stated ε reads, then the f-DP audited ε (a
    lower bound if the mechanism's trade-off curve is Gaussian); ``detail`` adds the
    neighbour's audit, the channel, seeds and canaries (docs/answer.md)."""
    head = ("| mechanism | noise | rounds | nominal ε | accountant ε (upper) | audited ε ≥, 95% (lower) | "
            "f-DP audited ε ≥, 95% (Gaussian curve) | the stated ε |")
    if detail:
        head += " neighbour's audit | channel | seeds | canaries |"
    lines = [head, "|" + "---|" * head.count(" | ") + "---|"]
    for r in summary.itertuples():
        row = (f"| {r.mechanism} | {r.noise} | {r.rounds:,} | {_num(r.nominal)} | {_num(r.accountant)} | "
               f"{_bounds(r.audited)} | {_bounds(r.audited_fdp)} | {r.stated} |")
        if detail:
            row += f" {_bounds(r.neighbour)} | {r.channel} | {r.seeds} | {r.m:,} |"
        lines.append(row)
    return lines


def audit_figure(summary: pd.DataFrame):
    """Per mechanism and noise, the ε on a log axis: nominal, accountant (upper bound),
    audited (lower bound, the smallest over seeds) and the f-DP audited (the same, for a
    Gaussian trade-off curve)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    s = summary.iloc[::-1].reset_index(drop=True)
    fig, ax = plt.subplots(figsize=(8.0, 0.6 * len(s) + 1.3))
    y = np.arange(len(s))
    floor = 1e-2
    for offset, col, colour, label in ((0.3, "nominal", "#7f7f7f", "nominal ε (the paper's label)"),
                                       (0.1, "accountant", "#1f77b4", "accountant ε (upper bound)"),
                                       (-0.1, "audited_min", "#d62728", "audited ε (lower bound, 95%)"),
                                       (-0.3, "audited_fdp_min", "#ff9896",
                                        "f-DP audited ε (lower bound, 95%,\nif the curve is Gaussian)")):
        values = s[col].to_numpy(dtype=float)
        values = np.where(np.isfinite(values), np.maximum(values, floor), np.nan)
        ax.barh(y + offset, values, height=0.19, color=colour, label=label, left=0)
    ax.set_xscale("log")
    ax.set_yticks(y, [f"{r.mechanism} ({r.noise})" for r in s.itertuples()], fontsize=7)
    ax.set_xlabel(f"ε (log scale; values below {floor:g} drawn at {floor:g}; ∞ not drawn)")
    ax.set_title("How much privacy the messages give: the label, the proof, the measurement", fontsize=9)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    fig.tight_layout()
    return fig
