"""The token ring's privacy audit (dpdl_core.papers.straggler.audit): the canary enters only
the victim's updates, the observer's score sees it, the audited ε is sound against the LDP
accountant over seeds and large without noise, and the record joins the audit table."""
from __future__ import annotations

import json

import numpy as np
import pytest

from dpdl_core.papers.straggler import PaperParams, RunSplits, load_housing, split_runs
from dpdl_core.papers.straggler.audit import TokenAuditSpec, TokenCanary, main, token_audit, token_audit_cached
from dpdl_core.runs.audit_run import AUDIT_DIR, audit_table
from dpdl_core.sim import gdp_epsilon
from dpdl_core.verdicts.audit_answer import audit_summary

SMALL = PaperParams(n=4)


@pytest.fixture(scope="module")
def splits():
    return split_runs(load_housing(), 1, n_nodes=SMALL.n)


def test_the_canary_replaces_the_victims_gradient_only():
    canary = TokenCanary(np.array([True, False, True]), np.array([0.6, 0.8]), victim=2, observer=0, k=1.5, zeta=0.1)
    grad = np.arange(6.0).reshape(3, 2)
    out = canary.gradient(np.array([2, 2, 1]), grad)
    np.testing.assert_allclose(out, [[0.9, 1.2], [-0.9, -1.2], [4.0, 5.0]])
    np.testing.assert_array_equal(grad, np.arange(6.0).reshape(3, 2))  # the caller's array is left alone
    assert canary.gradient(np.array([0, 1, 0]), grad) is grad


def test_the_observer_scores_the_drop_along_e_between_its_visits():
    e = np.array([1.0, 0.0])
    canary = TokenCanary(np.array([True]), e, victim=1, observer=0, k=1.0, zeta=0.5)
    c = np.array([4.0])  # η = ζ/√c = 0.25: a drop is divided by it
    canary.observe(np.array([0]), np.array([[9.0, 9.0]]), np.array([[2.0, 0.0]]), c)  # first visit: nothing to score
    assert canary.scores[0] == 0
    canary.observe(np.array([1]), np.array([[2.0, 0.0]]), np.array([[1.5, 3.0]]), c)  # the victim updates
    canary.observe(np.array([0]), np.array([[1.5, 3.0]]), np.array([[1.0, 0.0]]), c)  # arrives 0.5 lower
    assert canary.scores[0] == pytest.approx(0.5 / 0.25) and canary.victim_updates[0] == 1
    canary.observe(np.array([0]), np.array([[1.0, 7.0]]), np.array([[1.0, 7.0]]), c)  # a skipped passage adds 0
    assert canary.scores[0] == pytest.approx(2.0)


@pytest.mark.parametrize("scheme", ["ss_ring", "ss_rand_ring"])
def test_audit_is_sound_against_the_ldp_accountant_over_seeds(splits, scheme):
    """At the paper's σ the audited ε (one-run and f-DP, 95%) never exceeds the exact LDP
    composition over the victim's updates, an upper bound for any observer."""
    for seed in range(3):
        out = token_audit(TokenAuditSpec(scheme=scheme, h_max=200, runs=300, seed=seed), splits, SMALL)
        assert out["victim_updates"] == 50 and 0 < out["epsilon_accountant"] < np.inf
        assert out["epsilon_audit"] <= out["epsilon_audit_fdp"] <= out["epsilon_accountant"]
        assert out["epsilon_nominal"] > 0 and out["sigma"] == SMALL.sigma


def _zero_data_splits(n: int, d: int = 3) -> RunSplits:
    """Nodes whose data has gradient 0 (every y·x = 0): only the canary and the noise move the token."""
    return RunSplits(np.zeros((1, n, 5, d)), np.ones((1, n, 5), bool), np.zeros((1, 2, d)), np.ones((1, 2)))


def _exact_mu(params: PaperParams, h_max: int, victim: int, observer: int) -> float:
    """μ of the observer's exact view on SS-Ring without skips, projection or data gradients:
    each passage between its visits (the first from τ₀ = 0) is Gaussian, shifted by
    ±k·η of the victim's hop, with the variance σ²Ση² of the other nodes' hops in it."""
    eta = params.zeta / np.sqrt(np.arange(1, h_max + 1))
    mu2, passage = 0.0, []
    for h in range(h_max):
        if h % params.n != observer:
            passage.append(h)
            continue
        var = params.sigma**2 * sum(eta[j] ** 2 for j in passage)
        shift = 2 * params.k * sum(eta[j] for j in passage if j % params.n == victim)
        mu2 += shift**2 / var if var > 0 else 0.0
        passage = []
    return float(np.sqrt(mu2))


def test_audit_stays_under_the_exact_epsilon_of_a_gaussian_view():
    """Without data gradients or projection the observer's view is exactly μ-GDP: the f-DP
    audit (which assumes that curve) and the one-run audit stay under its ε, over seeds. A
    canary of twice the sensitivity would exceed it (f-DP 2.8 here against 2.26)."""
    params = PaperParams(n=4, d_W=1e9)
    mu = _exact_mu(params, 88, victim=1, observer=2)
    exact = gdp_epsilon(mu, params.delta)
    assert 0.45 < mu < 0.55 and 2.0 < exact < 2.5
    for seed in range(2):
        spec = TokenAuditSpec(scheme="ss_ring", p=0.0, h_max=88, runs=2000, victim=1, observer=2, seed=seed)
        out = token_audit(spec, _zero_data_splits(params.n), params)
        assert 0.3 < out["epsilon_audit"] <= out["epsilon_audit_fdp"] <= exact


def test_without_noise_the_audit_proves_a_large_epsilon(splits):
    """The audit's power: σ ≈ 0 separates every run, so the bound reaches the ceiling m allows."""
    out = token_audit(TokenAuditSpec(h_max=40, runs=300), splits, SMALL, sigma=1e-6)
    assert out["audit"]["correct"] == out["audit"]["guesses"]
    assert out["epsilon_audit"] > 3 and out["mean_score_in"] > 0 > out["mean_score_out"]
    assert np.isnan(out["epsilon_nominal"]) and out["sigma_rule"] == "fixed"


def test_stored_audit_is_read_back_and_joins_the_audit_table(splits, tmp_path):
    spec = TokenAuditSpec(h_max=40, runs=100)
    calls = []

    def loader():
        calls.append(1)
        return splits

    with pytest.raises(ValueError, match="the paper's constants n = 10"):
        token_audit_cached(spec, loader, tmp_path)  # the default constants: n = 10, the splits have 4
    first = token_audit(spec, splits, SMALL)
    assert first["rounds"] == 10 and first["hops"] == 40
    path = tmp_path / f"straggler-{spec.hash()}.json"
    from dpdl_core.runs import JsonSlot, ResultStore

    JsonSlot(ResultStore(tmp_path), path.stem, ".").finish(first)
    again = token_audit_cached(spec, loader, tmp_path)
    assert len(calls) == 1 and again["epsilon_audit"] == first["epsilon_audit"]
    row = audit_table(tmp_path).iloc[0]
    assert row["mechanism"] == "SS-Rand-Ring (token ring, p = 0.0001)" and row["channel"] == "token"
    summary = audit_summary(audit_table(tmp_path))
    assert summary.loc[0, "noise"] == "paper" and summary.loc[0, "stated"] in ("violated", "not shown violated")


def test_committed_token_ring_audits_match_their_spec():
    for path in sorted(AUDIT_DIR.glob("straggler-*.json")):
        record = json.loads(path.read_text())
        spec = {k: v for k, v in record["spec"].items() if k != "kind"}
        assert TokenAuditSpec(**spec).hash() == record["spec_hash"] == path.stem.removeprefix("straggler-")
        assert record["epsilon_audit"] <= record["epsilon_audit_fdp"] <= record["epsilon_accountant"]


def test_command_line_errors_say_what_to_do(capsys, tmp_path, monkeypatch):
    with pytest.raises(SystemExit) as exc:
        main(["--victim", "1", "--observer", "1"])
    assert exc.value.code == 2 and "network DP is about another node" in capsys.readouterr().err
    monkeypatch.setenv("DPDL_DATA_MIRROR", str(tmp_path))
    monkeypatch.setenv("DPDL_DATA_DIR", str(tmp_path))
    assert main(["--h-max", "10", "--runs", "10", "--root", str(tmp_path / "audit")]) == 2
    err = capsys.readouterr().err
    assert "California housing" in err and "Traceback" not in err
    assert not list((tmp_path / "audit").glob("*.json"))
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0 and "--scheme {ss_ring,ss_rand_ring}" in capsys.readouterr().out
