import json

import numpy as np
import pytest
import torch

from dpdl_core.sim import data as D


def test_mirror_files_follow_schema(mnist, cifar):
    assert mnist.x_train.shape[1:] == (1, 28, 28) and cifar.x_train.shape[1:] == (3, 32, 32)
    assert mnist.y_train.dtype == torch.int64
    assert mnist.meta["subset"] is True and mnist.meta["n_train"] == len(mnist.y_train) == 17435
    assert len(mnist.y_test) == 10000 and cifar.meta["n_train"] == 5085
    assert mnist.label == "MNIST subset, 17,435 train images"
    assert cifar.label == "CIFAR-10 subset, 5,085 train images"


def test_normalization_statistics(mnist, cifar):
    # The subsets are a large real sample: normalized pixels have mean ~0, std ~1.
    assert abs(mnist.x_train.mean().item()) < 0.02 and abs(mnist.x_train.std().item() - 1) < 0.02
    m = cifar.x_train.mean(dim=(0, 2, 3))
    s = cifar.x_train.std(dim=(0, 2, 3))
    assert torch.all(m.abs() < 0.03) and torch.all((s - 1).abs() < 0.03)
    raw = D.denormalize(mnist.x_train[:5], mnist.spec)
    assert raw.min() >= -1e-6 and raw.max() <= 1 + 1e-6


def test_npz_roundtrip_and_schema_errors(tmp_path):
    arrays = {
        "x_train": np.zeros((3, 28, 28), np.uint8),
        "y_train": np.arange(3),
        "x_test": np.zeros((2, 28, 28), np.uint8),
        "y_test": np.arange(2),
    }
    meta = {"name": "mnist", "subset": True, "n_train": 3, "n_test": 2, "note": "t"}
    D.write_npz(tmp_path / "mnist.npz", arrays, meta)
    got, m = D.read_npz(tmp_path / "mnist.npz", "mnist")
    assert m == meta and got["x_train"].shape == (3, 28, 28)
    bad = dict(arrays, x_train=np.zeros((3, 28, 28), np.float32))
    np.savez(tmp_path / "bad.npz", **bad, meta=json.dumps(meta))
    with pytest.raises(ValueError, match="x_train must be uint8"):
        D.read_npz(tmp_path / "bad.npz", "mnist")
    np.savez(tmp_path / "missing.npz", x_train=arrays["x_train"])
    with pytest.raises(ValueError, match="missing keys"):
        D.read_npz(tmp_path / "missing.npz", "mnist")


def test_no_cache_no_mirror_no_network_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.delenv("DPDL_DATA_MIRROR", raising=False)

    def offline(*a, **k):
        raise OSError("network unreachable")

    monkeypatch.setattr(D.acquisition, "_download_torchvision", offline)
    with pytest.raises(D.DataUnavailableError) as err:
        D.load_dataset("mnist", data_dir=tmp_path)
    msg = str(err.value)
    assert "DPDL_DATA_MIRROR" in msg and "network unreachable" in msg and "mnist.npz" in msg


def test_unknown_dataset_names_allowed_values():
    with pytest.raises(ValueError, match="allowed values"):
        D.load_dataset("svhn")


@pytest.mark.parametrize("scheme", ["per_agent", "per_class"])
def test_partition_disjoint_nonempty_seeded(mnist, scheme):
    y = mnist.y_train.numpy()
    parts = D.dirichlet_partition(y, 20, 0.25, seed=3, scheme=scheme)
    allidx = np.concatenate(parts)
    assert len(allidx) == len(np.unique(allidx))
    assert min(len(p) for p in parts) > 0
    again = D.dirichlet_partition(y, 20, 0.25, seed=3, scheme=scheme)
    assert all(np.array_equal(a, b) for a, b in zip(parts, again))
    other = D.dirichlet_partition(y, 20, 0.25, seed=4, scheme=scheme)
    assert not all(np.array_equal(a, b) for a, b in zip(parts, other))
    if scheme == "per_agent":
        assert {len(p) for p in parts} == {len(y) // 20}
    else:
        assert len(allidx) == len(y)


@pytest.mark.parametrize("scheme", ["per_agent", "per_class"])
def test_skew_grows_as_alpha_falls(mnist, scheme):
    y = mnist.y_train.numpy()
    ent = []
    for alpha in (0.1, 0.25, 1.0, 10.0):
        vals = [
            D.mean_label_entropy(D.label_counts(y, D.dirichlet_partition(y, 10, alpha, seed=s, scheme=scheme)))
            for s in range(3)
        ]
        ent.append(np.mean(vals))
    assert all(a < b for a, b in zip(ent, ent[1:])), ent
    assert ent[-1] > 2.1  # near uniform over 10 classes (ln 10 = 2.30)


def test_label_counts_table(mnist):
    y = mnist.y_train.numpy()
    parts = D.dirichlet_partition(y, 5, 1.0, seed=0)
    counts = D.label_counts(y, parts)
    assert counts.shape == (5, 10) and counts.to_numpy().sum() == sum(len(p) for p in parts)


def test_partition_rejects_bad_inputs():
    y = np.repeat(np.arange(10), 10)
    with pytest.raises(ValueError, match="allowed values"):
        D.dirichlet_partition(y, 5, 0.5, seed=0, scheme="iid")
    with pytest.raises(ValueError, match="alpha"):
        D.dirichlet_partition(y, 5, 0.0, seed=0)


def test_validation_split():
    val, test = D.validation_split(10000, 2000, seed=1)
    assert len(val) == 2000 and len(test) == 8000
    assert len(np.intersect1d(val, test)) == 0 and len(np.union1d(val, test)) == 10000


def test_mirror_that_is_not_a_folder_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("DPDL_DATA_MIRROR", str(tmp_path / "nowhere"))
    with pytest.raises(D.DataUnavailableError, match="DATA_MIRROR"):
        D.load_dataset("mnist", data_dir=tmp_path)


def test_validation_split_is_disjoint_and_covers_the_test_set():
    val, rest = D.validation_split(100, 20, seed=1)
    assert len(val) == 20 and len(rest) == 80 and not set(val) & set(rest)
    assert sorted([*val, *rest]) == list(range(100))
