import pytest

from dpdl_core.runs import runner
from dpdl_core.runs.sweep import Grid, expand, pending, run_sweep

BASE = dict(n_agents=3, batch_size=8, train_samples=300, rounds=3, eval_every=3, eval_samples=100, epsilon=None)


def test_expand_is_the_product_deduplicated():
    grid = Grid({"algorithms": ["dpdl", "dp_dpsgd"], "seeds": [0, 1, 1]}, BASE)
    cfgs = expand(grid)
    assert len(cfgs) == 4 and len({c.hash for c in cfgs}) == 4
    with pytest.raises(ValueError, match="unknown grid axes"):
        Grid({"colours": [1]}, BASE)


def test_interrupted_sweep_finishes_without_loss_or_duplication(store, monkeypatch):
    monkeypatch.setenv("DPDL_STACK", "1")  # one run per call, so the second call can die alone
    cfgs = expand(Grid({"seeds": [0, 1, 2]}, BASE))
    real = runner.run_stack
    calls = {"n": 0}

    def dies_on_second(configs, **kw):
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt
        return real(configs, **kw)

    monkeypatch.setattr(runner, "run_stack", dies_on_second)
    with pytest.raises(KeyboardInterrupt):
        run_sweep(cfgs, store=store, workers=1)
    assert len(pending(cfgs, store)) == 2
    monkeypatch.setattr(runner, "run_stack", real)
    first = {h: store.path(h).read_bytes() for h in store.hashes()}
    run_sweep(cfgs, store=store, workers=1)
    assert store.hashes() == sorted(c.hash for c in cfgs)
    for h, payload in first.items():  # finished runs were not recomputed
        assert store.path(h).read_bytes() == payload
    assert not pending(cfgs, store)


def test_a_sweep_runs_compatible_configs_as_stacks(store, monkeypatch):
    cfgs = expand(Grid({"algorithms": ["dpdl", "dp_dpsgd"], "seeds": [0, 1, 2]}, BASE))
    real, stacks = runner.run_stack, []

    def recording(configs, **kw):
        stacks.append([c.hash for c in configs])
        return real(configs, **kw)

    monkeypatch.setattr(runner, "run_stack", recording)
    run_sweep(cfgs, store=store, workers=1)
    assert stacks == [[c.hash for c in cfgs[:3]], [c.hash for c in cfgs[3:]]]
    assert store.hashes() == sorted(c.hash for c in cfgs)


def test_parallel_workers(store):
    cfgs = expand(Grid({"seeds": [0, 1]}, BASE))
    run_sweep(cfgs, store=store, workers=2)
    assert store.hashes() == sorted(c.hash for c in cfgs)
