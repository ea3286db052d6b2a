"""DPDL's result statements (``dpdl_core/papers/dpdl/statements.py``) against the paper's text and tables.

Each quote must be in the text, on the line its ``where`` names, and each status must
have what it needs. Every status must occur, as must every part of the paper (the
abstract, the introduction, §VI, the conclusion, Appendix D). Every declared claim must
judge some statement.

Every ``inconsistent`` finding is recomputed here. The findings about a number are
checked against the paper's tables (``reference/dpdl_*.csv``): under every reading listed
for it, the text's number must lie outside what the table's printed values allow, and the
``why`` must name both numbers. Two findings have no number of their own. The two losses
the text gives for one cell are checked against the text. "Significantly lower" is
checked against Table VI's spread over the paper's 20 runs.
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import ttest_ind_from_stats

from dpdl_core.papers.dpdl import claims
from dpdl_core.papers.dpdl.statements import STATEMENTS
from dpdl_core.verdicts.reporting import load_reference
from dpdl_core.verdicts.statements import STATUSES, check_statements, normalise

TEXT = Path(__file__).resolve().parents[2] / "shared" / "papers" / "dpdl.txt"
BY_ID = {s.id: s for s in STATEMENTS}
ACC = load_reference("dpdl", "dpdl_accuracy")
ATT = load_reference("dpdl", "dpdl_attack")
# The paper's tables print accuracies to 0.1 and attack metrics to 0.01 (± half of that).
ACC_H, ATT_H = 0.05, 0.005
# "Each algorithm runs twenty times" (§VI-B, L443): the ± of the tables is over 20 runs.
RUNS = 20


@pytest.fixture(scope="module")
def text() -> str:
    if not TEXT.exists():
        pytest.skip(f"{TEXT} (the papers' texts) is not in this checkout's neighbourhood")
    return TEXT.read_text(encoding="utf-8")


def test_quotes_statuses_and_claims_check(text):
    assert check_statements(STATEMENTS, text, claims.SPECS) == []


def test_each_quote_is_on_the_line_its_where_names(text):
    lines = text.split("\n")
    for s in STATEMENTS:
        line = re.search(r"L(\d+)$", s.where)
        assert line, f"{s.id}: where {s.where!r} ends in no line number"
        assert normalise(s.quote) in normalise(lines[int(line[1]) - 1]), f"{s.id}: not on {s.where}"


def test_every_status_part_of_the_paper_and_claim_is_represented():
    assert {s.status for s in STATEMENTS} == set(STATUSES)
    parts = {s.where.split(",")[0] for s in STATEMENTS}
    assert {"Abstract", "§I", "§VI-B1", "§VI-B2", "§VI-C1", "§VI-C2", "§VI-D", "§VII", "Appendix D"} <= parts
    for part in ("Abstract", "§VII"):
        assert any(s.status == "judged" for s in STATEMENTS if s.where.startswith(part)), part
    assert set(claims.SPECS) <= {c for s in STATEMENTS for c in s.claims}
    assert all("core-hour" in s.needs for s in STATEMENTS if s.status == "not_run")


def _span(f, up, down, h):
    """(least, largest) of ``f(up, down)`` over the values the printed ``up`` and ``down``
    stand for (± ``h``); ``f`` rises with ``up`` and falls with ``down``."""
    return f(up - h, down + h), f(up + h, down - h)


def _cell(dataset, topology, alpha_d, epsilon, n_agents):
    t = ACC[(ACC["dataset"] == dataset) & (ACC["topology"] == topology) & (ACC["alpha_d"] == alpha_d)
            & (ACC["epsilon"] == epsilon) & (ACC["n_agents"] == n_agents)]
    return t.set_index("algorithm")


def gain(dataset, topology, alpha_d, epsilon, n_agents, baseline):
    """DPDL's gain over ``baseline`` in one cell: in pp, in % of the baseline, in % of DPDL."""
    acc = _cell(dataset, topology, alpha_d, epsilon, n_agents)["accuracy_mean"]
    d, b = acc["DPDL"], acc[baseline]
    return {"pp": _span(lambda d, b: d - b, d, b, ACC_H),
            "% of the baseline": _span(lambda d, b: 100 * (d - b) / b, d, b, ACC_H),
            "% of DPDL": _span(lambda d, b: 100 * (d - b) / d, d, b, ACC_H)}


def decline(topology):
    """DPDL's mean decline from alpha_d = 1.0 to 0.25 over Table I's (epsilon, N) cells."""
    t = ACC[(ACC["dataset"] == "mnist") & (ACC["topology"] == topology) & (ACC["algorithm"] == "DPDL")]
    w = t.pivot_table(index=["epsilon", "n_agents"], columns="alpha_d", values="accuracy_mean")
    hi, lo = w[1.0].to_numpy(), w[0.25].to_numpy()
    return {"pp": _span(lambda a, b: np.mean(a - b), hi, lo, ACC_H),
            "% of the alpha_d = 1.0 accuracy": _span(lambda a, b: np.mean(100 * (a - b) / a), hi, lo, ACC_H),
            "% of the alpha_d = 0.25 accuracy": _span(lambda a, b: np.mean(100 * (a - b) / b), hi, lo, ACC_H)}


def _attack_pairs(metric, pairs):
    """The mean of DPDL's change against no defence over Table IV's cells, in the text's
    direction (MSE higher, PSNR and SSIM lower), for the (DPDL, no-defence) channel ``pairs``."""
    w = ATT[(ATT["dataset"] == "cifar10") & (ATT["metric"] == metric)].pivot_table(
        index=["topology", "n_agents"], columns="scenario", values="value")
    dp = np.concatenate([w[f"DPDL-{a}"].to_numpy() for a, _ in pairs])
    nd = np.concatenate([w[f"ND-{b}"].to_numpy() for _, b in pairs])
    up, down = (dp, nd) if metric == "MSE" else (nd, dp)
    return _span(lambda u, d: np.mean(u - d), up, down, ATT_H)


SAME = (("CG", "CG"), ("MM", "MM"))


def attack_mean(metric, pairs=None):
    """Readings of "on average": each channel against its own (both, CG, MM), and the cross ``pairs``."""
    out = {"each channel against its own": _attack_pairs(metric, SAME),
           "CG only": _attack_pairs(metric, SAME[:1]), "MM only": _attack_pairs(metric, SAME[1:])}
    return out | {f"DPDL-{a} against ND-{b}": _attack_pairs(metric, [(a, b)]) for a, b in pairs or ()}


_T1 = ("mnist", "bipartite", 0.25, 0.25, 20)
_T5 = ("mnist", "ring", 0.25, 0.25, 20)
# Each finding about a number: (the text's number as printed, the digits the why gives the
# table's number to, the readings of the table that could give it).
FINDINGS = {
    "s36_c1_gain_netfleet": ("14.0", 1, lambda: gain(*_T1, "DP-NETFLEET")),
    "s37_c1_gain_cga": ("37.4", 1, lambda: gain(*_T1, "DP-CGA")),
    "s38_c1_gain_muffliato": ("18.4", 1, lambda: gain(*_T1, "MUFFLIATO")),
    "s39_c1_gain_dpsgd": ("18.1", 1, lambda: gain(*_T1, "DP-DPSGD")),
    "s86_app_t5_gain_netfleet": ("7.16", 1, lambda: gain(*_T5, "DP-NETFLEET")),
    "s87_app_t5_gain_cga": ("21.4", 1, lambda: gain(*_T5, "DP-CGA")),
    "s88_app_t5_gain_muffliato": ("12.3", 1, lambda: gain(*_T5, "MUFFLIATO")),
    "s89_app_t5_gain_dpsgd": ("17.8", 1, lambda: gain(*_T5, "DP-DPSGD")),
    "s45_c1_alpha_decline_bipartite": ("1.72", 2, lambda: decline("bipartite")),
    "s46_c1_alpha_decline_fully_connected": ("0.98", 2, lambda: decline("fully_connected")),
    "s64_d_cifar_mse": ("1.28", 2, lambda: attack_mean("MSE", [("CG", "MM")])),
    "s65_d_cifar_psnr": ("2.07", 2, lambda: attack_mean("PSNR", [("CG", "MM")])),
    "s66_d_cifar_ssim": ("8.39", 2, lambda: attack_mean("SSIM_x100", [("CG", "MM"), ("MM", "CG")])),
}
# The text's losses for MNIST bipartite, epsilon = 0.5, N = 20: where each is, and its words.
TWO_LOSSES = (("s14_b1_n20_losses", r"minimum value around (\d\.\d\d)", r"in about (\d+?)\1 rounds"),
              ("s25_b1_n20_loss_twice", r"minimum training loss of approximately (\d\.\d\d)",
               r"within (\d+?)\1 rounds"))


def test_every_inconsistent_statement_is_recomputed_here():
    inconsistent = {s.id for s in STATEMENTS if s.status == "inconsistent"}
    assert inconsistent == set(FINDINGS) | {"s25_b1_n20_loss_twice", "s82_app_c_ring_accuracy_gap"}


@pytest.mark.parametrize("sid", sorted(FINDINGS))
def test_a_number_of_the_text_is_not_the_tables(sid):
    said, digits, readings = FINDINGS[sid]
    value, tol = float(said), 0.5 * 10.0 ** -len(said.split(".")[1])
    spans = readings()
    for reading, (lo, hi) in spans.items():
        assert not lo - tol <= value <= hi + tol, f"{sid}: the table gives {said} as {reading} ({lo:.3f} to {hi:.3f})"
    why = BY_ID[sid].why
    lo, hi = next(iter(spans.values()))
    assert said in why and f"{(lo + hi) / 2:.{digits}f}" in why, f"{sid}: the why names {said} and the table's number"


@pytest.mark.parametrize("sid", ["s64_d_cifar_mse", "s65_d_cifar_psnr"])
def test_the_cross_pair_the_why_names_gives_the_texts_average(sid):
    said, _, _ = FINDINGS[sid]
    lo, hi = _attack_pairs({"s64_d_cifar_mse": "MSE", "s65_d_cifar_psnr": "PSNR"}[sid], [("MM", "CG")])
    assert lo - 0.005 <= float(said) <= hi + 0.005
    assert "DPDL-MM" in BY_ID[sid].why and "ND-CG" in BY_ID[sid].why


def test_no_pairing_gives_the_texts_ssim_average():
    pairs = [(a, b) for a in ("CG", "MM") for b in ("CG", "MM")]
    largest = max(sum(_attack_pairs("SSIM_x100", [p])) / 2 for p in pairs)
    assert largest < float(FINDINGS["s66_d_cifar_ssim"][0])
    assert f"{largest:.2f}" in BY_ID["s66_d_cifar_ssim"].why


def test_the_text_gives_two_losses_for_one_cell(text):
    losses, rounds = [], []
    for sid, loss, horizon in TWO_LOSSES:
        s = BY_ID[sid]
        assert "ϵ=0.5" in s.quote and "N=20N=20" in s.quote, f"{sid}: not the cell epsilon = 0.5, N = 20"
        losses.append(re.search(loss, s.quote)[1])
        rounds.append(re.search(horizon, s.quote)[1])
    # L447 is Figure 1's paragraph (bipartite); L453 says "over the bipartite graph".
    assert "over bipartite graphs" in text.split("\n")[446] and "bipartite" in BY_ID["s25_b1_n20_loss_twice"].quote
    assert losses[0] != losses[1] and rounds[0] != rounds[1]
    why = BY_ID["s25_b1_n20_loss_twice"].why
    assert all(x in why for x in losses + rounds)


def test_significantly_lower_is_a_third_of_a_point_on_table_vi():
    ring = ACC[(ACC["dataset"] == "cifar10") & (ACC["topology"] == "ring")]
    gaps = []
    for _, g in ring.groupby(["alpha_d", "epsilon", "n_agents"]):
        g = g.set_index("algorithm")
        top = g.loc[["DP-CGA", "DP-NETFLEET"], "accuracy_mean"].idxmax()
        gaps.append((g.at["DPDL", "accuracy_mean"] - g.at[top, "accuracy_mean"], g.loc["DPDL"], g.loc[top]))
    gap, dpdl, base = min(gaps, key=lambda x: x[0])
    t, p = ttest_ind_from_stats(dpdl["accuracy_mean"], dpdl["accuracy_std"], RUNS, base["accuracy_mean"],
                                base["accuracy_std"], RUNS, equal_var=False)
    assert gap < 0.5 and p > 0.05
    why = BY_ID["s82_app_c_ring_accuracy_gap"].why
    assert f"{gap:.1f} pp" in why and f"t = {t:.2f}" in why and f"p = {p:.2f}" in why
    assert f"{dpdl['accuracy_mean']:.1f} ± {dpdl['accuracy_std']:.1f}" in why
