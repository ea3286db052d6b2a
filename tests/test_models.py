import pytest
import torch

from dpdl_core.sim.models import MODELS, build_model, count_parameters

PINNED = {
    ("lenet", "mnist"): 5142,
    ("dpdl_cnn", "cifar10"): 16618,
    ("pdsl_mnist", "mnist"): 12810,
    ("pdsl_cifar", "cifar10"): 117866,
    ("leasgd_mlp", "mnist"): 235146,
    ("leasgd_cnn", "cifar10"): 94666,
    ("logreg", "mnist"): 7850,
    ("logreg", "cifar10"): 30730,
    ("dpdl_lenet_authors", "mnist"): 44426,
    ("dpdl_cnn_authors", "cifar10"): 1059306,
    ("dpdl_cnn_authors_dropout", "cifar10"): 1059306,
}


@pytest.mark.parametrize("name, dataset", list(PINNED))
def test_parameter_counts_and_output_shape(name, dataset):
    m = build_model(name, dataset)
    assert count_parameters(m) == PINNED[(name, dataset)]
    shape = (3, 1, 28, 28) if dataset == "mnist" else (3, 3, 32, 32)
    assert m(torch.zeros(shape)).shape == (3, 10)


def test_no_batchnorm_anywhere():
    for name in MODELS:
        for ds in ("mnist", "cifar10"):
            modules = build_model(name, ds).modules()
            assert not any(isinstance(mod, torch.nn.modules.batchnorm._BatchNorm) for mod in modules)


def test_seeded_init_is_reproducible_and_private():
    state = torch.random.get_rng_state()
    a, b = build_model("lenet", seed=1), build_model("lenet", seed=1)
    assert torch.equal(torch.random.get_rng_state(), state)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))


def test_unknown_model():
    with pytest.raises(ValueError, match="allowed values"):
        build_model("resnet18")
