"""The one training loop: communication counting, schedules, taps, the validation slot and
the registries that make a paper a plug-in."""
from dataclasses import dataclass

import numpy as np
import pytest
import torch

from dpdl_core.runs.config import ExperimentConfig
from dpdl_core.runs.runner import prepare, run
from dpdl_core.sim.algorithms import ALGORITHMS, Algorithm, known_algorithms, register
from dpdl_core.sim.loop import training_rounds
from dpdl_core.sim.schedules import make_schedule
from dpdl_core.sim.topology import make_topology

SMALL = dict(n_agents=6, batch_size=8, train_samples=300, rounds=2, eval_every=2, eval_samples=100,
             epsilon=None, checkpoint_every=0)


def _links(topology: str, n: int = 6) -> int:
    """Directed links i != j of a graph: one vector each per gossip step."""
    return int(((make_topology(topology, n).W > 0).sum() - n))


@pytest.mark.parametrize("algorithm, per_link", [("dpdl", 4), ("dp_dpsgd", 1), ("dp_netfleet", 2), ("dp_cga", 3)])
@pytest.mark.parametrize("topology", ["ring", "bipartite"])
def test_loop_counts_the_vectors_each_algorithm_sends(algorithm, per_link, topology):
    """Models out + cross-gradients back + two gossips (DPDL), one gossip (DP-DPSGD), two
    (DP-NETFLEET), models + cross-gradients + one gossip (DP-CGA), per directed link."""
    res = run(ExperimentConfig(algorithm=algorithm, topology=topology, **SMALL), save=False)
    assert res.meta["vectors_per_round"] == per_link * _links(topology)
    sent = res.history[res.history["metric"] == "vectors_sent"].sort_values("round")["value"].to_numpy()
    assert list(sent) == [per_link * _links(topology) * t for t in (1, 2)]
    assert sum(res.meta["vectors_sent_per_agent"]) == sent[-1]


def test_muffliato_counts_every_gossip_step():
    from dpdl_core.sim.algorithms.muffliato import default_gossip_steps

    res = run(ExperimentConfig(algorithm="muffliato", topology="ring", **SMALL), save=False)
    K = default_gossip_steps(6, make_topology("ring", 6).spectral_gap)
    assert K > 1 and res.meta["vectors_per_round"] == K * _links("ring")


def test_random_ring_schedule_draws_a_doubly_stochastic_ring_per_round():
    sched = make_schedule("random_ring", make_topology("ring", 7), np.random.default_rng(0))
    W1, W1b, W2 = sched.mixing(1), sched.mixing(1), sched.mixing(2)
    assert W1 is W1b and not torch.equal(W1, W2)
    for W in (W1, W2):
        assert torch.allclose(W.sum(0), torch.ones(7)) and torch.allclose(W, W.T)
        assert ((W > 0).sum(1) == 3).all()  # itself and two ring neighbours


def test_a_run_on_a_time_varying_schedule_is_reproducible_and_resumes(tmp_path):
    from dpdl_core.runs.results import ResultStore

    cfg = ExperimentConfig(algorithm="dp_dpsgd", topology="ring", schedule="random_ring", **{**SMALL, "rounds": 4})
    a = run(cfg, save=False)
    b = run(cfg.replace(checkpoint_every=2), store=ResultStore(tmp_path), save=True)
    assert a.history.equals(b.history)
    static = run(cfg.replace(schedule="static"), save=False)
    assert not static.history.equals(a.history)


def test_new_fields_at_their_defaults_leave_the_hash_unchanged():
    cfg = ExperimentConfig(**SMALL)
    assert "validation_samples" not in cfg.canonical_json() and "schedule" not in cfg.canonical_json()
    assert cfg.replace(validation_samples=50).hash != cfg.hash
    assert cfg.replace(schedule="random_ring").hash != cfg.hash
    with pytest.raises(ValueError, match="allowed values"):
        cfg.replace(schedule="torus")


def test_validation_set_is_carved_from_the_test_set_and_evaluated():
    cfg = ExperimentConfig(**{**SMALL, "eval_samples": None}, validation_samples=2000)
    prep = prepare(cfg)
    assert len(prep.y_val) == 2000 and len(prep.y_eval) == len(prep.data.y_test) - 2000
    assert prep.ctx.validation[0].shape[0] == 2000
    res = run(cfg, save=False)
    assert {"val_acc", "avg_val_acc"} <= set(res.history["metric"])


class Recorder:
    def __init__(self):
        self.seen = []

    def observe(self, ctx, channel, messages, models, owners):
        self.seen.append((ctx.round, channel, messages.shape, models.shape, owners.tolist()))


def test_taps_see_the_messages_and_do_not_change_training():
    cfg = ExperimentConfig(algorithm="dpdl", topology="ring", **{**SMALL, "epsilon": 1.0})
    prep = prepare(cfg)
    state = prep.algorithm.init_state(prep.engine.initial_params(6))
    tap = Recorder()
    losses = [loss.clone() for _, loss in training_rounds(prep, state, 1, 2, taps=[tap])]
    channels = [(t, c) for t, c, *_ in tap.seen]
    assert channels == [(1, "CG"), (1, "MM"), (2, "CG"), (2, "MM")]
    t, c, shape, mshape, owners = tap.seen[0]
    assert shape == mshape == (12, prep.engine.P) and sorted(set(owners)) == list(range(6))  # 2 neighbours each
    plain = run(cfg, save=False).history
    train = plain[(plain["metric"] == "train_loss")].sort_values(["round", "agent"])["value"].to_numpy()
    assert np.array_equal(train, torch.stack(losses).numpy().ravel().astype(np.float64))


def test_registering_an_algorithm_is_one_decorated_class():
    @dataclass(frozen=True)
    class P:
        scale: float = 1.0

    class Halved(Algorithm):
        name = "test_halved_sgd"
        display_name = "HALVED"
        Params = P

        @classmethod
        def messages_per_round(cls, topology, params):
            return np.ones(topology.n_agents, dtype=int)

        def init_state(self, X0):
            return {"x": X0.clone()}

        def step(self, state, xb, yb):
            g, losses = self.ctx.noisy_gradients(state["x"], xb, yb)
            state["x"] = self.ctx.gossip(state["x"]) - 0.5 * self.params.scale * self.ctx.lr * g
            return losses

    try:
        register(Halved)
        assert known_algorithms()["test_halved_sgd"] is Halved
        res = run(ExperimentConfig(algorithm="test_halved_sgd", algo={"scale": 2.0}, **SMALL), save=False)
        assert np.isfinite(res.curves()["train_loss_mean"]).all()
        with pytest.raises(ValueError, match="two algorithms"):
            register(type("Other", (Halved,), {}))
    finally:
        ALGORITHMS.pop("test_halved_sgd", None)

    class Nameless(Algorithm):
        name = "nameless"
        Params = P

    with pytest.raises(TypeError, match="display_name"):
        register(Nameless)


def test_every_algorithms_state_lives_on_its_parameters_device():
    """A state tensor made without ``device=`` stays on the CPU and breaks a ``device: cuda``
    run at its first step (LEASGD's loss counts once did). The meta device stands in for a GPU
    here: each algorithm, in the first smoke config of a paper that runs it, must put every
    state tensor on the device of the parameters it is given."""
    from dpdl_core.papers import PAPERS
    from dpdl_core.runs.plan import paper_groups

    first = {}
    for paper in PAPERS:
        for group in paper_groups(paper, "smoke"):
            for cfg in group.configs:
                if isinstance(cfg, ExperimentConfig):
                    first.setdefault(cfg.algorithm, cfg)
    assert set(first) == set(known_algorithms()), f"no smoke config runs {sorted(set(known_algorithms()) - set(first))}"
    for name, cfg in sorted(first.items()):
        prep = prepare(cfg)
        state = prep.algorithm.init_state(prep.engine.initial_params(cfg.n_agents).to("meta"))
        off = {k: str(v.device) for k, v in state.items() if torch.is_tensor(v) and v.device.type != "meta"}
        assert not off, f"{name}: state tensors {off} are not on the parameters' device"
