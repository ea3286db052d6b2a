"""Input-space canaries (AuditSpec(kind="input"), dpdl_core.runs.input_canaries): their audit
stays below a small accountant ε over seeds (soundness), is clearly positive without noise
(power), the canaries are what the spec says, the gradient kind's spec hashes and the committed
audits' keys are unchanged, the run is otherwise the plain run, and bad options say what to pass."""
import json

import numpy as np
import pytest
import torch

from dpdl_core.runs.audit_run import AUDIT_DIR, AuditSpec, audit_cached, audit_path, audit_run, audit_table, main
from dpdl_core.runs.config import ExperimentConfig
from dpdl_core.runs.input_canaries import InputCanaryAuditor, draw_input_canaries
from dpdl_core.runs.runner import prepare
from dpdl_core.sim.audit import input_canary_scores
from dpdl_core.sim.loop import training_rounds
from dpdl_core.verdicts.audit_answer import audit_summary


def one_agent_dpsgd(sigma: float, seed: int = 0, rounds: int = 100, **changes) -> ExperimentConfig:
    """DP-SGD of a logistic regression on one agent's 200 MNIST images: q = 50/200, η = 0.5."""
    base = dict(dataset="mnist", model="logreg", algorithm="dp_dpsgd", topology="fully_connected", n_agents=1,
                seed=seed, train_samples=200, batch_size=50, rounds=rounds, epsilon=None, sigma_rule="fixed",
                sigma=sigma, clip=1.0, lr=0.5, eval_every=rounds)
    return ExperimentConfig(**{**base, **changes})


@pytest.mark.parametrize("sigma", [1.0, 6.0])
def test_input_canaries_audit_below_the_accountant_over_seeds(sigma):
    """The victim's model is a post-processing of its noisy gradients, so no observer of it
    may prove more than the accountant's ε (1.83 at σ = 6, 100 rounds)."""
    torch.set_num_threads(1)
    audited = []
    for seed in range(3):
        for canary in ("mislabelled", "out_of_distribution"):
            out = audit_run(one_agent_dpsgd(sigma, seed), AuditSpec(m=500, kind="input", canary=canary))
            assert out["q"] == 0.25 and out["channel"] == "models" and out["messages_observed"] == 1
            assert out["epsilon_audit_informed"] is None and out["unmatched_messages"] is None
            audited.append(out["epsilon_audit"])
    accountant = out["epsilon_accountant"]
    assert np.isfinite(accountant) and max(audited) <= accountant, (audited, accountant)
    if sigma == 1.0:
        assert np.mean(audited) > 0.2  # the canaries are seen through the noise


@pytest.mark.parametrize("canary", ["mislabelled", "out_of_distribution"])
def test_no_noise_gives_a_clearly_positive_bound(canary):
    """σ = 0, 200 rounds: each in canary is sampled ~50 times and the model fits it."""
    torch.set_num_threads(1)
    out = audit_run(one_agent_dpsgd(0.0, rounds=200), AuditSpec(m=500, kind="input", canary=canary))
    assert out["epsilon_accountant"] == float("inf")
    assert out["epsilon_audit"] > 2.0 and out["epsilon_audit_fdp"] > out["epsilon_audit"]
    assert out["audit"]["correct"] >= 0.95 * out["audit"]["guesses"]
    every = audit_run(one_agent_dpsgd(0.0, rounds=200),
                      AuditSpec(m=500, kind="input", canary=canary, observed="every_round", score="margin"))
    assert every["messages_observed"] == 200 and every["epsilon_audit"] > 1.5


def test_canaries_are_unseen_images_with_another_label():
    prep = prepare(one_agent_dpsgd(1.0, rounds=5))
    x, y = draw_input_canaries(prep, 300, "mislabelled")
    x2, y2 = draw_input_canaries(prep, 300, "mislabelled")
    assert torch.equal(x, x2) and torch.equal(y, y2)  # drawn from the run's seed
    pool = prep.x_train[torch.as_tensor(np.concatenate(prep.parts))].flatten(1)
    flat = x.flatten(1)
    # No canary is one of the run's training images; each is a dataset image, relabelled.
    exact = "donot_use_mm_for_euclid_dist"
    assert not (torch.cdist(flat, pool, compute_mode=exact).min(1).values == 0).any()
    dist = torch.cdist(flat, prep.x_train.flatten(1), compute_mode=exact)
    true = prep.y_train[dist.argmin(1)]
    assert (dist.min(1).values == 0).all() and (true != y).all() and len(set(y.tolist())) == 10
    ood, labels = draw_input_canaries(prep, 50, "out_of_distribution")
    assert ood.shape == (50, *prep.x_train.shape[1:]) and labels.shape == (50,)
    assert ood.min() >= prep.x_train.min() and ood.max() <= prep.x_train.max()
    with pytest.raises(ValueError, match="smaller m"):
        draw_input_canaries(prep, len(prep.data.y_train) + len(prep.data.y_test), "mislabelled")


def test_the_run_is_otherwise_unchanged():
    """With every canary out the run is the plain run, bit for bit; with every canary in, the
    run's batch, noise and dropout streams end where the plain run's do (a CNN with dropout,
    whose per-sample masks the canaries' gradients draw too)."""
    torch.set_num_threads(1)
    cfg = ExperimentConfig(dataset="cifar10", model="dpdl_cnn_authors_dropout", algorithm="dp_dpsgd",
                           topology="fully_connected", n_agents=1, train_samples=64, batch_size=8, rounds=3,
                           epsilon=None, sigma_rule="fixed", sigma=1.0, clip=1.0, lr=0.1, eval_every=3,
                           per_sample_strategy="bookkeeping")

    def train(included):
        prep = prepare(cfg)
        state = prep.algorithm.init_state(prep.initial_models())
        taps = []
        if included is not None:
            x, y = draw_input_canaries(prep, 10, "mislabelled")
            taps = [InputCanaryAuditor(prep, 10, 0, x, y, np.full(10, included), q=1.0)]
            taps[0].install()
        for _ in training_rounds(prep, state, 1, cfg.rounds, taps=taps):
            pass
        streams = [g.get_state() for g in (prep.engine.dropout_generator, prep.rngs.batches, prep.rngs.noise)]
        return state["x"], streams, taps

    plain, plain_streams, _ = train(None)
    out, out_streams, _ = train(False)
    assert torch.equal(plain, out) and all(torch.equal(a, b) for a, b in zip(plain_streams, out_streams))
    inside, in_streams, (auditor,) = train(True)
    assert auditor.participations.tolist() == [3] * 10 and not torch.equal(plain, inside)
    assert all(torch.equal(a, b) for a, b in zip(plain_streams, in_streams))


def test_input_canary_scores():
    logits = np.array([[2.0, 0.0, -1.0], [0.0, 3.0, 1.0]])
    labels = np.array([0, 2])
    log_softmax = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    assert np.allclose(input_canary_scores(logits, labels), log_softmax[[0, 1], labels])
    assert np.allclose(input_canary_scores(logits, labels, "margin"), [2.0, -2.0])
    # Several models: the scores add up.
    assert np.allclose(input_canary_scores(torch.tensor(np.stack([logits, logits])), torch.tensor(labels)),
                       2 * log_softmax[[0, 1], labels])
    with pytest.raises(ValueError, match="allowed values"):
        input_canary_scores(logits, labels, "accuracy")
    with pytest.raises(ValueError, match="class indices"):
        input_canary_scores(logits, np.array([0, 3]))


def test_gradient_spec_hashes_are_unchanged():
    """The fields input canaries add are left out of the hash at their defaults: a gradient
    spec hashes as before they existed (the values below are those hashes)."""
    assert AuditSpec(m=5000).hash() == "8370d6cbc256ba75"
    assert AuditSpec().hash() == "376a46f2d9693888"
    assert AuditSpec(m=200, channel="CG", victim=1).hash() == "ecce39f9556ab513"
    spec = AuditSpec(kind="input")
    assert (spec.canary, spec.score, spec.observed) == ("mislabelled", "loss", "final")
    assert spec.hash() == AuditSpec(kind="input", canary="mislabelled", score="loss", observed="final").hash()
    assert len({spec.hash(), AuditSpec().hash(), AuditSpec(kind="input", canary="out_of_distribution").hash(),
                AuditSpec(kind="input", observed="every_round").hash()}) == 4


def test_stored_beside_a_gradient_audit_and_kept_out_of_the_answer(tmp_path):
    """Both kinds of one run are stored under their own keys; the table tells them apart and
    the answer's summary (the informed observer's audits) reads the gradient one only."""
    torch.set_num_threads(1)
    cfg = one_agent_dpsgd(2.0, rounds=5)
    gradient = audit_cached(cfg, AuditSpec(m=100), tmp_path)
    inputs = audit_cached(cfg, AuditSpec(m=100, kind="input", canary="out_of_distribution"), tmp_path)
    assert inputs["spec_hash"] != gradient["spec_hash"] and len(list(tmp_path.glob("*.json"))) == 2
    table = audit_table(tmp_path).set_index("kind")
    assert set(table.index) == {"gradient", "input (out_of_distribution, loss, final)"}
    row = table.loc["input (out_of_distribution, loss, final)"]
    assert row["channel"] == "models" and np.isnan(row["epsilon_audit_informed"])
    assert row["epsilon_audit_fdp"] == inputs["epsilon_audit_fdp"] and row["epsilon_audit"] <= row["epsilon_accountant"]
    summary = audit_summary(audit_table(tmp_path))
    assert len(summary) == 1 and summary.loc[0, "channel"] == "gradient"


def test_committed_audits_are_still_found():
    """Every committed audit resolves to its own file, and the gradient audits stored before
    input canaries existed keep their spec hash (the new fields are left out at their defaults)."""
    paths = sorted(AUDIT_DIR.glob("*.json"))
    assert paths
    kinds = set()
    for path in paths:
        record = json.loads(path.read_text())
        if "mechanism" in record:  # a paper's own audit (the token ring's: tests/test_straggler_audit.py)
            continue
        spec = AuditSpec(**record["spec"])
        kinds.add(spec.kind)
        assert audit_path(ExperimentConfig.from_dict(record["config"]), spec) == path
        assert AuditSpec(**spec.to_dict()).hash() == record["spec_hash"]
        if spec.kind == "gradient" and spec.m == 5000:
            assert record["spec_hash"] == "8370d6cbc256ba75", path
    assert "gradient" in kinds


def test_bad_kind_or_option_says_what_to_pass(capsys):
    with pytest.raises(ValueError, match=r"allowed values: \['gradient', 'input'\]"):
        AuditSpec(kind="inputs")
    with pytest.raises(ValueError, match=r"allowed values: \['mislabelled', 'out_of_distribution'\]"):
        AuditSpec(kind="input", canary="noise")
    with pytest.raises(ValueError, match="allowed values"):
        AuditSpec(kind="input", score="accuracy")
    with pytest.raises(ValueError, match="allowed values"):
        AuditSpec(kind="input", observed="first")
    with pytest.raises(ValueError, match="pass kind='input'"):
        AuditSpec(canary="mislabelled")
    with pytest.raises(ValueError, match="leave channel unset"):
        AuditSpec(kind="input", channel="CG")
    with pytest.raises(SystemExit):
        main(["--kind", "input", "--channel", "CG", "--preset", "dpdl/mnist/dpdl"])
    assert "leave channel unset" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "--kind {gradient,input}" in out and "out_of_distribution" in out
