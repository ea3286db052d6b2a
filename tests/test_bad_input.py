"""Bad data files, mirrors, graphs and partitions: each a clear error saying what is wrong
and what to do next.

Every mirror here is built in ``tmp_path`` and named through ``$DPDL_DATA_MIRROR`` with
``monkeypatch``; ``load_dataset`` has no cache of its own (the runner's ``_dataset`` cache
is bypassed by calling it directly), and ``download=False`` keeps torchvision out.
"""
import json
import zipfile

import networkx as nx
import numpy as np
import pytest
import torch
from guarantees import record
from hypothesis import given, settings
from hypothesis import strategies as st

from dpdl_core.runs.config import ConfigError, ExperimentConfig
from dpdl_core.runs.runner import prepare
from dpdl_core.sim import data as D
from dpdl_core.sim.data import DATASETS
from dpdl_core.sim.topology import MIN_AGENTS, TopologyError, make_topology

META = {"name": "mnist", "subset": True, "n_train": 4, "n_test": 3, "note": "test"}


def good_arrays() -> dict:
    rng = np.random.default_rng(0)
    return {
        "x_train": rng.integers(0, 256, (4, 28, 28), dtype=np.uint8),
        "y_train": np.array([0, 3, 9, 1], dtype=np.int64),
        "x_test": rng.integers(0, 256, (3, 28, 28), dtype=np.uint8),
        "y_test": np.array([2, 2, 5], dtype=np.int64),
    }


@pytest.fixture
def mirror(tmp_path, monkeypatch):
    """An empty mirror folder named by $DPDL_DATA_MIRROR, and an empty cache folder."""
    folder = tmp_path / "mirror"
    folder.mkdir()
    monkeypatch.setenv("DPDL_DATA_MIRROR", str(folder))
    return folder


def load(tmp_path):
    return D.load_dataset("mnist", data_dir=tmp_path / "cache", download=False)


def test_good_tiny_mirror_loads(tmp_path, mirror):
    D.write_npz(mirror / "mnist.npz", good_arrays(), META)
    data = load(tmp_path)
    assert data.x_train.shape == (4, 1, 28, 28) and data.meta["source"] == str(mirror / "mnist.npz")


# -- damaged and malformed npz files -------------------------------------------------------------
@pytest.mark.parametrize("keep", [0, 10, 100, 0.5, 0.9, -1])
def test_truncated_mirror_file_says_damaged_and_recopy(tmp_path, mirror, keep):
    D.write_npz(tmp_path / "good.npz", good_arrays(), META)
    raw = (tmp_path / "good.npz").read_bytes()
    cut = int(len(raw) * keep) if isinstance(keep, float) else keep % len(raw)
    (mirror / "mnist.npz").write_bytes(raw[:cut])
    with pytest.raises(D.DataFileError) as err:
        load(tmp_path)
    msg = str(err.value)
    assert str(mirror / "mnist.npz") in msg and "damaged" in msg and "re-copy the mirror" in msg
    assert "DPDL_DATA_MIRROR" in msg


def test_truncated_copy_of_the_real_mirror(tmp_path, monkeypatch):
    """The realistic failure: a copy of the shared mirror's file cut short."""
    real = D.mirror_dir()  # conftest names ../shared/data when it exists
    if real is None or not (real / "mnist.npz").exists():
        pytest.skip("no offline mirror on this machine")
    folder = tmp_path / "mirror"
    folder.mkdir()
    with open(real / "mnist.npz", "rb") as f:
        (folder / "mnist.npz").write_bytes(f.read(1 << 20))
    monkeypatch.setenv("DPDL_DATA_MIRROR", str(folder))
    with pytest.raises(D.DataFileError, match=r"damaged or not an npz file.*re-copy the mirror"):
        load(tmp_path)


@settings(max_examples=60, derandomize=True, database=None, deadline=None)
@given(st.data())
def test_any_truncation_or_flipped_byte_is_a_data_file_error(tmp_path_factory, data):
    """Fuzz: cut the file anywhere, or flip any byte; read_npz either reads a valid file
    (a flip the zip format cannot see) or raises DataFileError, never another type."""
    record("npz corruptions tried")
    folder = tmp_path_factory.mktemp("fuzz")
    D.write_npz(folder / "good.npz", good_arrays(), META)
    raw = bytearray((folder / "good.npz").read_bytes())
    if data.draw(st.booleans(), label="truncate"):
        raw = raw[: data.draw(st.integers(0, len(raw) - 1), label="keep")]
    else:
        at = data.draw(st.integers(0, len(raw) - 1), label="at")
        raw[at] ^= data.draw(st.integers(1, 255), label="xor")
    (folder / "mnist.npz").write_bytes(bytes(raw))
    try:
        arrays, _ = D.read_npz(folder / "mnist.npz", "mnist", fix="re-copy it")
    except D.DataFileError as exc:
        assert str(folder / "mnist.npz") in str(exc) and "re-copy it" in str(exc)
    else:
        assert all(arrays[k].shape[0] > 0 for k in arrays) and 0 <= arrays["y_train"].min()


def _without(key):
    return lambda arrays: {k: v for k, v in arrays.items() if k != key}


def _set(key, value):
    return lambda arrays: {**arrays, key: value}


@pytest.mark.parametrize(
    "change, words",
    [
        (_without("x_train"), ["missing keys ['x_train']", "expected"]),
        (_without("y_test"), ["missing keys ['y_test']"]),
        (_without("meta"), ["missing keys ['meta']"]),
        (_set("x_train", np.zeros((4, 28, 27), np.uint8)),
         ["x_train must be uint8 of shape (n, 28, 28)", "(4, 28, 27)"]),
        (_set("x_train", np.zeros((4, 32, 32, 3), np.uint8)), ["x_train", "(n, 28, 28)"]),
        (_set("x_test", np.zeros((3, 28, 28), np.float32)), ["x_test must be uint8", "float32"]),
        (_set("x_train", np.zeros((0, 28, 28), np.uint8)), ["x_train holds no images"]),
        (_set("y_train", np.zeros(5, np.int64)), ["y_train has shape (5,), expected (4,)"]),
        (_set("y_train", np.zeros((4, 1), np.int64)), ["y_train has shape (4, 1)"]),
        (_set("y_test", np.array([2.0, 2.5, 5.0])), ["y_test must hold integer class indices", "float64"]),
        (_set("y_test", np.array(["a", "b", "c"])), ["y_test must hold integer"]),
        (_set("y_train", np.array([0, 3, 10, 1])), ["y_train", "outside the classes 0..9", "y_train[2] = 10"]),
        (_set("y_test", np.array([2, -1, 5])), ["y_test", "outside the classes 0..9", "y_test[1] = -1"]),
        (_set("meta", "not json {"), ["meta is not valid JSON"]),
        (_set("meta", json.dumps([1, 2])), ["meta must be a JSON object", "list"]),
        (_set("meta", json.dumps({**META, "name": "cifar10"})), ["meta names dataset 'cifar10'", "'mnist'"]),
        (_set("meta", np.arange(3)), ["meta must be a JSON string"]),
    ],
)
def test_wrong_schema_names_the_file_and_the_field(tmp_path, mirror, change, words):
    np.savez(mirror / "mnist.npz", **change({**good_arrays(), "meta": json.dumps(META)}))
    with pytest.raises(D.DataFileError) as err:
        load(tmp_path)
    msg = str(err.value)
    assert isinstance(err.value, ValueError) and str(mirror / "mnist.npz") in msg and "re-copy the mirror" in msg
    assert all(w in msg for w in words), msg


def test_pickled_object_arrays_are_refused_not_loaded(tmp_path, mirror):
    arrays = good_arrays()
    arrays["y_train"] = np.array([0, 1, None, 3], dtype=object)
    np.savez(mirror / "mnist.npz", **arrays, meta=json.dumps(META))
    with pytest.raises(D.DataFileError, match="damaged or not an npz"):
        load(tmp_path)


def test_not_an_npz_at_all(tmp_path, mirror):
    (mirror / "mnist.npz").write_text("<html>404 Not Found</html>")
    with pytest.raises(D.DataFileError, match="damaged or not an npz file"):
        load(tmp_path)
    (mirror / "mnist.npz").unlink()
    (mirror / "mnist.npz").mkdir()  # a folder where the file should be
    with pytest.raises(D.DataFileError, match="damaged or not an npz file"):
        load(tmp_path)


def test_damaged_cache_says_delete_it(tmp_path, monkeypatch):
    monkeypatch.delenv("DPDL_DATA_MIRROR", raising=False)
    cache = tmp_path / "cache"
    cache.mkdir()
    with zipfile.ZipFile(cache / "mnist.npz", "w") as z:
        z.writestr("x_train.npy", b"\x93NUMPY garbage")
    with pytest.raises(D.DataFileError) as err:
        load(tmp_path)
    msg = str(err.value)
    assert str(cache / "mnist.npz") in msg and "delete" in msg and "cache" in msg


# -- the mirror folder ---------------------------------------------------------------------------
def test_mirror_folder_that_does_not_exist(tmp_path, monkeypatch):
    monkeypatch.setenv("DPDL_DATA_MIRROR", str(tmp_path / "no" / "such" / "folder"))
    with pytest.raises(D.DataUnavailableError) as err:
        load(tmp_path)
    msg = str(err.value)
    assert str(tmp_path / "no" / "such" / "folder") in msg and "is not a folder" in msg
    assert "unset it" in msg and "mnist.npz" in msg


def test_mirror_that_is_a_file(tmp_path, monkeypatch):
    (tmp_path / "file").write_text("x")
    monkeypatch.setenv("DPDL_DATA_MIRROR", str(tmp_path / "file"))
    with pytest.raises(D.DataUnavailableError, match="is not a folder"):
        load(tmp_path)


def test_mirror_without_the_file_lists_what_was_tried(tmp_path, mirror):
    with pytest.raises(D.DataUnavailableError) as err:
        load(tmp_path)
    msg = str(err.value)
    assert str(mirror / "mnist.npz") in msg and "(absent)" in msg and "DPDL_DATA_MIRROR" in msg
    assert "torchvision download (disabled)" in msg


def test_command_line_run_with_a_damaged_mirror_exits_2(tmp_path, mirror, monkeypatch, capsys):
    from dpdl_core.cli import main
    from dpdl_core.runs import runner

    (mirror / "mnist.npz").write_bytes(b"PK\x03\x04 cut short")
    monkeypatch.setenv("DPDL_DATA_DIR", str(tmp_path / "cache"))
    runner._dataset.cache_clear()  # an earlier test may hold the real MNIST in the runner's cache
    code = main(["run", "--set", "rounds=1", "--results", str(tmp_path / "results"), "--force"])
    runner._dataset.cache_clear()
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: ") and "re-copy the mirror" in err and "Traceback" not in err


# -- graphs --------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", [t for t, m in MIN_AGENTS.items() if m > 1])
def test_topology_too_small_names_n_agents_and_the_minimum(name):
    need = MIN_AGENTS[name]
    for n in range(1, need):
        with pytest.raises(TopologyError) as err:
            make_topology(name, n)
        msg = str(err.value)
        assert f"n_agents >= {need}" in msg and f"n_agents={n}" in msg and "fully_connected" in msg
    assert make_topology(name, need).n_agents == need


@pytest.mark.parametrize("n", [0, -3, None, 2.5, "4", True])
def test_topology_n_agents_must_be_a_positive_integer(n):
    with pytest.raises(TopologyError, match=r"n_agents=.* must be an integer >= 1"):
        make_topology("fully_connected", n)


def test_topology_accepts_numpy_integers_and_rejects_unknown_names():
    assert make_topology("ring", np.int64(5)).n_agents == 5
    for name in ("torus", ["ring"], None):
        with pytest.raises(TopologyError, match=r"allowed values: \['fully_connected', 'bipartite', 'ring'\]"):
            make_topology(name, 5)
    with pytest.raises(TopologyError, match="not connected"):
        make_topology(nx.empty_graph(2))


# -- partitions ----------------------------------------------------------------------------------
LABELS = np.repeat(np.arange(10), 3)


@pytest.mark.parametrize("alpha", [0, -0.5, float("nan"), float("inf"), "1", None, True])
def test_partition_alpha_must_be_finite_and_positive(alpha):
    with pytest.raises(ValueError) as err:
        D.dirichlet_partition(LABELS, 3, alpha, seed=0)
    assert "alpha" in str(err.value) and "alpha_d" in str(err.value) and "> 0" in str(err.value)


@pytest.mark.parametrize("n_agents", [0, 31, 10**6, 2.0, "3", None])
def test_partition_n_agents_between_one_and_the_samples(n_agents):
    with pytest.raises(ValueError) as err:
        D.dirichlet_partition(LABELS, n_agents, 1.0, seed=0)
    msg = str(err.value)
    assert "n_agents" in msg and "between 1 and the 30 training samples" in msg and "train_samples" in msg


def test_validation_split_names_the_config_field():
    with pytest.raises(ValueError, match=r"validation_samples.*n_test-1=1016"):
        D.validation_split(1017, 2000, seed=0)


def test_more_agents_than_the_loaded_samples_fails_before_training():
    """The mirror may hold fewer images than the full dataset the config checks against:
    the runner's partition then names n_agents and the samples it has."""
    spec = DATASETS["mnist"]
    tiny = D.Dataset(spec, torch.zeros(20, 1, 28, 28), torch.arange(20) % 10, torch.zeros(5, 1, 28, 28),
                     torch.arange(5), {"name": "mnist", "subset": True, "n_train": 20, "n_test": 5})
    cfg = ExperimentConfig(topology="fully_connected", n_agents=25, epsilon=None, rounds=1)
    with pytest.raises(ValueError, match=r"n_agents=25 must be an integer between 1 and the 20 training samples"):
        prepare(cfg, data=tiny)


# -- the same limits, caught by the config before any data is read --------------------------------
@pytest.mark.parametrize(
    "changes, words",
    [
        ({"topology": "ring", "n_agents": 2}, ["n_agents >= 3", "ring"]),
        ({"topology": "bipartite", "n_agents": 1}, ["n_agents >= 2", "bipartite"]),
        ({"schedule": "random_ring", "topology": "fully_connected", "n_agents": 2}, ["random_ring", "n_agents >= 3"]),
        ({"n_agents": 20, "train_samples": 10}, ["n_agents=20", "train_samples=10", "n_agents <= 10"]),
        ({"dataset": "cifar10", "n_agents": 50_001}, ["n_agents=50001", "50000 training images", "CIFAR-10"]),
        ({"validation_samples": 10_000}, ["validation_samples=10000", "< 10000"]),
        ({"alpha_d": 0}, ["alpha_d=0", "> 0"]),
        ({"alpha_d": -1.0}, ["alpha_d=-1.0", "> 0"]),
        ({"alpha_d": float("inf")}, ["alpha_d=inf", "finite"]),
    ],
)
def test_config_rejects_sizes_no_run_could_use(changes, words):
    with pytest.raises(ConfigError) as err:
        ExperimentConfig(**changes)
    assert all(w in str(err.value) for w in words), str(err.value)
