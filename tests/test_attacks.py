"""Gradient inversion, iDLG labels, image metrics and the threat-model taps."""
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from dpdl_core.papers.dpdl import preset as paper_preset
from dpdl_core.papers.dpdl.threat_models import AttackSpec, attack_cell, intercept
from dpdl_core.sim.attacks import InversionConfig, infer_labels, invert, pixel_box, total_variation
from dpdl_core.sim.bookkeeping import has_dropout
from dpdl_core.sim.data import DATASETS
from dpdl_core.sim.engine import Engine, ParamLayout
from dpdl_core.sim.image_metrics import mse, normalised_peak, psnr, reconstruction_metrics, ssim
from dpdl_core.sim.models import MODELS, build_model

# PSNR ([0, 1] pixels) separating a recognisable reconstruction from a failed one.
THRESHOLD_DB = 15.0


def _message(model, images, labels, sigma, clip=2.0, seed=0):
    """Single-image DP message (clip(g) + z), z ~ N(0, σ²C²I), and the model's flat params."""
    eng = Engine(model)
    X = eng.initial_params(len(labels))
    sums, _ = eng.clipped_sums(X, torch.arange(len(labels)), images.unsqueeze(1), labels.unsqueeze(1), clip)
    gen = torch.Generator().manual_seed(seed)
    return X, sums + sigma * clip * torch.randn(sums.shape, generator=gen)


def _attack_psnr(mnist, sigma):
    spec = DATASETS["mnist"]
    # A small model whose clean single-image gradient determines the image (the weight
    # gradient of a linear layer is (p − y)·xᵀ), so success must not hinge on the seed.
    model = build_model("logreg", "mnist", seed=0)
    x, y = mnist.x_train[:3], mnist.y_train[:3]
    X, msg = _message(model, x, y, sigma)
    labels = infer_labels(msg, model, ParamLayout.from_module(model)).unsqueeze(1)
    res = invert(model, X, msg, labels, tuple(x.shape[1:]), pixel_box(spec.mean, spec.std),
                 InversionConfig(iterations=300, restarts=1, tv=1e-2))
    return reconstruction_metrics(res.images[:, 0], x, spec)["PSNR_01"].to_numpy()


def test_attack_recovers_clean_gradient_and_fails_under_noise(mnist):
    clean = _attack_psnr(mnist, sigma=0.0)
    noisy = _attack_psnr(mnist, sigma=1.0)
    assert (clean > THRESHOLD_DB).all(), clean
    assert (noisy < THRESHOLD_DB).all(), noisy
    assert clean.min() > noisy.max() + 5


def test_dlg_option_lowers_its_objective(mnist):
    model = build_model("lenet", "mnist", seed=0)
    x, y = mnist.x_train[:1], mnist.y_train[:1]
    X, msg = _message(model, x, y, 0.0)
    spec = DATASETS["mnist"]
    box = pixel_box(spec.mean, spec.std)
    short = invert(model, X, msg, y.unsqueeze(1), (1, 28, 28), box,
                   InversionConfig(method="dlg", lr=1.0, iterations=20, restarts=1))
    long = invert(model, X, msg, y.unsqueeze(1), (1, 28, 28), box,
                  InversionConfig(method="dlg", lr=1.0, iterations=200, restarts=1))
    assert long.objective.item() < short.objective.item()


@pytest.mark.parametrize("name", sorted(MODELS))
def test_idlg_label_rule_on_every_model(mnist, cifar, name):
    dataset = "cifar10" if name in ("dpdl_cnn", "dpdl_cnn_authors", "dpdl_cnn_authors_dropout", "pdsl_cifar",
                                    "leasgd_cnn") else "mnist"
    data = cifar if dataset == "cifar10" else mnist
    model = build_model(name, dataset, seed=1)
    # A model with dropout has its per-sample masks drawn by the book-keeping kernel only.
    eng = Engine(model, strategy="bookkeeping" if has_dropout(model) else "auto")
    eng.dropout_generator = torch.Generator().manual_seed(0)
    # One image of each class: the rule must name every class correctly.
    idx = [int(np.flatnonzero(data.y_train.numpy() == c)[0]) for c in range(10)]
    x, y = data.x_train[idx], data.y_train[idx]
    X = eng.initial_params(10)
    g = eng.batch_gradients(X, torch.arange(10), x.unsqueeze(1), y.unsqueeze(1))[0]
    assert torch.equal(infer_labels(g, model, eng.layout), y)


def test_idlg_weight_rule_without_bias():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.ReLU(), torch.nn.Linear(8, 4, bias=False))
    layout = ParamLayout.from_module(net)
    for label in range(4):
        net.zero_grad()
        F.cross_entropy(net(torch.randn(1, 5)), torch.tensor([label])).backward()
        g = torch.cat([p.grad.reshape(-1) for p in net.parameters()])
        assert infer_labels(g.unsqueeze(0), net, layout).item() == label


def test_metrics_hand_computed():
    a = torch.zeros(1, 1, 2, 2)
    b = torch.tensor([[[[1.0, 0.0], [0.0, 1.0]]]])
    assert mse(a, b).item() == pytest.approx(0.5)
    assert psnr(torch.tensor([0.01]), 1.0).item() == pytest.approx(20.0)
    assert psnr(torch.tensor([0.5]), 2.0).item() == pytest.approx(10 * math.log10(8))
    assert normalised_peak(DATASETS["mnist"]) == pytest.approx(1 / 0.3081)


def test_ssim_identity_and_ordering():
    gen = torch.Generator().manual_seed(0)
    x = torch.rand(2, 3, 32, 32, generator=gen)
    assert torch.allclose(ssim(x, x), torch.ones(2), atol=1e-6)
    slight = (x + 0.05 * torch.randn(x.shape, generator=gen)).clamp(0, 1)
    heavy = (x + 0.5 * torch.randn(x.shape, generator=gen)).clamp(0, 1)
    assert (ssim(slight, x) > ssim(heavy, x)).all()


def test_reconstruction_metrics_spaces_agree_on_mnist():
    # One channel: MSE scales by s² and the normalised peak by 1/s, so both PSNRs agree.
    spec = DATASETS["mnist"]
    gen = torch.Generator().manual_seed(1)
    truth = (torch.rand(3, 1, 28, 28, generator=gen) - spec.mean[0]) / spec.std[0]
    recon = truth + 0.3 * torch.randn(truth.shape, generator=gen)
    m = reconstruction_metrics(recon.clamp(-spec.mean[0] / spec.std[0], (1 - spec.mean[0]) / spec.std[0]), truth, spec)
    assert np.allclose(m["MSE_01"], m["MSE"] * spec.std[0] ** 2, rtol=1e-5)
    assert np.allclose(m["PSNR"], m["PSNR_01"], atol=1e-4)


def test_total_variation_of_constant_and_step():
    flat = torch.ones(1, 1, 1, 4, 4)
    step = torch.zeros(1, 1, 1, 4, 4)
    step[..., :, 2:] = 1.0
    assert total_variation(flat).item() == 0
    assert total_variation(step).item() == pytest.approx(4 / 12)


def test_config_errors_name_the_field():
    with pytest.raises(ValueError, match="method"):
        InversionConfig(method="lbfgs")
    with pytest.raises(ValueError, match="iterations"):
        InversionConfig(iterations=0)
    with pytest.raises(ValueError, match="mm_target"):
        AttackSpec(rounds=(1,), mm_target="delta")
    with pytest.raises(ValueError, match="attack_batch"):
        AttackSpec(rounds=(1,), attack_batch=2)


def _tiny(**changes):
    base = dict(n_agents=4, rounds=3, batch_size=8, train_samples=800, eval_samples=50, eval_every=3)
    base.update(changes)
    return paper_preset("mnist", "bipartite", **base)


def test_intercepted_cross_gradient_is_the_victims_clipped_gradient():
    cfg = _tiny(epsilon=None)
    found, meta = intercept(cfg, AttackSpec(rounds=(2,), n_victims=2))
    cg = [it for it in found if it.channel == "CG"]
    assert {it.victim for it in cg} == set(meta["victims"]) and all(it.round == 2 for it in found)
    model = build_model("lenet", "mnist", seed=0)
    layout = ParamLayout.from_module(model)
    for it in cg:
        params = {k: v.clone().requires_grad_(True) for k, v in layout.unflatten(it.model).items()}
        loss = F.cross_entropy(torch.func.functional_call(model, params, (it.images,)), it.labels)
        g = torch.cat([t.reshape(-1) for t in torch.autograd.grad(loss, list(params.values()))])
        expected = g * min(1.0, cfg.clip / g.norm().item())
        assert torch.allclose(it.message, expected, atol=1e-5)


def test_mm_innovation_is_the_aggregated_gradient_without_noise():
    # With σ = 0 and round 1 (v = 0), the innovation equals ṽ itself: a mix of the
    # victim's clean self-gradient and its neighbours' cross-gradients at x_i.
    cfg = _tiny(epsilon=None)
    found, _ = intercept(cfg, AttackSpec(rounds=(1,), n_victims=1))
    diff, _ = intercept(cfg, AttackSpec(rounds=(1,), n_victims=1, mm_target="difference"))
    mm = [it for it in found if it.channel == "MM"][0]
    mm_diff = [it for it in diff if it.channel == "MM"][0]
    assert torch.allclose(mm.message, mm_diff.message)
    assert mm.message.norm() > 0


def test_tapping_does_not_change_training():
    cfg = _tiny(epsilon=0.5, sigma_rule="authors_code")
    a, _ = intercept(cfg, AttackSpec(rounds=(1, 3), n_victims=1))
    b, _ = intercept(cfg, AttackSpec(rounds=(3,), n_victims=1))
    # Round 3's tap sees the same state whether or not round 1 was tapped.
    a3 = [it for it in a if it.round == 3]
    assert len(a3) == len(b) > 0 and len(a) > len(a3)  # round 1 was tapped too
    for x, y in zip(a3, b):
        assert torch.equal(x.model, y.model) and torch.equal(x.message, y.message)


def test_attack_cell_caches_and_resumes(store):
    cfg = _tiny(epsilon=0.5, sigma_rule="authors_code", rounds=2)
    spec = AttackSpec(rounds=(2,), n_victims=1, inversion=InversionConfig(iterations=5, restarts=1))
    first = attack_cell(cfg, spec, store=store)
    assert set(first.metrics["scenario"]) == {"ND-CG", "ND-MM", "DPDL-CG", "DPDL-MM"}
    assert first.meta["sigma"]["True"] > 0 and first.meta["sigma"]["False"] == 0
    files = list((store.root / "attacks").glob("*.pt"))
    assert len(files) == 1
    again = attack_cell(cfg, spec, store=store)
    assert again.metrics.equals(first.metrics)
    with pytest.raises(ValueError, match="epsilon"):
        attack_cell(cfg.replace(epsilon=None), spec, store=store)


def test_attack_cell_shows_progress_in_a_log(store, monkeypatch, capsys):
    # A study's attack cell trains for an hour or more before its inversion: where stderr
    # is a log (a background `study run`), both must print progress lines, and a resumed
    # cell must say which training it loaded instead of repeating it.
    monkeypatch.setenv("DPDL_PROGRESS", "log")
    cfg = _tiny(epsilon=0.5, sigma_rule="authors_code", rounds=2)
    spec = AttackSpec(rounds=(2,), n_victims=1, inversion=InversionConfig(iterations=5, restarts=1))
    from dpdl_core.papers.dpdl import threat_models

    slot = threat_models._slot(store, "cell")
    threat_models._intercepted(cfg.replace(epsilon=None, sigma_rule="fixed", sigma=0.0), spec, slot, "nd",
                               progress=None)
    err = capsys.readouterr().err
    assert "attack training (no defence) round 2/2, loss" in err
    threat_models._intercepted(cfg.replace(epsilon=None, sigma_rule="fixed", sigma=0.0), spec, slot, "nd",
                               progress=None)
    assert "attack training (no defence) finished before: loaded from" in capsys.readouterr().err
    attack_cell(cfg, spec, store=store, progress=None)
    err = capsys.readouterr().err
    assert "attack training (DPDL, eps 0.5) round 2/2" in err
    assert "inversion (geiping, 4 messages x 1 restarts) iteration 5/5" in err
    monkeypatch.setenv("DPDL_PROGRESS", "0")
    attack_cell(cfg, spec, store=store, progress=None, force=True)
    assert capsys.readouterr().err == ""
