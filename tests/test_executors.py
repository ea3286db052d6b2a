"""Sweep executors: the Ray executor stores what the local one stores, retries a task whose
worker died without storing anything twice, and says how to install Ray when it is missing."""
import importlib.util
import os
import sys
import uuid
from pathlib import Path

import pandas as pd
import pytest

from dpdl_core.runs.config import ExperimentConfig
from dpdl_core.runs.executors import LocalExecutor, RayExecutor, execute, get_executor, import_ray
from dpdl_core.runs.results import ResultStore
from dpdl_core.runs.sweep import Grid, expand, run_sweep

HAVE_RAY = importlib.util.find_spec("ray") is not None
needs_ray = pytest.mark.skipif(not HAVE_RAY, reason="ray is not installed (pip install -e .[cluster]); Ray executor "
                                                    "tests skipped")

# Tiny runs (as tests/test_sweep.py): two algorithms x two seeds, a few seconds each.
BASE = dict(n_agents=3, batch_size=8, train_samples=300, rounds=3, eval_every=3, eval_samples=100, epsilon=None)
CONFIGS = expand(Grid({"algorithms": ["dpdl", "dp_dpsgd"], "seeds": [0, 1]}, BASE))


@pytest.fixture(scope="module")
def ray_local():
    """One local Ray for the module (start-up takes seconds): 2 CPUs, no dashboard."""
    if not HAVE_RAY:
        pytest.skip("ray is not installed (pip install -e .[cluster])")
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


@pytest.fixture(scope="module")
def local_store(tmp_path_factory):
    """The four runs through the local executor, in this process (no worker start-up) with
    one torch thread, as each Ray task on 2 CPUs gets: the thread count can change the
    floating-point sums, so it is kept equal on both sides."""
    import torch

    store = ResultStore(tmp_path_factory.mktemp("local") / "results")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        run_sweep(CONFIGS, store=store, executor=LocalExecutor(workers=1))
    finally:
        torch.set_num_threads(threads)
    return store


def assert_same_runs(store: ResultStore, reference: ResultStore) -> None:
    """Every run of ``reference`` is in ``store`` once, with the identical history."""
    assert store.hashes() == reference.hashes() == sorted(c.hash for c in CONFIGS)
    for h in reference.hashes():
        head, hist = store.load_run(h)
        ref_head, ref_hist = reference.load_run(h)
        assert head["config"] == ref_head["config"]
        pd.testing.assert_frame_equal(hist, ref_hist, check_exact=True)
        assert not hist.duplicated(["round", "agent", "metric"]).any()
        drop = {"wall_seconds", "stacked_runs"}  # how it ran, not what it computed
        assert {k: v for k, v in head["meta"].items() if k not in drop} == \
               {k: v for k, v in ref_head["meta"].items() if k not in drop}


@needs_ray
def test_ray_stores_the_histories_the_local_executor_stores(ray_local, local_store, tmp_path):
    store = ResultStore(tmp_path / "results")
    done = run_sweep(CONFIGS, store=store, executor="ray")
    assert done == [c.hash for c in CONFIGS]
    assert_same_runs(store, local_store)


@needs_ray
def test_failed_runs_are_reported_after_the_others_are_stored(ray_local, tmp_path):
    store = ResultStore(tmp_path / "results")
    bad = CONFIGS[0].hash

    def task(cfg_dicts, threads):
        if any(ExperimentConfig.from_dict(d).hash == bad for d in cfg_dicts):
            raise ValueError("a deterministic failure: not retried")
        return execute(cfg_dicts, threads)

    with pytest.raises(RuntimeError, match=f"1 of 2 run.*failed.*{bad}"):
        run_sweep(CONFIGS[:2], store=store, executor=RayExecutor(task=task))
    assert store.hashes() == [CONFIGS[1].hash]


def dying_task(folder: Path):
    """A task body that logs every attempt in ``folder`` and kills its worker process the
    first time any task starts (``os._exit``: no exception, no result, as a lost node)."""
    folder = str(folder)

    def task(cfg_dicts, threads):
        h = "+".join(ExperimentConfig.from_dict(d).hash for d in cfg_dicts)
        Path(folder, f"attempt-{h}-{uuid.uuid4().hex}").touch()
        try:
            fd = os.open(os.path.join(folder, "killed"), os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return execute(cfg_dicts, threads)
        os.write(fd, h.encode())
        os.close(fd)
        os._exit(1)

    return task


@needs_ray
def test_a_killed_task_is_retried_and_an_interrupted_sweep_resumes(ray_local, local_store, tmp_path):
    store = ResultStore(tmp_path / "results")
    # An interrupted sweep: one run is already stored; only the other three are sent.
    first = CONFIGS[0].hash
    head, hist = local_store.load_run(first)
    store.save(first, head["config"], hist, head["meta"])
    log = tmp_path / "attempts"
    log.mkdir()
    run_sweep(CONFIGS, store=store, executor=RayExecutor(task=dying_task(log), max_retries=2))

    killed = (log / "killed").read_text()
    attempts = pd.Series([p.name.split("-")[1] for p in log.glob("attempt-*")]).value_counts().to_dict()
    assert killed in {c.hash for c in CONFIGS[1:]}
    assert attempts == {c.hash: 2 if c.hash == killed else 1 for c in CONFIGS[1:]}, "the stored run was not resent"
    assert_same_runs(store, local_store)
    journal = store.journal()
    assert sorted(journal.loc[journal["event"] == "stored", "hash"]) == sorted(c.hash for c in CONFIGS[1:])


def test_ray_resources_per_task(monkeypatch):
    monkeypatch.delenv("DPDL_THREADS", raising=False)
    ray = RayExecutor(threads=None, gpus_per_task=0.5)
    cpu, cuda, auto = (CONFIGS[0].replace(device=d) for d in ("cpu", "cuda", "auto"))
    assert [ray.task_gpus(c, cluster_gpus=2) for c in (cpu, cuda, auto)] == [0.0, 0.5, 0.5]
    assert [ray.task_gpus(c, cluster_gpus=0) for c in (cpu, cuda, auto)] == [0.0, 0.5, 0.0]
    assert ray.task_threads(n_tasks=4, cluster_cpus=16) == 4
    assert ray.task_threads(n_tasks=100, cluster_cpus=16) == 1
    assert RayExecutor(threads=3).task_threads(n_tasks=1, cluster_cpus=64) == 3


def test_what_is_left_of_a_sweep_runs_as_the_whole_sweep_did(monkeypatch, tmp_path):
    """One run left of a two-worker sweep (after an interruption) still goes to a worker
    process with the whole sweep's torch threads, not to this process with its own: on an
    AVX2 CPU the thread count changes a run's last bits, and the resumed sweep must store what
    the uninterrupted one would have (tests/test_durability.py kills real sweeps)."""
    from concurrent.futures import Future

    import dpdl_core.runs.executors as ex
    import dpdl_core.runs.runner as runner

    calls = []

    class Pool:
        """A process pool that records its tasks and runs none."""

        def __init__(self, workers, mp_context=None):
            calls.append(("pool", workers))

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def submit(self, fn, cfg_dicts, root, threads):
            calls.append(("task", len(cfg_dicts), threads))
            fut = Future()
            fut.set_result([])
            return fut

    monkeypatch.setattr(ex, "ProcessPoolExecutor", Pool)
    monkeypatch.setattr(runner, "run_stack", lambda stack, **kw: calls.append(("here", len(stack))))
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    store, executor = ResultStore(tmp_path), LocalExecutor(workers=2)
    assert executor.pool(len(ex.plan_stacks(CONFIGS, workers=2))) == (2, 1)  # the whole sweep: 2 workers x 1 thread
    executor.prepare(CONFIGS)
    executor.run(CONFIGS[:1], store, lambda cfg: None)
    assert calls == [("pool", 1), ("task", 1, 1)]
    # Told nothing (a direct call, or the next call after a sweep), one run is run here.
    calls.clear()
    executor.run(CONFIGS[:1], store, lambda cfg: None)
    assert calls == [("here", 1)]


def test_executor_choice(monkeypatch):
    monkeypatch.delenv("DPDL_EXECUTOR", raising=False)
    assert isinstance(get_executor(), LocalExecutor) and get_executor(workers=3).workers == 3
    monkeypatch.setenv("DPDL_EXECUTOR", "ray")
    assert isinstance(get_executor(), RayExecutor)
    mine = RayExecutor(threads=2)
    assert get_executor(mine) is mine
    with pytest.raises(ValueError, match="allowed values"):
        get_executor("slurm")


def test_missing_ray_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray now raises ImportError
    with pytest.raises(ImportError, match=r"pip install -e \.\[cluster\]"):
        import_ray()
