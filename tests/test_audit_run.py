"""The audit harness (dpdl_core.runs.audit_run): gradient canaries in a real run audit below the
accountant's ε for both observers (soundness, over seeds), far above 0 without noise
(power), show in DPDL's cross-gradients, are stored once and read back; and the same for
batch clipping (PDSL, DP-CGA clip: batch)."""
import json

import numpy as np
import pytest
import torch

from dpdl_core.runs.audit_run import (
    AUDIT_DIR,
    AuditSpec,
    audit_cached,
    audit_path,
    audit_run,
    audit_table,
    fdp_epsilon,
    main,
)
from dpdl_core.runs.config import ExperimentConfig
from dpdl_core.sim.audit import fdp_epsilon_from_counts


def one_agent_dpsgd(sigma: float, seed: int = 0, **changes) -> ExperimentConfig:
    """DP-SGD of a logistic regression on one agent's 200 MNIST images: q = 50/200, 20 rounds."""
    base = dict(dataset="mnist", model="logreg", algorithm="dp_dpsgd", topology="fully_connected", n_agents=1,
                seed=seed, train_samples=200, batch_size=50, rounds=20, epsilon=None, sigma_rule="fixed",
                sigma=sigma, clip=1.0, lr=0.1, eval_every=20)
    return ExperimentConfig(**{**base, **changes})


@pytest.mark.parametrize("sigma", [1.0, 2.0, 5.0])
def test_audited_epsilon_stays_below_the_accountant_over_seeds(sigma):
    torch.set_num_threads(1)
    audited = []
    for seed in range(6):
        out = audit_run(one_agent_dpsgd(sigma, seed), AuditSpec(m=500))
        assert out["q"] == 0.25 and out["messages_observed"] == 20 and out["unmatched_messages"] == 0
        audited += [out["epsilon_audit"], out["epsilon_audit_informed"]]
    accountant = out["epsilon_accountant"]
    assert np.isfinite(accountant)
    # At confidence 0.95 a sound bound exceeds the true ε (≤ the accountant's) in at most 5%
    # of runs; none of these six may, for either observer.
    assert max(audited) <= accountant, (audited, accountant)
    if sigma <= 2.0:
        assert np.mean(audited) > 0.1  # the canaries are seen


def test_no_noise_gives_a_large_bound():
    torch.set_num_threads(1)
    out = audit_run(one_agent_dpsgd(0.0), AuditSpec(m=500))
    assert out["epsilon_accountant"] == float("inf")
    # With m = 500 no count can prove more than 3.69 (k = 100, all right); the real gradients
    # in the canaries' coordinates cost a few guesses.
    assert out["epsilon_audit"] > 2.0
    assert out["audit"]["correct"] >= 0.9 * out["audit"]["guesses"]
    # The observer that knows the other examples sees the canaries alone: only the in
    # canaries never sampled in 20 rounds ((3/4)^20 each) can be guessed wrong.
    assert out["epsilon_audit_informed"] > 3.0


def test_dpdl_cross_gradients_carry_the_canaries():
    """DPDL on a 4-agent ring without noise: the observer sums the victim's cross-gradients to
    its two neighbours, and the canaries show."""
    torch.set_num_threads(1)
    cfg = ExperimentConfig(dataset="mnist", model="logreg", algorithm="dpdl", topology="ring", n_agents=4,
                           train_samples=800, batch_size=50, rounds=10, epsilon=None, sigma_rule="fixed", sigma=0.0,
                           clip=1.0, lr=0.1, eval_every=10)
    seen = audit_run(cfg, AuditSpec(m=200, victim=1))
    assert seen["channel"] == "CG" and seen["messages_observed"] == 10 * 2  # two neighbours
    assert seen["epsilon_audit_informed"] >= seen["epsilon_audit"] > 1.5  # ~6% of in canaries never sampled
    assert seen["unmatched_messages"] == 0


def test_stored_once_and_read_back(tmp_path):
    torch.set_num_threads(1)
    cfg, spec = one_agent_dpsgd(2.0, rounds=5), AuditSpec(m=100)
    first = audit_cached(cfg, spec, tmp_path)
    path = audit_path(cfg, spec, tmp_path)
    assert path.name == f"{cfg.hash}-{spec.hash()}.json" and path.exists()
    stamp = json.loads(path.read_text())["seconds"]
    again = audit_cached(cfg, spec, tmp_path)  # read, not rerun
    assert again["seconds"] == stamp == first["seconds"]
    table = audit_table(tmp_path)
    assert len(table) == 1
    row = table.iloc[0]
    assert row["mechanism"] == "DP-DPSGD" and row["m"] == 100 and row["rounds"] == 5
    assert row["epsilon_audit"] <= row["epsilon_accountant"]
    assert row["epsilon_audit_informed"] <= row["epsilon_accountant"]
    assert row["epsilon_audit_fdp"] == first["epsilon_audit_fdp"] >= row["epsilon_audit"]
    assert first["audit_fdp"]["bound"] == "f-DP" and first["audit_fdp"]["choices"] == first["audit"]["choices"]
    assert audit_table(tmp_path / "none").empty


def test_committed_audits_give_the_f_dp_bound_from_their_counts():
    """The audits stored without the f-DP bound get it from the one-run bound's counts, at that
    bound's per-k confidence (the same Bonferroni split), never below the one-run ε; the cache
    keys are unchanged."""
    table = audit_table()
    assert len(table) and table["epsilon_audit_fdp"].notna().all()
    assert (table["epsilon_audit_fdp"] >= table["epsilon_audit"]).all()
    informed = table.dropna(subset=["epsilon_audit_informed"])
    assert (informed["epsilon_audit_fdp_informed"] >= informed["epsilon_audit_informed"]).all()
    record = json.loads(sorted(AUDIT_DIR.glob("*.json"))[0].read_text())
    assert "epsilon_audit_fdp" not in record and (record["config_hash"], record["spec_hash"]) == (
        ExperimentConfig.from_dict(record["config"]).hash, AuditSpec(**record["spec"]).hash())
    c = record["audit"]
    assert fdp_epsilon(record) == fdp_epsilon_from_counts(c["m"], c["guesses"], c["correct"], c["delta"],
                                                          1 - (1 - c["confidence"]) / c["choices"])
    assert fdp_epsilon({**record, "audit_informed": None}, informed=True) is None


def batch_clipped_cga(sigma: float, seed: int = 0, **changes) -> ExperimentConfig:
    """DP-CGA with its batch mean clipped as a whole and noise σC on it (``calibrated``, the
    mechanism of PDSL's eqs 10-14), agent 0 of two seeing 200 MNIST images: q = 50/200."""
    return one_agent_dpsgd(sigma, seed, algorithm="dp_cga", algo={"clip": "batch", "noise": "calibrated"},
                           n_agents=2, train_samples=400, **changes)


@pytest.mark.parametrize("sigma", [1.0, 3.0])
def test_batch_clipping_audits_below_the_accountant_over_seeds(sigma):
    """The canary moves the clipped batch gradient by 2C, the sensitivity the accountant
    charges (noise_scale 1/2): the informed observer scores that Gaussian mechanism itself."""
    torch.set_num_threads(1)
    audited = []
    for seed in range(4):
        out = audit_run(batch_clipped_cga(sigma, seed), AuditSpec(m=300, victim=0))
        assert out["unmatched_messages"] == 0 and out["messages_observed"] >= 20
        audited += [out["epsilon_audit"], out["epsilon_audit_informed"]]
    accountant = out["epsilon_accountant"]
    assert np.isfinite(accountant) and max(audited) <= accountant, (audited, accountant)
    if sigma == 1.0:
        assert max(audited) > 0.1  # the canaries are seen


def test_batch_clipping_without_noise_gives_a_large_bound():
    torch.set_num_threads(1)
    out = audit_run(batch_clipped_cga(0.0), AuditSpec(m=300, victim=0))
    assert out["epsilon_accountant"] == float("inf")
    # Only the in canaries never sampled in 20 rounds ((3/4)^20 each) can be guessed wrong.
    assert out["epsilon_audit_informed"] > 2.5


def test_pdsl_batch_clipped_cross_gradients_carry_the_canaries():
    """PDSL as the paper states it (batch clipping), 3 agents, no noise: the canaries show
    in the cross-gradients the victim sends its two neighbours, matched to their clipped batch
    gradients."""
    torch.set_num_threads(1)
    cfg = ExperimentConfig(dataset="mnist", model="logreg", algorithm="pdsl", topology="fully_connected",
                           n_agents=3, train_samples=600, batch_size=50, rounds=8, epsilon=None,
                           sigma_rule="fixed", sigma=0.0, clip=1.0, lr=0.1, eval_every=8, validation_samples=50)
    out = audit_run(cfg, AuditSpec(m=200, victim=0))
    assert out["channel"] == "CG" and out["messages_observed"] == 8 * 2 and out["unmatched_messages"] == 0
    assert out["epsilon_audit_informed"] > 1.0


def test_spec_checks_and_cli_help(capsys):
    with pytest.raises(ValueError, match="channel"):
        AuditSpec(channel="models")
    with pytest.raises(ValueError, match="m="):
        AuditSpec(m=1)
    assert AuditSpec().hash() != AuditSpec(m=500).hash()
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    assert "--preset" in capsys.readouterr().out
