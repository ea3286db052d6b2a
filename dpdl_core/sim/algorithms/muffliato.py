"""MUFFLIATO (Cyffers, Even, Bellet, Massoulié, NeurIPS 2022): a local noisy gradient step,
then K steps of Chebyshev-accelerated gossip.

Per round:

1. x_i^{0} = x_i − η·g̃_i with g̃_i = (Σ_b clip_C(∇F(x_i; ζ_b)) + z_i)/B, z_i ~ N(0, σ²C²I);
2. with λ the spectral gap of W (smallest non-zero eigenvalue of I − W) and
   γ = 2(1 − √(λ(1 − λ/4)))/(1 − λ/2)²:
   x^{k+1} = γ·W·x^{k} + (1 − γ)·x^{k−1}, k = 0..K−1, started with x^{−1} = x^{0}.
   The start x^{−1} = x^{0} keeps the network average exactly: every step is an affine
   combination with weights γ + (1 − γ) = 1 of doubly stochastic maps. (The authors' public
   code starts from x^{−1} = 0, which shrinks the mean; ``start="zero"`` reproduces it.)

K defaults to ⌈ln(N)/√λ⌉ (at least 1): Chebyshev gossip needs about 1/√λ steps per factor
e of contraction, and ln N factors bring the disagreement to the level of one agent's
share, the mixing-time rule of the paper. Every gossip step sends one vector per link, so
a round costs K times the communication of one gossip. No momentum (the method has none).
One Gaussian message per agent per round (k_i = 1): the gossip is post-processing.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from ..validation import check_choice, check_int
from .base import Algorithm, register

STARTS = ("previous", "zero")


def chebyshev_gamma(spectral_gap: float) -> float:
    """γ = 2(1 − √(λ(1 − λ/4)))/(1 − λ/2)²."""
    lam = spectral_gap
    return 2 * (1 - math.sqrt(lam * (1 - lam / 4))) / (1 - lam / 2) ** 2


def default_gossip_steps(n_agents: int, spectral_gap: float) -> int:
    """K = ⌈ln(N)/√λ⌉, at least 1."""
    return max(1, math.ceil(math.log(max(n_agents, 2)) / math.sqrt(spectral_gap)))


def chebyshev_gossip(mix, X: torch.Tensor, steps: int, gamma: float, start: str = "previous") -> torch.Tensor:
    """K accelerated gossip steps from X (x^{−1} = X, or 0 with ``start="zero"``); ``mix(X)``
    is one gossip step W @ X (``RunContext.gossip``, which counts the vectors sent)."""
    prev = X if start == "previous" else torch.zeros_like(X)
    cur = X
    for _ in range(steps):
        prev, cur = cur, gamma * mix(cur) + (1 - gamma) * prev
    return cur


@dataclass(frozen=True)
class MuffliatoParams:
    """Options of MUFFLIATO.

    Attributes
    ----------
    gossip_steps : int or None
        K; ``None`` uses ⌈ln(N)/√λ⌉.
    start : {"previous", "zero"}
        x^{−1}: the current iterate (keeps the mean) or 0 (the authors' code).
    """

    gossip_steps: int | None = None
    start: str = "previous"

    def __post_init__(self):
        check_int(self, "gossip_steps", optional=True)
        check_choice(self, "start", STARTS)


@register
class Muffliato(Algorithm):
    name = "muffliato"
    display_name = "MUFFLIATO"
    Params = MuffliatoParams
    stackable = True

    def __init__(self, params, ctx):
        super().__init__(params, ctx)
        gap = ctx.topology.spectral_gap
        self.gamma = chebyshev_gamma(gap)
        self.steps = params.gossip_steps or default_gossip_steps(ctx.topology.n_agents, gap)

    @classmethod
    def messages_per_round(cls, topology, params) -> np.ndarray:
        return np.ones(topology.n_agents, dtype=int)

    def init_state(self, X0):
        return {"x": X0.clone()}

    def step(self, state, xb, yb):
        ctx = self.ctx
        g, losses = ctx.noisy_gradients(state["x"], xb, yb)
        # The first gossip message x − ηg reveals g to anyone who knows x.
        ctx.reveal("gradient", g, state["x"], torch.arange(ctx.n_agents, device=g.device))
        state["x"] = chebyshev_gossip(ctx.gossip, state["x"] - ctx.lr * g, self.steps, self.gamma, self.params.start)
        return losses
