"""PDSL — Algorithm 1 of Wang, Yuan, Wang, Li (equation numbers of ``papers/pdsl.txt``).

Per round t, at every agent i (all agents at once here; M_i = {j : ω_ij > 0}, i included):

1. Own gradient g_{i,i} = ∇F_i(x_i^{t−1}; ξ_{i,t}) on a batch of B samples (eq 9), clipped as
   a whole vector, g̃ = g/max{1, ‖g‖/C} (eq 10), plus fresh noise ĝ_{i,i} = g̃ + n,
   n ~ N(0, σ_i²C²I) (eq 11).
2. Models x_i^{t−1} broadcast in the clear; cross-gradients g_{i,j} = ∇F_i(x_j^{t−1}; ξ_{i,t})
   on the same batch (eq 12), clipped (eq 13), fresh noise per message (eq 14), returned
   to j.
3. Candidates x_{i,j} = x_i^{t−1} − γ·ĝ_{j,i} for every j ∈ M_i (eq 15).
4. Shapley values of the game v(M′) = accuracy on the validation set Q of the average of
   M′'s candidates (eqs 16–18, or Algorithm 2); :mod:`.shapley` evaluates every agent's
   coalitions in batched forward passes (:mod:`.evaluation`).
5. Min–max normalisation (eq 19) and weights π_{i,j} = φ̂_{i,j}/(ω_{i,j}Σ_kφ̂_{i,k}) (eq 20).
6. ḡ_i = Σ_j π_{i,j}ĝ_{j,i} (eq 21), û_i = αu_i^{t−1} + ḡ_i (eq 22),
   x̂_i = x_i^{t−1} − γû_i (eq 23); gossip u_i^t = Σ_j ω_ij û_j (eq 24) and
   x_i^t = Σ_j ω_ij x̂_j (eq 25), u^0 = 0.

In edge form (the context's edges e = (i, j), rows grouped by i), the message row e is
ĝ_{j,i}: agent j's gradient of x_i on j's batch, noised by j; agent i receives it.

σ is the run's noise multiplier (std σ_i·C, the paper's σ = σ_i·C). Under the paper's
batch-level clipping one release has replace-one sensitivity 2C, so ``noise_scale`` is ½;
``clipping="per_sample"`` (the spec's ablation, §5.1) sends (Σ_b clip(g_b) + n)/B instead,
the DP-SGD mechanism of the package's baselines (``noise_scale`` 1).

Stacked runs (:mod:`dpdl_core.runs.stacking`): everything up to the candidates is per edge and
the gossip per run; the Shapley games are solved run by run, each with the run's own
validation set Q and generator (``ctx.members[r]``), in the batched
calls its plain run makes (evaluating several runs' coalition models in one call would
change the GEMMs' shapes, and with them the last bits of a logit and possibly an argmax).
"""
from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np
import torch

from ...sim import Algorithm, check_choice, check_int, register
from .evaluation import StackedEvaluator
from .shapley import WEIGHTINGS, ShapleyConfig, min_max_normalise, shapley_round, shapley_weights

__all__ = ["CLIPPINGS", "PDSL", "PDSLParams", "VALUE_STRATEGIES"]

CLIPPINGS = ("batch", "per_sample")
# How v (eq 16) pushes the coalition models through Q: see PDSLParams.value_strategy.
VALUE_STRATEGIES = ("stacked", "per_model")


@dataclass(frozen=True)
class PDSLParams:
    """Options of PDSL (the config's ``algo``).

    Attributes
    ----------
    clipping : {"batch", "per_sample"}
        ``batch``: eqs (10), (13) clip the batch-mean gradient as a whole (the paper).
        ``per_sample``: per-sample clipping, message (Σ_b clip(g_b) + n)/B (ablation).
    estimator, exact_max_players, permutations, mc_sampling, empty, chunk
        The Shapley computation (:class:`~dpdl_core.papers.pdsl.shapley.ShapleyConfig`):
        exact eq (18) for n ≤ ``exact_max_players`` under ``auto``, else Algorithm 2 with
        R = ``permutations`` (``mc_sampling`` ``stratified`` or ``permutation``); v(∅) =
        ``empty`` (``previous``: accuracy of x_i^{t−1}, the spec's choice; ``zero``:
        Definition 3); ``chunk`` coalition models per batched forward pass.
    floor : float in [0, 1]
        Share floor f of eq (20): s = (1 − f)·φ̂/Σφ̂ + f/n. 0 is eq (20) exactly (the worst
        player of every game gets weight 0, and Theorem 1's σ is infinite); the spec's ½
        bounds φ̂_min by 1/(2n).
    weighting : {"omega", "average"}
        Eq (20) as printed, π = s/ω (Σ_j π_ij = n for uniform ω), or π = s (Σ_j π_ij = 1,
        eq (21) as "a weighted average", as the text calls it):
        :func:`~.shapley.shapley_weights`.
    eval_batch : int
        Validation images per forward pass (memory: about chunk × eval_batch × the largest
        activation of one image).
    value_strategy : {"stacked", "per_model"}
        How v of eq (16) is computed, never what: ``stacked`` pushes ``chunk`` coalition
        models at once through the GEMM evaluator (:mod:`.evaluation`; the faster one for
        ``pdsl_mnist``), ``per_model`` one model at a time through oneDNN's channels-last
        convolutions (``Engine.evaluate(strategy="per_model")``; the faster one for
        ``pdsl_cifar``'s 5×5 convolutions: ``docs/benchmarks.md``, "PDSL's execution
        strategies"). The accuracies agree up to float summation order (a near-tie of two
        logits may flip), so a run that names ``per_model`` hashes differently.
    """

    clipping: str = "batch"
    estimator: str = "auto"
    exact_max_players: int = 8
    permutations: int = 10
    mc_sampling: str = "stratified"
    empty: str = "previous"
    floor: float = 0.0
    weighting: str = "omega"
    chunk: int = 32
    eval_batch: int = 500
    value_strategy: str = "stacked"

    def __post_init__(self):
        check_choice(self, "clipping", CLIPPINGS)
        check_choice(self, "value_strategy", VALUE_STRATEGIES)
        check_choice(self, "weighting", WEIGHTINGS)
        ShapleyConfig(**self._shapley_fields())  # validates those fields, naming the bad one
        if not 0.0 <= self.floor <= 1.0:
            raise ValueError(f"floor={self.floor!r} must be in [0, 1]")
        check_int(self, "eval_batch")

    def _shapley_fields(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(ShapleyConfig)}

    @property
    def shapley(self) -> ShapleyConfig:
        """The Shapley options as a :class:`ShapleyConfig`."""
        return ShapleyConfig(**self._shapley_fields())


class _PerModelValue:
    """v of eq (16), one model at a time: (K, P) models → (K,) accuracies on Q."""

    def __init__(self, engine, x: torch.Tensor, y: torch.Tensor):
        self.engine, self.x, self.y = engine, x, y

    def __call__(self, X: torch.Tensor) -> torch.Tensor:
        return self.engine.evaluate(X, self.x, self.y, strategy="per_model")[1]


@register
class PDSL(Algorithm):
    name = "pdsl"
    display_name = "PDSL"
    Params = PDSLParams
    stackable = True
    execution_options = {"value_strategy": VALUE_STRATEGIES}
    hashed_unless = {"value_strategy": "stacked", "weighting": "omega"}

    def __init__(self, params: PDSLParams, ctx):
        super().__init__(params, ctx)
        validation = [m.validation for m in ctx.members]
        if any(v is None for v in validation):
            raise ValueError(
                "PDSL needs the validation set Q of eq (16): set validation_samples "
                "(the paper: 2,000 test images)"
            )
        self.shapley_config = params.shapley
        # v of eq (16): accuracy on Q of stacked models, as GEMMs (see .evaluation); one
        # per stacked run (its own Q), sharing their work buffers (used one call at a time).
        if params.value_strategy == "per_model":
            self.values = [_PerModelValue(ctx.engine, *v) for v in validation]
        else:
            self.values = [StackedEvaluator(ctx.engine, *v, image_batch=params.eval_batch) for v in validation]
            for evaluator in self.values[1:]:
                evaluator._buffers = self.values[0]._buffers
        self.value = self.values[0]
        # Per stacked run (one entry in a plain run).
        self.rounds = 0
        self.ties = [0] * ctx.runs
        self.evaluations = [0] * ctx.runs
        self.weight_sum = [0.0] * ctx.runs
        self.min_share = [float("inf")] * ctx.runs

    @classmethod
    def messages_per_round(cls, topology, params) -> np.ndarray:
        """k_j = |M_j|: agent j's own noisy gradient and one cross-gradient per neighbour,
        all from its batch ξ_{j,t}."""
        return topology.degrees

    @classmethod
    def noise_scale(cls, params, batch_size) -> float:
        """A batch-clipped vector (norm ≤ C) with noise std σC has replace-one sensitivity
        2C: ½. A per-sample clipped sum with noise σC: 1."""
        return 0.5 if params.clipping == "batch" else 1.0

    def init_state(self, X0):
        return {"x": X0.clone(), "u": torch.zeros_like(X0)}

    def messages(self, X: torch.Tensor, xb: torch.Tensor, yb: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """ĝ_{j,i} of every edge e = (i, j) (eqs 9–14) and each agent's loss at x_i on its batch.

        Returns
        -------
        msgs : (E, P)
        losses : (N,)
        """
        ctx, eng = self.ctx, self.ctx.engine
        i, j = ctx.edge_i, ctx.edge_j
        noise = ctx.noise(j, eng.P)  # one fresh draw per message, std σ_j·C (eqs 11, 14)
        if self.params.clipping == "batch":
            grads, losses = eng.batch_gradients(X[i], j, xb, yb)
            clipped = grads / torch.clamp(grads.norm(dim=1, keepdim=True) / ctx.clip, min=1.0)  # eqs (10), (13)
            return clipped + noise, losses[ctx.self_edge]
        sums, losses = eng.clipped_sums(X[i], j, xb, yb, ctx.clip)
        return (sums + noise) / yb.shape[1], losses[ctx.self_edge].mean(1)

    def step(self, state, xb, yb):
        ctx = self.ctx
        X, U = state["x"], state["u"]
        i, j, w = ctx.edge_i, ctx.edge_j, ctx.edge_w
        N = ctx.n_agents
        ctx.broadcast(X)  # x_i^{t−1} out to the neighbours (Algorithm 1, line 5)
        msgs, losses = self.messages(X, xb, yb)
        ctx.send("CG", msgs, senders=j, receivers=i, models=X[i])
        # Eqs (15)-(18): candidates and every agent's Shapley values, run by run.
        lr = ctx.lr[i] if torch.is_tensor(ctx.lr) else ctx.lr  # a stack's per-run η, per edge
        candidates = X[i] - lr * msgs
        counts = torch.bincount(i, minlength=N).cpu().numpy()
        edges = self._run_edges(counts)
        phi, evaluations = [], []
        for r, member in enumerate(ctx.members):
            a, b = edges[r]
            # A copy: the run's candidates in their own memory, as its plain run holds them.
            res = shapley_round(candidates[a:b].clone(), counts[member.rows], self.values[r], self.shapley_config,
                                member.rng, previous=X[member.rows])
            phi.append(res.phi)
            evaluations.append(res.evaluations)
        # Eqs (19)-(20) in float64: ties are differences below 1e-12.
        phi_hat, tied = min_max_normalise(torch.cat(phi).to(X.device), i, N)
        pi = shapley_weights(phi_hat, w, i, N, floor=self.params.floor, weighting=self.params.weighting).to(X.dtype)
        # Eqs (21)-(25).
        g_bar = torch.zeros_like(X).index_add_(0, i, pi.unsqueeze(1) * msgs)
        u_hat = ctx.momentum * U + g_bar
        x_hat = X - ctx.lr * u_hat
        state["u"] = ctx.gossip(u_hat, channel="MM", models=X)
        state["x"] = ctx.gossip(x_hat)
        self._count(evaluations, tied, pi, w, edges)
        return losses

    def _run_edges(self, counts: np.ndarray) -> list[tuple[int, int]]:
        """Each stacked run's edges, (first, end): consecutive, as the edges are sorted by
        agent and W is block diagonal."""
        sizes = counts.reshape(self.ctx.runs, -1).sum(1)
        ends = np.cumsum(sizes)
        return [(int(e - k), int(e)) for e, k in zip(ends, sizes)]

    def _count(self, evaluations: list, tied: torch.Tensor, pi: torch.Tensor, w: torch.Tensor, edges: list) -> None:
        self.rounds += 1
        n = self.ctx.topology.n_agents
        for r, ((a, b), member) in enumerate(zip(edges, self.ctx.members, strict=True)):
            run_pi, run_w = pi[a:b].clone(), w[a:b].clone()
            self.evaluations[r] += evaluations[r]
            self.ties[r] += int(tied[member.rows].sum())
            self.weight_sum[r] += float(run_pi.sum()) / n
            self.min_share[r] = min(self.min_share[r], float((run_pi * run_w).min()))

    def _run_of(self, agents: slice) -> int:
        """The stacked run whose rows ``agents`` are (0 in a plain run)."""
        return int(np.arange(self.ctx.n_agents)[agents][0]) // self.ctx.topology.n_agents

    def counters(self, agents: slice = slice(None)) -> dict:
        r = self._run_of(agents)
        return {"rounds": self.rounds, "ties": self.ties[r], "evaluations": self.evaluations[r],
                "weight_sum": self.weight_sum[r], "min_share": self.min_share[r]}

    def restore_counters(self, agents: slice, counters: dict) -> None:
        # The runs of a stack resume from the same round (the runner stacks them so).
        r = self._run_of(agents)
        self.rounds = counters["rounds"]
        self.ties[r], self.evaluations[r] = counters["ties"], counters["evaluations"]
        self.weight_sum[r], self.min_share[r] = counters["weight_sum"], counters["min_share"]

    def diagnostics(self, agents: slice = slice(None)) -> dict:
        """Shapley work and weights: evaluations per round, how often eq (19) tied (all
        weights set to 1), the mean Σ_j π_ij (≈ n under uniform ω: a step of ≈ nγ) and the
        smallest share ω_ij π_ij seen (Theorem 1's φ̂_min).

        ``agents``: one stacked run's rows (its own counts); rows of several runs give their
        evaluations summed and the other values over all of them."""
        n = self.ctx.topology.n_agents
        runs = sorted(set((np.arange(self.ctx.n_agents)[agents] // n).tolist()))
        r = max(self.rounds, 1)
        return {
            "shapley_evaluations_per_round": sum(self.evaluations[k] for k in runs) / r,
            "shapley_tie_fraction": sum(self.ties[k] for k in runs) / (r * n * len(runs)),
            "pi_sum_mean": sum(self.weight_sum[k] for k in runs) / (r * len(runs)),
            "phi_min_observed": min(self.min_share[k] for k in runs) if self.rounds else None,
        }
