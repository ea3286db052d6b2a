"""DPDL — Algorithm 1 of Yuan, Xiao, Wang, Li (equation numbers of ``papers/dpdl.txt``).

Per round t, at every agent i (all agents at once here):

1. Sample a batch 𝓑_i of B samples from D_i.
2. For each neighbour j ∈ 𝒩_i∖{i}: cross-gradients g^{ji}_b = ∇F_i(x_j; ζ_b) (eq. 8),
   clipped per sample ĝ = g·min{1, C/‖g‖} (eq. 9), perturbed
   g̈^{ji} = (Σ_b ĝ^{ji}_b + z^{ji})/B, z ~ N(0, σ²C²I) (eq. 10), sent to j.
3. Self-gradient g^{ii}_b = ∇F_i(x_i; ζ_b) (eq. 11), clipped (eq. 12), clean mean
   ĝ^{ii} = Σ_b ĝ^{ii}_b / B (eq. 14) and noisy g̈^{ii} (eq. 13).
4. For each j ∈ 𝒩_i (i included), with g̈^{ij} the message received from j (the gradient
   of x_i on j's data): S = cos(g̈^{ij}, ĝ^{ii}) over the whole flattened parameter
   vector (eq. 15), C^{ij} = 1/(1 + e^S) (eq. 16),
   g̃^{ij} = g̈^{ij}/(√w_ij·N) + α·w_ij·C^{ij}·ĝ^{ii} with N the number of agents (eq. 17),
   g̃^i = Σ_{j∈𝒩_i} g̃^{ij} (eq. 18).
5. ṽ_i = β·v_i + g̃^i (eq. 19), x̃_i = x_i − η·ṽ_i (eq. 20); gossip
   v_i = Σ_j w_ij ṽ_j (eq. 21), x_i = Σ_j w_ij x̃_j (eq. 22).

All E = Σ_i |𝒩_i| (model, batch) pairs go through one batched
:meth:`~dpdl_core.sim.engine.Engine.clipped_sums` call.

Options that reproduce the authors' released code (github DisAIGroup/DPDL) instead of the
paper — never the default: ``clip_mode="microbatch"`` (the batch split into
``n_microbatches`` = M micro-batches whose mean gradients are clipped as a whole, as
``clip_grad_norm_`` does; the message is then Σ_m ĝ_m/M + z/B, the noise divided by the
batch size B as in the authors' trainer, not by M), ``cosine="per_tensor"`` (eqs 15–17
applied separately to each parameter tensor), and ``weight_decay`` (λ·x added to g̃^i).

Privacy of the microbatch mode: removing one sample changes one micro-batch's clipped mean
by up to 2C, so the average of M moves by up to 2C/M while the noise std is σC/B; the
accountant sees the noise multiplier σ·M/(2B) (``noise_scale``), far less than σ.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ...sim import Algorithm, check_choice, check_int, register

CLIP_MODES = ("per_sample", "microbatch")
COSINE_MODES = ("global", "per_tensor")


@dataclass(frozen=True)
class DPDLParams:
    """Options of DPDL.

    Attributes
    ----------
    alpha : float or None
        α of eq. (17); ``None`` takes the paper's value for the run's topology (1.5 on
        bipartite and fully connected graphs, 2 on rings).
    clip_mode : {"per_sample", "microbatch"}
    n_microbatches : int
        Micro-batches per batch when ``clip_mode="microbatch"`` (the authors use 4).
    cosine : {"global", "per_tensor"}
    weight_decay : float
    """

    alpha: float | None = None
    clip_mode: str = "per_sample"
    n_microbatches: int = 4
    cosine: str = "global"
    weight_decay: float = 0.0

    def __post_init__(self):
        check_choice(self, "clip_mode", CLIP_MODES)
        check_choice(self, "cosine", COSINE_MODES)
        if self.alpha is not None and not self.alpha >= 0:
            raise ValueError(f"alpha={self.alpha!r} must be >= 0 or null")
        check_int(self, "n_microbatches")
        if not self.weight_decay >= 0:
            raise ValueError(f"weight_decay={self.weight_decay!r} must be >= 0")


def paper_alpha(topology_name: str) -> float:
    """α of §VI-A: 2 on rings, 1.5 otherwise."""
    return 2.0 if topology_name == "ring" else 1.5


@register
class DPDL(Algorithm):
    name = "dpdl"
    display_name = "DPDL"
    Params = DPDLParams
    stackable = True

    def __init__(self, params: DPDLParams, ctx):
        super().__init__(params, ctx)
        self.alpha = params.alpha if params.alpha is not None else paper_alpha(ctx.topology.name)
        self.unit = 1
        if params.clip_mode == "microbatch":
            if ctx.batch_size % params.n_microbatches:
                raise ValueError(
                    f"batch_size={ctx.batch_size} is not divisible by n_microbatches={params.n_microbatches}"
                )
            self.unit = ctx.batch_size // params.n_microbatches
        self.n_units = ctx.batch_size // self.unit
        if params.cosine == "per_tensor":
            self.segments = ctx.engine.layout.segment_ids(ctx.engine.device)
            self.n_segments = len(ctx.engine.layout.names)

    @classmethod
    def messages_per_round(cls, topology, params) -> np.ndarray:
        """k_i = |𝒩_i|: the cross-gradients agent i sends plus its noisy self-gradient."""
        return topology.degrees

    @classmethod
    def noise_scale(cls, params, batch_size) -> float:
        """1 per sample (noise σC on a sum of sensitivity C); M/(2B) per micro-batch (noise
        σC/B on an average of sensitivity 2C/M)."""
        if params.clip_mode == "microbatch":
            return params.n_microbatches / (2 * batch_size)
        return 1.0

    def init_state(self, X0):
        return {"x": X0.clone(), "v": torch.zeros_like(X0)}

    def _cosine(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """Eq. (15), per row; (E,) or, per tensor, (E, P) broadcast back from segments."""
        eps = 1e-12
        if self.params.cosine == "global":
            return (a * b).sum(1) / (a.norm(dim=1) * b.norm(dim=1) + eps)
        E = a.shape[0]
        seg = self.segments

        def seg_sum(t):
            return torch.zeros(E, self.n_segments, device=t.device).index_add_(1, seg, t)

        cos = seg_sum(a * b) / (seg_sum(a * a).sqrt() * seg_sum(b * b).sqrt() + eps)
        return cos[:, seg]

    def step(self, state, xb, yb):
        ctx, eng = self.ctx, self.ctx.engine
        X, V = state["x"], state["v"]
        i, j, w = ctx.edge_i, ctx.edge_j, ctx.edge_w
        N = ctx.topology.n_agents  # one run's agents (a stack has more rows)
        # Eqs (8)-(14): models out to the neighbours, then one batched pass over every
        # (model x_i, batch of j) pair.
        ctx.broadcast(X)
        sums, losses = eng.clipped_sums(X[i], j, xb, yb, ctx.clip, unit=self.unit)
        # g̈^{ij}, made by agent j: (Σ_u ĝ_u + z)/B per sample; Σ_m ĝ_m/M + z/B per micro-batch
        # (the factor is exactly 1 per sample, which keeps that path bit for bit).
        noisy = (sums + ctx.noise(j, eng.P) * (self.n_units / ctx.batch_size)) / self.n_units
        ctx.send("CG", noisy, senders=j, receivers=i, models=X[i])
        clean_self = sums[ctx.self_edge] / self.n_units  # ĝ^{ii}, eq. (14)
        g_ii = clean_self[i]
        # Eqs (15)-(18).
        calib = 1.0 / (1.0 + torch.exp(self._cosine(noisy, g_ii)))
        if calib.ndim == 1:
            calib = calib.unsqueeze(1)
        g_edge = noisy / (torch.sqrt(w) * N).unsqueeze(1) + self.alpha * w.unsqueeze(1) * calib * g_ii
        g_tilde = torch.zeros_like(X).index_add_(0, i, g_edge)
        if self.params.weight_decay:
            g_tilde += self.params.weight_decay * X
        # Eqs (19)-(22).
        v_tilde = ctx.momentum * V + g_tilde
        x_tilde = X - ctx.lr * v_tilde
        state["v"] = ctx.gossip(v_tilde, channel="MM", models=X)
        state["x"] = ctx.gossip(x_tilde)
        return losses[ctx.self_edge].mean(1)
