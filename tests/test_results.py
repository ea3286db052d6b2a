import os

import pandas as pd
import pytest

from dpdl_core.runs import results as R
from dpdl_core.runs.config import ExperimentConfig


def _hist(v=1.0):
    return pd.DataFrame({"round": [1, 1, 2], "agent": [0, -1, 0], "metric": ["a", "b", "a"], "value": [v, 2.0, 3.0]})


def test_save_load_roundtrip(store):
    cfg = ExperimentConfig()
    store.save(cfg.hash, cfg.to_dict(), _hist(), {"sigma_mean": 1.5})
    header, hist = store.load_run(cfg.hash)
    assert header["config"] == cfg.to_dict() and header["meta"]["sigma_mean"] == 1.5
    pd.testing.assert_frame_equal(hist, _hist())


def test_load_filters_by_config_fields(store):
    for eps in (0.5, 1.0, None):
        cfg = ExperimentConfig(epsilon=eps)
        store.save(cfg.hash, cfg.to_dict(), _hist(), {})
    df = store.load(epsilon=[0.5, 1.0], metrics=["a"])
    assert set(df["epsilon"]) == {0.5, 1.0} and set(df["metric"]) == {"a"}
    assert len(store.load(epsilon=None)) == 3
    with pytest.raises(KeyError, match="unknown filter field"):
        store.load(colour="red")


def test_atomic_write_keeps_old_file_on_failure(store, monkeypatch):
    cfg = ExperimentConfig()
    store.save(cfg.hash, cfg.to_dict(), _hist(1.0), {})
    before = store.path(cfg.hash).read_bytes()

    def boom(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(R.os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        store.save(cfg.hash, cfg.to_dict(), _hist(9.0), {})
    assert store.path(cfg.hash).read_bytes() == before
    assert [p.name for p in store.root.iterdir()] == [store.path(cfg.hash).name]  # no temp left


def test_identical_results_are_identical_bytes(store, tmp_path):
    cfg = ExperimentConfig()
    store.save(cfg.hash, cfg.to_dict(), _hist(), {})
    other = R.ResultStore(tmp_path / "other")
    other.save(cfg.hash, cfg.to_dict(), _hist(), {})
    assert store.path(cfg.hash).read_bytes() == other.path(cfg.hash).read_bytes()


def test_default_dir_env(monkeypatch, tmp_path):
    monkeypatch.setenv("DPDL_RESULTS_DIR", str(tmp_path))
    assert R.default_results_dir() == tmp_path
    assert os.fspath(R.ResultStore().root) == os.fspath(tmp_path)
