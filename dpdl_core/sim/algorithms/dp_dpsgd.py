"""DP-DPSGD — the synchronous form of A(DP)²SGD (Xu, Zhang, Wang, TPAMI 2022) on D-PSGD
(Lian et al. 2017).

Per round, every agent i:

- computes its per-sample clipped self-gradient at its own model and perturbs it,
  g̃_i = (Σ_b clip_C(∇F(x_i; ζ_b)) + z_i)/B, z_i ~ N(0, σ²C²I) (the same Gaussian
  mechanism as DPDL eq. 13);
- with momentum β (``ctx.momentum``; default as DPDL for a fair comparison, 0 gives plain
  D-PSGD): v_i ← β·v_i + g̃_i;
- x_i ← Σ_j w_ij x_j − η·v_i: gossip of the models, gradient taken at the pre-averaging
  model (D-PSGD's order).

One Gaussian message per agent per round (k_i = 1); it reaches the neighbours inside the
model. σ = 0 gives D-PSGD (with momentum).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .base import Algorithm, register


@dataclass(frozen=True)
class DPDPSGDParams:
    """DP-DPSGD has no options beyond the shared config (lr, momentum, clip, σ rule)."""


@register
class DPDPSGD(Algorithm):
    name = "dp_dpsgd"
    display_name = "DP-DPSGD"
    Params = DPDPSGDParams
    stackable = True

    @classmethod
    def messages_per_round(cls, topology, params) -> np.ndarray:
        return np.ones(topology.n_agents, dtype=int)

    def init_state(self, X0):
        return {"x": X0.clone(), "v": torch.zeros_like(X0)}

    def step(self, state, xb, yb):
        ctx = self.ctx
        g, losses = ctx.noisy_gradients(state["x"], xb, yb)
        # The broadcast model difference reveals g to anyone who saw x and v.
        ctx.reveal("gradient", g, state["x"], torch.arange(ctx.n_agents, device=g.device))
        state["v"] = ctx.momentum * state["v"] + g
        state["x"] = ctx.gossip(state["x"]) - ctx.lr * state["v"]
        return losses
