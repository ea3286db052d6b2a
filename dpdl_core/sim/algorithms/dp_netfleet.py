"""DP-NETFLEET — NET-FLEET (Zhang et al., MobiHoc 2022) with Gaussian perturbation.

No public code exists; this is a reconstruction from the paper: Q local updates between
communications driven by a gradient-tracking direction with recursive gradient
correction, then gossip of the models and of the tracker. Every gradient is a DP gradient
(per-sample clipping to C, z ~ N(0, σ²C²I), divided by B), as DP-DPSGD's, so what is
shared — models and trackers — is built from perturbed gradients only.

State per agent: model x_i, tracker y_i, and g_i, the last DP gradient at x_i.
Initially y_i = g_i = 0 (the tracking invariant mean(y) = mean(g) holds from the start).
Round t (one batch 𝓑_i per agent, used by all its gradient evaluations of the round):

1. local phase, with x^{0} = x_i, d^{0} = y_i, h = g_i:
   for q = 1..Q: x^{q} = x^{q−1} − η·d^{q−1};
   if q < Q: h' = g̃_i(x^{q}), d^{q} = d^{q−1} + h' − h, h = h'   (recursive correction)
2. x_i ← Σ_j w_ij x_j^{Q}
3. g_new = g̃_i(x_i);  y_i ← Σ_j w_ij y_j + g_new − g_i;  g_i ← g_new   (gradient tracking)

Q = ``local_steps`` (default 2). Each round evaluates Q DP gradients on one batch, so
k_i = Q Gaussian messages per round. No momentum (the method has none). The training loss
recorded is the loss of g_new's evaluation (the post-gossip model on the round's batch).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..validation import check_int
from .base import Algorithm, register


@dataclass(frozen=True)
class DPNetFleetParams:
    """Options of DP-NETFLEET.

    Attributes
    ----------
    local_steps : int
        Q, local updates between two communications (≥ 1).
    """

    local_steps: int = 2

    def __post_init__(self):
        check_int(self, "local_steps")


@register
class DPNetFleet(Algorithm):
    name = "dp_netfleet"
    display_name = "DP-NETFLEET"
    Params = DPNetFleetParams
    stackable = True

    @classmethod
    def messages_per_round(cls, topology, params) -> np.ndarray:
        return np.full(topology.n_agents, params.local_steps, dtype=int)

    def init_state(self, X0):
        return {"x": X0.clone(), "y": torch.zeros_like(X0), "g": torch.zeros_like(X0)}

    def step(self, state, xb, yb):
        ctx = self.ctx
        x, d, h = state["x"], state["y"], state["g"]
        for q in range(1, self.params.local_steps + 1):
            x = x - ctx.lr * d
            if q < self.params.local_steps:
                h_new, _ = ctx.noisy_gradients(x, xb, yb)
                d = d + h_new - h
                h = h_new
        state["x"] = ctx.gossip(x)
        g_new, losses = ctx.noisy_gradients(state["x"], xb, yb)
        # The tracking message's increment y − Σw·y = g_new − g_old reveals g_new to an
        # eavesdropper who followed the previous rounds.
        ctx.reveal("gradient", g_new, state["x"], torch.arange(ctx.n_agents, device=g_new.device))
        state["y"] = ctx.gossip(state["y"]) + g_new - state["g"]
        state["g"] = g_new
        return losses
