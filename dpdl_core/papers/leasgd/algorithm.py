"""LEASGD — Leader–Follower Elastic Averaging SGD with differential privacy (Cheng et al.,
2018), synchronous form.

Per iteration t (1-based) every worker i, at its model w^i_t:

- computes its noised gradient on its own batch of B samples,
  g̃^i_t = (Σ_b clip_C(∇f(w^i_t; ζ_b)) + z^i_t)/B, z^i_t ~ N(0, σ₂²C²I) — eq. (4) in the form
  of Abadi et al. [9] (per-sample clipping, noise on the sum, ÷B). Eq. (4) read literally
  clips the batch-mean gradient and adds N(0, σ₂²C²) to it: B times this noise per
  coordinate, at sensitivity 2C; see ``docs/leasgd.md``. σ₂ = 0: the non-private algorithm;
- adds the gradient of the L2 penalty after noising, g^i_t = g̃^i_t + λw^i_t (the penalty
  is data-free, so it costs no privacy; Sec. 2.2 "L2-normalization");
- if (t − 1) is a multiple of kτ: the pools are re-split by each worker's mean training
  loss over the iterations since the last split (kτ of them; just iteration 1 at t = 1):
  the workers with lower loss lead (Fig. 1b–c, :func:`~.pools.split_pools`);
- if t is a multiple of τ (a communication step): new random groups of p leaders per
  follower are drawn (:func:`~.pools.draw_groups`) and, simultaneously for all workers,
  eq. (3)/(5): W_{t+1} = A_t W_t − η G_t, with A_t the elastic operator
  (:func:`~.pools.elastic_matrix`, α = ηρ), installed as the round's mixing matrix so that
  the loop counts the models sent (2 per leader–follower link);
- otherwise: plain local SGD, w^i_{t+1} = w^i_t − η g^i_t.

Each worker releases one Gaussian mechanism per iteration (k = 1); the exchanged models
are post-processing. The loss values sent at every split are not noised (as in the
paper): a leak outside the accountant, counted in :meth:`LEASGD.diagnostics`.

The pairs may join any two workers, so the run's topology must be fully connected (the
graph of links that may be used; the links used in a step are the groups').

Stacked runs (:mod:`dpdl_core.runs.stacking`): each run splits its own pools, draws its groups
from its own generator and has its own α = η_r·ρ (``ctx.members[r]``); a
communication step installs one elastic matrix per run. The early stopping of the paper's
Table 1 is read from the stored history afterwards (:mod:`.figures`): every run trains
its full T rounds, stacked or not.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ...sim import Algorithm, check_int, register
from .pools import draw_groups, elastic_matrix, n_followers, split_pools

__all__ = ["LEASGD", "LEASGDParams"]


@dataclass(frozen=True)
class LEASGDParams:
    """Options of LEASGD (the config's ``algo``).

    Attributes
    ----------
    rho : float
        Elastic factor ρ of eq. (3); α = ηρ. Default 4.5: β = pα = 0.9 at η = 0.05, p = 4
        (EASGD's β, spec §2).
    tau : int
        Communication interval τ (iterations between elastic updates).
    k : int
        The pools are re-split every kτ iterations.
    leaders_per_follower : int
        p, leaders in each follower's group (Prop. 1); ⌈m/(p+1)⌉ followers.
    weight_decay : float
        λ of the L2 penalty (λ/2)‖w‖², its gradient λw added after noising.
    """

    rho: float = 4.5
    tau: int = 1
    k: int = 10
    leaders_per_follower: int = 4
    weight_decay: float = 1e-4

    def __post_init__(self):
        for name in ("tau", "k", "leaders_per_follower"):
            check_int(self, name, minimum=1)
        for name in ("rho", "weight_decay"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
                raise ValueError(f"{name}={value!r} must be a number >= 0")


@register
class LEASGD(Algorithm):
    name = "leasgd"
    display_name = "LEASGD"
    Params = LEASGDParams
    stackable = True

    def __init__(self, params: LEASGDParams, ctx):
        super().__init__(params, ctx)
        m = ctx.topology.n_agents
        W = np.asarray(ctx.topology.W)
        if not (W[~np.eye(m, dtype=bool)] > 0).all():
            raise ValueError(
                f"LEASGD pairs any two workers: topology must be 'fully_connected', got {ctx.topology.name!r}"
            )
        self.n_follow = n_followers(m, params.leaders_per_follower)
        # α = η_1·ρ of each stacked run (one in a plain run).
        self.alphas = [member.lr * params.rho for member in ctx.members]
        self.alpha = self.alphas[0]
        # Prop. 1: β = pα < 1, else the follower overshoots (a negative weight on itself).
        group = -(-(m - self.n_follow) // self.n_follow)
        for member, alpha in zip(ctx.members, self.alphas, strict=True):
            if not alpha * group < 1:
                raise ValueError(
                    f"lr*rho*(leaders per group) = {member.lr}*{params.rho}*{group} must be < 1 "
                    "(Prop. 1: beta = p*alpha < 1); lower rho or lr"
                )

    @classmethod
    def messages_per_round(cls, topology, params) -> np.ndarray:
        return np.ones(topology.n_agents, dtype=int)

    def init_state(self, X0):
        m = X0.shape[0]
        return {
            "x": X0.clone(),
            "loss_sum": torch.zeros(m, dtype=torch.float64, device=X0.device),
            "loss_count": torch.zeros(m, dtype=torch.long, device=X0.device),  # per worker, so that runs can stack
            "follower": torch.zeros(m, dtype=torch.bool, device=X0.device),
        }

    def _split(self, state) -> None:
        """Re-split the pools on the mean loss since the last split (Fig. 1b), run by run."""
        recent = state["loss_sum"] / state["loss_count"]
        state["follower"].zero_()
        for member in self.ctx.members:
            _, followers = split_pools(recent[member.rows], self.n_follow)
            state["follower"][followers + member.rows.start] = True
        state["loss_sum"].zero_()
        state["loss_count"].zero_()

    def step(self, state, xb, yb):
        ctx, p = self.ctx, self.params
        x = state["x"]
        g_noised, losses = ctx.noisy_gradients(x, xb, yb)
        # The L2 penalty's gradient is data-free: added after noising, it costs no privacy.
        g = g_noised + p.weight_decay * x if p.weight_decay else g_noised
        state["loss_sum"] += losses.to(torch.float64)
        state["loss_count"] += 1
        t = ctx.round
        if (t - 1) % (p.k * p.tau) == 0:
            self._split(state)
        if t % p.tau == 0:
            if p.tau == 1:
                # Models sent every step: an eavesdropper who knows the groups derives
                # (A_t w_t − w_{t+1})/η − λw_t, each worker's noised gradient.
                ctx.reveal("gradient", g_noised, x, torch.arange(ctx.n_agents, device=x.device))
            # Each run's groups from its own generator, one elastic matrix per run.
            n = ctx.topology.n_agents
            idx = torch.arange(n, device=x.device)
            blocks = []
            for member, alpha in zip(ctx.members, self.alphas, strict=True):
                follower = state["follower"][member.rows]
                groups = draw_groups(idx[~follower], idx[follower], member.rng)
                blocks.append(elastic_matrix(groups, alpha, dtype=x.dtype))
            ctx.set_mixing(tuple(blocks))
            state["x"] = ctx.gossip(x) - ctx.lr * g
        else:
            state["x"] = x - ctx.lr * g
        return losses

    def diagnostics(self, agents: slice = slice(None)) -> dict:
        """Pool splits so far and the unnoised loss values they collected (the recategorized
        worker receives the other m − 1 workers' losses at each split); every stacked run
        splits at the same rounds, so ``agents`` (one run's rows) changes nothing."""
        splits = (self.ctx.round - 1) // (self.params.k * self.params.tau) + 1 if self.ctx.round else 0
        return {"pool_splits": splits, "loss_scalars_sent": splits * (self.ctx.topology.n_agents - 1)}
