"""LEASGD phase 2: the registered algorithm against a slow per-worker reference, its
reductions, noise statistics, the loop's vector counter, options and profiles."""
import math

import pandas as pd
import pytest
import torch

from dpdl_core.papers.leasgd import preset
from dpdl_core.papers.leasgd.algorithm import LEASGDParams
from dpdl_core.papers.leasgd.claims import tab01_claims
from dpdl_core.papers.leasgd.figures import (
    CommSettings,
    Fig02Settings,
    Tab01Settings,
    communication_saving,
)
from dpdl_core.runs.config import ConfigError, ExperimentConfig
from dpdl_core.runs.runner import prepare
from dpdl_core.sim.algorithms import get_algorithm
from dpdl_core.sim.models import build_model, count_parameters

SMALL = dict(model="logreg", train_samples=600, eval_samples=100, batch_size=8, lr=0.05)


def _config(alg="leasgd", m=5, private=False, **changes):
    """A small config; ``private``: σ = 1.5 fixed (the accountant then runs per agent, so
    tests that do not need noise stay non-private)."""
    base = {**SMALL, **({"sigma_rule": "fixed", "sigma": 1.5, "epsilon": 1.0} if private else {"epsilon": None})}
    base.update(changes)
    return preset("mnist", alg, m, **base)


def _rounds(prep, T):
    """Drive the algorithm as the loop does; return the batches and losses of every round."""
    state = prep.algorithm.init_state(prep.engine.initial_params(prep.config.n_agents))
    batches = []
    for t in range(1, T + 1):
        prep.ctx.begin_round(t)
        xb, yb = prep.sample_batches()
        batches.append((xb, yb, prep.algorithm.step(state, xb, yb)))
    return state, batches


def _per_sample_clipped_mean(engine, x, xb, yb, clip):
    """Σ_b clip_C(∇ℓ(x; ζ_b)) / B one sample at a time with autograd."""
    from torch.func import functional_call

    total = torch.zeros_like(x)
    for b in range(len(yb)):
        params = {k: v.clone().requires_grad_(True) for k, v in engine.layout.unflatten(x).items()}
        out = functional_call(engine.module, params, (xb[b : b + 1],))
        loss = torch.nn.functional.cross_entropy(out, yb[b : b + 1])
        grads = torch.autograd.grad(loss, [params[n] for n in engine.layout.names])
        g = torch.cat([t.reshape(-1) for t in grads])
        total += g * min(1.0, clip / (g.norm().item() + 1e-12))
    return total / len(yb)


def _reference(prep, batches, rng, noise_gen):
    """LEASGD worker by worker (spec §1): clip, noise, weight decay; split every kτ on the
    mean loss since the last split (ties by index); at t ≡ 0 mod τ deal shuffled leaders to
    followers and apply eq. (3) summed over a follower's leaders; else local SGD."""
    cfg, p = prep.config, LEASGDParams(**prep.config.algo)
    m, eng = cfg.n_agents, prep.engine
    X = eng.initial_params(m).double()
    alpha = cfg.lr * p.rho
    sigma = prep.sigma_report.sigma
    n_f = math.ceil(m / (p.leaders_per_follower + 1))
    window, followers, sent = [], [], 0
    for t, (xb, yb, _) in enumerate(batches, start=1):
        noise = torch.randn(m, eng.P, generator=noise_gen) * torch.tensor(sigma).view(-1, 1) * cfg.clip
        G, losses = torch.empty_like(X), []
        for i in range(m):
            xi = X[i].float()
            G[i] = (_per_sample_clipped_mean(eng, xi, xb[i], yb[i], cfg.clip) + noise[i] / cfg.batch_size).double()
            G[i] += p.weight_decay * X[i]
            losses.append(torch.nn.functional.cross_entropy(
                torch.func.functional_call(eng.module, eng.layout.unflatten(xi), (xb[i],)), yb[i]).item())
        window.append(losses)
        if (t - 1) % (p.k * p.tau) == 0:
            mean = [sum(w[i] for w in window) / len(window) for i in range(m)]
            ranked = sorted(range(m), key=lambda i: (mean[i], i))
            followers = sorted(ranked[m - n_f :])
            window = []
        if t % p.tau == 0:
            leaders = [i for i in range(m) if i not in followers]
            perm = torch.randperm(len(leaders), generator=rng).tolist()
            boss = {leaders[perm[r]]: followers[r % n_f] for r in range(len(leaders))}
            new = torch.empty_like(X)
            for i in range(m):
                if i in boss:
                    new[i] = X[i] - cfg.lr * G[i] + alpha * (X[boss[i]] - X[i])
                else:
                    pull = sum(X[j] - X[i] for j, f in boss.items() if f == i)
                    new[i] = X[i] - cfg.lr * G[i] + alpha * pull
            X = new
            sent += 2 * len(boss)
        else:
            X = X - cfg.lr * G
    return X, sent


def test_leasgd_matches_slow_reference():
    # m = 7, p = 2: 3 followers with 2, 1 and 1 leaders; τ = 2, k = 2: splits at t = 1, 5, 9.
    cfg = _config(m=7, private=True, rounds=10,
                  algo={"leaders_per_follower": 2, "tau": 2, "k": 2, "rho": 1.5, "weight_decay": 0.01})
    prep = prepare(cfg)
    rng = torch.Generator(device=prep.ctx.rng.device)
    rng.set_state(prep.ctx.rng.get_state())
    noise_gen = torch.Generator()
    noise_gen.set_state(prep.ctx.noise_generator.get_state())
    state, batches = _rounds(prep, 10)
    X_ref, sent = _reference(prep, batches, rng, noise_gen)
    assert torch.allclose(state["x"].double(), X_ref, atol=2e-5), (state["x"].double() - X_ref).abs().max()
    assert int(prep.ctx.sent.sum()) == sent == 5 * 2 * 4  # 5 communication steps, 4 leaders
    diag = prep.algorithm.diagnostics()
    assert diag == {"pool_splits": 3, "loss_scalars_sent": 18}


def test_no_noise_no_elastic_force_is_independent_local_sgd():
    cfg = _config(rounds=4, algo={"rho": 0.0, "weight_decay": 0.0})
    prep = prepare(cfg)
    assert not prep.ctx.private
    X0 = prep.engine.initial_params(5)
    state, batches = _rounds(prep, 4)
    X = X0.clone()
    for xb, yb, _ in batches:
        for i in range(5):
            X[i] = X[i] - cfg.lr * _per_sample_clipped_mean(prep.engine, X[i], xb[i], yb[i], cfg.clip)
    assert torch.allclose(state["x"], X, atol=1e-5)
    assert int(prep.ctx.sent.sum()) == 0  # ρ = 0: no link carries weight


def test_noise_std_is_sigma_c_over_b():
    cfg = _config(rounds=1, private=True, sigma=2.0, clip=0.5, batch_size=16, algo={"rho": 0.0, "weight_decay": 0.0})
    prep = prepare(cfg)
    state = prep.algorithm.init_state(prep.engine.initial_params(5))
    X0 = state["x"].clone()
    prep.ctx.begin_round(1)
    xb, yb = prep.sample_batches()
    prep.algorithm.step(state, xb, yb)
    sums, _ = prep.engine.clipped_sums(X0, torch.arange(5), xb, yb, cfg.clip)
    z = (X0 - state["x"]) / cfg.lr - sums / cfg.batch_size  # the noise divided by B
    target = 2.0 * 0.5 / 16
    assert z.std().item() == pytest.approx(target, rel=0.02)  # 5 × 7,850 draws: ±0.5% sd
    assert abs(z.mean().item()) < 4 * target / math.sqrt(z.numel())
    assert z.std(1).min().item() > 0.97 * target  # every worker noised at the same scale
    corr = torch.corrcoef(z)
    assert (corr - torch.eye(5)).abs().max() < 0.05  # independent across workers


@pytest.mark.parametrize("alg, m, tau, per_step", [("leasgd", 5, 1, 8), ("leasgd", 5, 2, 8), ("dp_dpsgd", 5, 1, 10),
                                                    ("leasgd", 15, 1, 24)])
def test_loop_counts_transmitted_vectors(alg, m, tau, per_step):
    algo = {"tau": tau} if alg == "leasgd" else {}
    prep = prepare(_config(alg, m, rounds=4, train_samples=1500, algo=algo))
    _rounds(prep, 4)
    assert int(prep.ctx.sent.sum()) == per_step * (4 // tau)


def test_state_holds_everything_a_resumed_run_needs():
    cfg = _config(rounds=6, algo={"k": 2})
    full = prepare(cfg)
    state, _ = _rounds(full, 6)
    first = prepare(cfg)
    half, _ = _rounds(first, 3)
    second = prepare(cfg)  # a fresh instance, as after a restart from a checkpoint
    for name in ("batches", "noise", "algorithm"):
        getattr(second.rngs, name).set_state(getattr(first.rngs, name).get_state())
    state2 = {k: v.clone() for k, v in half.items()}
    for t in range(4, 7):
        second.ctx.begin_round(t)
        xb, yb = second.sample_batches()
        second.algorithm.step(state2, xb, yb)
    assert torch.equal(state["x"], state2["x"])


def test_options_are_validated():
    with pytest.raises(ValueError, match="tau=0 must be an integer >= 1"):
        LEASGDParams(tau=0)
    with pytest.raises(ValueError, match="rho=-1"):
        LEASGDParams(rho=-1.0)
    with pytest.raises(ValueError, match="leaders_per_follower=True"):
        LEASGDParams(leaders_per_follower=True)
    with pytest.raises(ConfigError, match="unknown option"):
        _config(algo={"beta": 0.9})
    with pytest.raises(ValueError, match="topology must be 'fully_connected'"):
        prepare(_config(topology="ring", rounds=1))
    with pytest.raises(ValueError, match="beta = p\\*alpha < 1"):
        prepare(_config(rounds=1, lr=0.1))  # 0.1 · 4.5 · 4 = 1.8
    with pytest.raises(ConfigError, match="no LEASGD preset"):
        preset("mnist", "dpdl")
    assert get_algorithm("leasgd").display_name == "LEASGD"


def test_model_parameter_counts():
    # The models the profiles use (dpdl_cnn: the cpu profile's 16/32-channel CIFAR-10 CNN).
    assert count_parameters(build_model("leasgd_mlp", "mnist")) == 235_146
    assert count_parameters(build_model("leasgd_cnn", "cifar10")) == 94_666
    assert count_parameters(build_model("dpdl_cnn", "cifar10")) == 16_618


@pytest.mark.parametrize("profile", ["smoke", "cpu", "paper"])
def test_profiles_give_valid_configs(profile):
    fig = Fig02Settings.from_profile(profile).configs()
    assert {c.algorithm for c in fig} == {"leasgd", "dp_dpsgd"} and all(c.epsilon is None for c in fig)
    tab = Tab01Settings.from_profile(profile).configs()
    assert {(c.dataset, c.algorithm) for c in tab} == {(d, a) for d in ("mnist", "cifar10")
                                                       for a in ("leasgd", "dp_dpsgd")}
    assert all(c.sigma_rule == "leasgd_common" and c.validation_samples for c in tab)
    # every profile keeps the spec's elastic coupling alpha = lr * rho = 0.225 (beta = 0.9)
    assert all(c.lr * c.algo["rho"] == pytest.approx(0.225) for c in fig + tab if c.algorithm == "leasgd")
    for d in ("mnist", "cifar10"):  # both algorithms of a cell share lr
        assert len({c.lr for c in tab if c.dataset == d}) == 1
    comm = CommSettings.from_profile(profile)
    assert "leasgd" in comm.names() and len(comm.configs()) == len(comm.names()) * len(comm.seeds)
    assert all(isinstance(c, ExperimentConfig) for c in fig + tab)


def test_communication_saving_hand_example():
    import pandas as pd

    lea = pd.DataFrame({"vectors": [8, 16, 24, 32], "loss": [2.0, 1.5, 1.0, 0.8]}, index=[1, 2, 3, 4])
    dps = pd.DataFrame({"vectors": [10, 20, 30, 40], "loss": [2.0, 1.8, 1.4, 1.0]}, index=[1, 2, 3, 4])
    s = communication_saving({"leasgd": lea, "dp_dpsgd": dps})
    # both reach 1.0: LEASGD after 24 vectors (round 3), D-PSGD after 40 (round 4)
    assert s["target"] == 1.0 and s["vectors"] == {"leasgd": 24, "dp_dpsgd": 40}
    assert s["rounds"] == {"leasgd": 3, "dp_dpsgd": 4} and s["saving"] == pytest.approx(0.4)


def test_table1_claims_hold_on_the_papers_numbers():
    from dpdl_core.verdicts.reporting import load_reference

    ref = load_reference("leasgd", "leasgd_table1").rename(columns={"n_workers": "m", "total_epsilon": "epsilon"})
    ref["algorithm"] = ref["algorithm"].map({"LEASGD": "leasgd", "D-PSGD": "dp_dpsgd"})
    ref["accuracy_T"] = ref["accuracy"]
    claims = tab01_claims(ref, tol=0.0)
    assert [c.verdict for c in claims] == ["holds", "holds", "holds", "holds"]
    worse = ref.copy()
    worse.loc[(worse["algorithm"] == "leasgd") & (worse["m"] == 15), "epsilon"] = 9.0
    assert tab01_claims(worse, tol=0.0)[0].verdict == "fails"


def test_less_epsilon_needs_an_early_stop_to_judge():
    """Equal σ makes ε a count of steps: where no seed of either algorithm stopped before
    T_max the tie says nothing (inconclusive); where D-PSGD stopped early and LEASGD ran on,
    LEASGD spent more (fails); where LEASGD stopped first, it holds."""
    def runs(stop_lea, stop_dps, t_max=1500):
        def eps(steps):
            return 5.0 * steps / t_max  # any increasing function of the steps

        return pd.DataFrame([{"dataset": "mnist", "m": 5, "algorithm": a, "seed": s, "accuracy": 0.9,
                              "accuracy_T": 0.9, "epsilon": eps(stop), "epsilon_T": eps(t_max)}
                             for a, stop in (("leasgd", stop_lea), ("dp_dpsgd", stop_dps)) for s in range(3)])

    def verdict(r):
        table = r.groupby(["dataset", "m", "algorithm"], as_index=False)[["accuracy", "accuracy_T", "epsilon"]].mean()
        return tab01_claims(table, tol=0.01, runs=r)[0]

    tie = verdict(runs(1500, 1500))
    assert tie.verdict == "inconclusive" and "not observed" in tie.evidence
    assert verdict(runs(1500, 1200)).verdict == "fails"
    assert verdict(runs(1200, 1500)).verdict == "holds"


def test_testing_only_at_the_best_validation_gives_table_1_the_same_row(tmp_path):
    """``test_at: best_validation`` measures the test set only where the mean validation
    accuracy reaches its best so far and at the last round: Table 1's row (accuracy at the
    early-stopping step and at T_max) equals the one of a run that tests at every
    evaluation, every row it does record is that run's bit for bit, and it skips some."""
    from dpdl_core.papers.leasgd.figures import tab01_run_row
    from dpdl_core.runs.results import ResultStore
    from dpdl_core.runs.runner import run

    store = ResultStore(tmp_path)
    full = _config(rounds=40, eval_every=2, validation_samples=60)
    lean = full.replace(test_at="best_validation")
    assert lean.hash != full.hash
    h_full, h_lean = (run(c, store=store, progress=False).history for c in (full, lean))
    for patience in (4, 10, 40):
        assert tab01_run_row(lean, patience, store) == tab01_run_row(full, patience, store)
    key = ["round", "agent", "metric"]
    merged = h_lean.merge(h_full, on=key, how="left", suffixes=("", "_full"))
    assert merged["value_full"].notna().all() and (merged["value"] == merged["value_full"]).all()
    val = h_full[(h_full["metric"] == "val_acc")].groupby("round")["value"].mean()
    best_so_far = val.cummax().shift(fill_value=-1.0)
    expected = set(val.index[val >= best_so_far - 1e-9]) | {full.rounds}
    tested = set(h_lean.loc[h_lean["metric"] == "test_acc", "round"])
    assert tested == expected and len(tested) < len(val)
    assert set(h_lean.loc[h_lean["metric"] == "val_acc", "round"]) == set(val.index)


def test_testing_at_the_best_validation_needs_a_validation_set():
    with pytest.raises(ConfigError, match="validation_samples is null"):
        _config(test_at="best_validation")
