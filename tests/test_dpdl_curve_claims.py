"""DPDL's loss-curve claims (``dpdl_core/papers/dpdl/claims.py``, ``CURVE_SPECS``) on made-up
window means, and how the study declares and judges them.

Each rule is shown to hold and to fail: the ring's losses at 500 rounds (Appendix D, L1464),
DPDL faster on a denser graph and its advantage growing (Figure 2, L453), the baselines'
convergence at ε = 0.25 (Figure 1, L449) and DPDL fastest on the ring (Figure 8, L1464). The
study declares every point the claims read, below the runs declared before them, and a claim
whose runs are not stored waits for them, naming them.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpdl_core.papers.dpdl import claims
from dpdl_core.papers.dpdl import study as dpdl
from dpdl_core.papers.dpdl.statements import STATEMENTS
from dpdl_core.runs.runner import EXPLOSION_FACTOR

BASELINES = claims.CURVE_ALGORITHMS[1:]
N10 = claims.N10
# Per-seed jitter of a made-up window mean: small against every tolerance below.
JITTER = (-0.002, 0.0, 0.002)


def means(values: dict, seeds: int = 3) -> dict:
    """Window means as the study hands them to a rule: point -> seed -> window -> value, from
    point -> value (every window) or point -> {window: value}, jittered over ``seeds`` seeds."""
    out = {}
    for point, v in values.items():
        windows = v if isinstance(v, dict) else dict.fromkeys(claims.WINDOWS, v)
        out[point] = {s: {w: x + JITTER[s] for w, x in windows.items()} for s in range(seeds)}
    return out


def verdict(spec_id: str, eps: float, values: dict) -> str:
    return claims.curve_claim(spec_id, eps, means(values)).verdict


def test_window_means_read_the_texts_horizon_and_a_diverged_run_at_its_stopping_loss():
    loss = pd.Series(np.r_[np.full(450, 2.0), np.full(50, 1.0), np.full(500, 0.5)], index=np.arange(1, 1001))
    w = claims.window_means(loss, 1000)
    assert w["at_500"] == 1.0 and w["final"] == 0.5
    assert w["speed"] == pytest.approx((450 * 2.0 + 50 * 1.0) / 500)
    stopped = claims.window_means(loss.iloc[:300], 1000)
    assert stopped == dict.fromkeys(claims.WINDOWS, EXPLOSION_FACTOR * 2.0)
    assert claims.window_means(loss, 1000, diverged=True)["final"] == EXPLOSION_FACTOR * 2.0


def _ring(values: dict, eps: float = 0.5) -> dict:
    return {(a, "ring", eps, N10): values[a] for a in claims.CURVE_ALGORITHMS}


def test_ring_at_500_rounds_holds_at_the_texts_losses_and_fails_away_from_them():
    text = _ring(claims.RING_500)
    assert verdict("fig08.ring_lowest_500", 0.5, text) == "holds"
    assert verdict("fig08.ring_losses_500", 0.5, text) == "holds"
    below = _ring({**claims.RING_500, "dp_cga": 0.30})
    assert verdict("fig08.ring_lowest_500", 0.5, below) == "fails"
    assert verdict("fig08.ring_losses_500", 0.5, below) == "fails"
    # Within the loss tolerance of DPDL's: neither lower nor higher.
    assert verdict("fig08.ring_lowest_500", 0.5, _ring({**claims.RING_500, "dp_cga": 0.40})) == "inconclusive"
    claim = claims.curve_claim("fig08.ring_losses_500", 0.5, means(_ring({**claims.RING_500, "dp_dpsgd": 0.40})))
    assert claim.verdict == "fails" and "DP-DPSGD 0.400 vs 1.99" in claim.evidence["why"]
    assert claim.evidence["paper"].startswith("DPDL 0.39, DP-CGA 0.56")


def test_n20_at_500_rounds_reads_the_bipartite_n20_point_against_the_texts_l447_losses():
    text = {(a, "bipartite", 0.5, 20): claims.N20_500[a] for a in claims.CURVE_ALGORITHMS}
    assert verdict("fig01.n20_lowest_500", 0.5, text) == "holds"
    assert verdict("fig01.n20_losses_500", 0.5, text) == "holds"
    # DP-NETFLEET at the text's 0.53 is 2x DPDL's 0.27; at 0.27 it ties DPDL.
    tie = {**text, ("dp_netfleet", "bipartite", 0.5, 20): 0.27}
    assert verdict("fig01.n20_lowest_500", 0.5, tie) == "inconclusive"
    claim = claims.curve_claim("fig01.n20_losses_500", 0.5, means(tie))
    assert claim.verdict == "fails" and "DP-NETFLEET 0.270 vs 0.53" in claim.evidence["why"]
    # The N = 10 ring's values do not stand in for N = 20's.
    with pytest.raises(KeyError):
        verdict("fig01.n20_losses_500", 0.5, _ring(claims.RING_500))


def _n_sweep(speed: dict, at_500: dict, final: dict) -> dict:
    """DPDL's bipartite points at N = 10, 20, 30 (eps 0.5) from per-N window means."""
    return {("dpdl", "bipartite", 0.5, n): {"speed": speed[n], "final": final[n], "at_200": 1.0, "at_400": 1.0,
                                            "at_500": at_500[n]} for n in claims.N_SWEEP}


def test_n_minimal_holds_when_dpdls_speed_barely_moves_with_n_and_fails_when_it_moves_either_way():
    flat = dict.fromkeys(claims.N_SWEEP, 0.5)
    assert verdict("fig01.n_minimal", 0.5, _n_sweep(flat, flat, flat)) == "holds"
    assert verdict("fig01.n_minimal", 0.5, _n_sweep({10: 0.5, 20: 0.5, 30: 0.7}, flat, flat)) == "fails"
    # Faster with more agents is an effect too: "minimal" reads both ways.
    assert verdict("fig01.n_minimal", 0.5, _n_sweep({10: 0.5, 20: 0.4, 30: 0.5}, flat, flat)) == "fails"
    # 0.03 slower, past the tolerance (5% of 0.5), but seeds spread as widely: open.
    spread = means(_n_sweep(flat, flat, flat))
    for seed, speed in enumerate((0.49, 0.53, 0.57)):
        spread["dpdl", "bipartite", 0.5, 20][seed]["speed"] = speed
    assert claims.curve_claim("fig01.n_minimal", 0.5, spread).verdict == "inconclusive"


def test_n_losses_500_holds_inside_the_texts_range_once_reached_and_fails_outside_it_or_still_falling():
    inside = {10: 0.25, 20: 0.27, 30: 0.29}
    assert verdict("fig01.n_losses_500", 0.5, _n_sweep(inside, inside, inside)) == "holds"
    high = {**inside, 30: 0.40}
    claim = claims.curve_claim("fig01.n_losses_500", 0.5, means(_n_sweep(inside, high, high)))
    assert claim.verdict == "fails" and "N = 30: DPDL 0.400 vs 0.25-0.29" in claim.evidence["why"]
    # In the range at round 500 but still falling well after it: not "within 500 rounds".
    assert verdict("fig01.n_losses_500", 0.5, _n_sweep(inside, inside, {**inside, 20: 0.20})) == "fails"


def _n20_graphs(bipartite: dict, fully_connected: dict) -> dict:
    """DPDL at N = 20 (eps 0.5) on both graphs from window -> value."""
    return {("dpdl", "bipartite", 0.5, 20): {"speed": 0.5, **bipartite},
            ("dpdl", "fully_connected", 0.5, 20): {"speed": 0.5, **fully_connected}}


def test_n20_fc_200_holds_when_the_fully_connected_graph_reaches_029_by_round_200_and_the_bipartite_by_400():
    text = _n20_graphs({"at_200": 0.40, "at_400": 0.29, "at_500": 0.29, "final": 0.29},
                       {"at_200": 0.29, "at_400": 0.29, "at_500": 0.29, "final": 0.29})
    assert verdict("fig02.n20_fc_200", 0.5, text) == "holds"
    # Both graphs at their minimum by round 200: nothing is "only" 200 rounds.
    same = _n20_graphs({"at_200": 0.29, "at_400": 0.29, "at_500": 0.29, "final": 0.29},
                       {"at_200": 0.29, "at_400": 0.29, "at_500": 0.29, "final": 0.29})
    assert verdict("fig02.n20_fc_200", 0.5, same) == "inconclusive"
    # The fully connected graph still falling after round 200.
    falling = _n20_graphs({"at_200": 0.40, "at_400": 0.29, "at_500": 0.29, "final": 0.29},
                          {"at_200": 0.29, "at_400": 0.25, "at_500": 0.24, "final": 0.22})
    assert verdict("fig02.n20_fc_200", 0.5, falling) == "fails"


def _graphs(dpdl_loss: dict, baselines: dict) -> dict:
    """DPDL's loss per graph, each baseline's as a factor of DPDL's per graph (eps 0.5)."""
    out = {("dpdl", g, 0.5, N10): v for g, v in dpdl_loss.items()}
    out |= {(b, g, 0.5, N10): baselines[g] * dpdl_loss[g] for b in BASELINES for g in dpdl_loss}
    return out


def test_denser_faster_holds_when_dpdls_loss_falls_on_the_fully_connected_graph_and_fails_when_it_rises():
    assert verdict("fig02.dpdl_denser_faster", 0.5, {("dpdl", "bipartite", 0.5, N10): 0.5,
                                                     ("dpdl", "fully_connected", 0.5, N10): 0.4}) == "holds"
    assert verdict("fig02.dpdl_denser_faster", 0.5, {("dpdl", "bipartite", 0.5, N10): 0.4,
                                                     ("dpdl", "fully_connected", 0.5, N10): 0.5}) == "fails"
    # Faster but not lower: one reading inside the tolerance leaves it open.
    mixed = {("dpdl", "bipartite", 0.5, N10): {"speed": 0.5, "final": 0.3, "at_500": 0.4},
             ("dpdl", "fully_connected", 0.5, N10): {"speed": 0.4, "final": 0.3, "at_500": 0.4}}
    assert verdict("fig02.dpdl_denser_faster", 0.5, mixed) == "inconclusive"


def test_advantage_grows_holds_when_the_baselines_ratio_to_dpdl_grows_and_fails_when_it_shrinks():
    loss = {"bipartite": 0.3, "fully_connected": 0.25}
    assert verdict("fig02.advantage_grows", 0.5, _graphs(loss, {"bipartite": 1.5, "fully_connected": 3.0})) == "holds"
    assert verdict("fig02.advantage_grows", 0.5, _graphs(loss, {"bipartite": 3.0, "fully_connected": 1.5})) == "fails"
    # Every baseline as far ahead on both graphs: the lower losses of the denser graph are no advantage.
    assert verdict("fig02.advantage_grows", 0.5,
                   _graphs(loss, {"bipartite": 2.0, "fully_connected": 2.0})) == "inconclusive"


def _small_eps(dpdl_loss: dict, baselines: dict) -> dict:
    """Points of fig01.small_eps_baselines: DPDL's loss and every baseline's at eps 0.25 and 1."""
    out = {("dpdl", "bipartite", e, N10): v for e, v in dpdl_loss.items()}
    return out | {(b, "bipartite", e, N10): v for b in BASELINES for e, v in baselines.items()}


def test_small_eps_holds_when_dpdl_keeps_its_pace_and_the_baselines_fall_behind_and_fails_otherwise():
    dpdl_steady = {0.25: 0.3, 1.0: 0.3}
    assert verdict("fig01.small_eps_baselines", 0.25, _small_eps(dpdl_steady, {0.25: 1.0, 1.0: 0.4})) == "holds"
    # A baseline that ends below DPDL at eps 0.25 converged.
    assert verdict("fig01.small_eps_baselines", 0.25, _small_eps(dpdl_steady, {0.25: 0.2, 1.0: 0.2})) == "fails"
    # DPDL slowed down by eps 0.25 beyond the tolerance: not "still rapidly".
    assert verdict("fig01.small_eps_baselines", 0.25,
                   _small_eps({0.25: 0.6, 1.0: 0.3}, {0.25: 6.0, 1.0: 0.4})) == "fails"
    # A baseline that diverged counts at its stopping loss: its convergence was not ensured.
    stopped = EXPLOSION_FACTOR * 2.3
    assert verdict("fig01.small_eps_baselines", 0.25, _small_eps(dpdl_steady, {0.25: stopped, 1.0: 0.4})) == "holds"


def test_ring_fastest_holds_when_every_baseline_is_slower_and_fails_when_one_is_faster():
    slower = _ring({"dpdl": 0.5, **dict.fromkeys(BASELINES, 0.7)}, 0.25)
    assert verdict("fig08.ring_fastest", 0.25, slower) == "holds"
    faster = _ring({"dpdl": 0.5, **dict.fromkeys(BASELINES, 0.7), "dp_cga": 0.4}, 0.25)
    assert verdict("fig08.ring_fastest", 0.25, faster) == "fails"


def test_the_study_declares_every_curve_point_after_the_runs_declared_before():
    st = dpdl.study()
    setting = dpdl.TREND_SETTING["mnist"][0]
    seeds = {}
    for r in st.runs:
        t = r.tags
        if (t["dataset"], t["setting"], t["mode"]) == ("mnist", dpdl.cell_setting(setting, t["n_agents"]),
                                                       "paper_noise"):
            seeds.setdefault((t["algorithm"], t["topology"], t["epsilon"], t["n_agents"]), set()).add(t["seed"])
    points = {p for cases in claims.CURVE_POINTS.values() for ps in cases.values() for p in ps}
    assert all(0 in seeds.get(p, ()) for p in points), sorted(p for p in points if p not in seeds)
    curve = [r for r in st.runs if 14 <= r.priority <= 15]
    assert len(curve) == 87 and {r.tags["seed"] for r in curve} == {0, 1, 2}
    assert all(r.priority > s.priority for r in curve for s in st.runs if s.tags["setting"] == "authors_config")
    # Their core-hours per graph at N = 10; all three are committed (s23, s16 and s71 are judged on them).
    n10 = [r for r in curve if r.tags["n_agents"] == N10]
    hours = {g: round(sum(r.estimate_s for r in n10 if r.tags["topology"] == g) / 3600, 1) for g in dpdl.GRAPHS}
    assert hours == {"fully_connected": 2.9, "bipartite": 4.7, "ring": 5.1}
    # The N = 20 point of s14: every algorithm on the bipartite graph, N = 20 in its key and setting (so that
    # it joins no N = 10 cell), each round and evaluation costing twice N = 10's (DPDL's and DP-CGA's rounds
    # also grow with the degree, 5 -> 10).
    n20 = [r for r in curve if r.tags["n_agents"] == 20 and r.tags["topology"] == "bipartite"]
    assert len(n20) == 15 and all("/n20/" in r.key and r.tags["setting"] == f"{setting}/n20" for r in n20)
    twin = {r.tags["algorithm"]: r for r in st.runs
            if (r.tags["dataset"], r.tags["setting"], r.tags["mode"], r.tags["topology"], r.tags["epsilon"],
                r.tags["seed"]) == ("mnist", setting, "paper_noise", "bipartite", 0.5, 0)}
    assert all(r.estimate_s == pytest.approx(2 * twin[r.tags["algorithm"]].estimate_s) for r in n20
               if r.tags["seed"] == 0 and r.tags["algorithm"] not in dpdl._PER_NEIGHBOUR)
    # DPDL's points of s20 and s21 (N = 30, bipartite) and of s24 (N = 20, fully connected), seeds 0-2.
    cells = (("bipartite", 30), ("fully_connected", 20))
    more = [r for r in curve if (r.tags["topology"], r.tags["n_agents"]) in cells]
    assert sorted((r.tags["topology"], r.tags["n_agents"], r.tags["algorithm"], r.tags["seed"]) for r in more) == \
        [(g, n, "dpdl", s) for g, n in cells for s in (0, 1, 2)]
    assert all(r.tags["setting"] == dpdl.cell_setting(setting, r.tags["n_agents"]) for r in more)
    status = {s.id: s.status for s in STATEMENTS}
    assert {status[s] for s in ("s23_b1_denser_faster", "s16_b1_small_eps", "s71_app_ring_n10_fastest")} == {"judged"}


class _Store:
    """A store that holds no run."""

    def has(self, h):
        return False


def test_a_curve_claim_waits_for_its_runs_naming_them():
    waiting = dpdl._curve_claims(_Store(), {})
    assert {c.id for c in waiting} == set(claims.CURVE_SPECS)
    assert all(c.verdict == "inconclusive" and c.evidence["why"].startswith("not judged: not yet run: ")
               for c in waiting)
    fastest = [c for c in waiting if c.id == "fig08.ring_fastest"]
    assert [c.condition.rsplit(", ", 1)[1] for c in fastest] == ["eps 0.25", "eps 0.5", "eps 1"]
    assert "DP-CGA ring eps 0.25 seeds 0, 1, 2" in fastest[0].evidence["why"]
