"""The vectorized DP engine shared by every algorithm.

All N agents' parameters live in one flat tensor ``X`` of shape ``(N, P)`` (momentum and
other per-agent state likewise). The model is applied functionally
(``torch.func.functional_call``) to views of rows of ``X``; there are no per-agent module
copies and no Python loop over samples.

The central primitive is :meth:`Engine.clipped_sums`: for E (model, batch) pairs at once
— e.g. every directed edge (i, j) of the graph, model x_i on agent j's batch — it returns
the sum over the batch of per-sample gradients clipped to C (eq. 9/12 of the DPDL paper:
g·min{1, C/‖g‖}), and the per-sample losses. Work is split into chunks of edges so the
per-sample gradients of one chunk stay within a memory budget.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call, grad, vmap

from . import bookkeeping, per_sample
from .strategies import BATCH_GRAD_STRATEGIES, EVAL_STRATEGIES

__all__ = ["Engine", "ParamLayout", "gossip", "gaussian_noise", "consensus_distance"]


@dataclass(frozen=True)
class ParamLayout:
    """Where each named parameter sits in the flat vector of length P."""

    names: tuple[str, ...]
    shapes: tuple[tuple[int, ...], ...]
    offsets: tuple[int, ...]

    @classmethod
    def from_module(cls, module: nn.Module) -> ParamLayout:
        names, shapes, offsets, off = [], [], [], 0
        for n, p in module.named_parameters():
            names.append(n)
            shapes.append(tuple(p.shape))
            offsets.append(off)
            off += p.numel()
        return cls(tuple(names), tuple(shapes), tuple(offsets))

    @property
    def numels(self) -> tuple[int, ...]:
        return tuple(math.prod(s) for s in self.shapes)

    @property
    def size(self) -> int:
        """P, the number of scalars."""
        return self.offsets[-1] + self.numels[-1]

    def unflatten(self, flat: torch.Tensor) -> dict[str, torch.Tensor]:
        """Views ``{name: (..., *shape)}`` of a ``(..., P)`` tensor."""
        lead = flat.shape[:-1]
        return {
            n: flat[..., o : o + k].view(*lead, *s)
            for n, s, o, k in zip(self.names, self.shapes, self.offsets, self.numels)
        }

    def flatten(self, tensors: dict[str, torch.Tensor], n_lead: int) -> torch.Tensor:
        """Concatenate ``{name: (*lead, *shape)}`` into ``(*lead, P)``."""
        return torch.cat([tensors[n].flatten(n_lead) for n in self.names], dim=-1)

    def segment_ids(self, device=None) -> torch.Tensor:
        """Index of the parameter tensor each of the P scalars belongs to."""
        return torch.repeat_interleave(
            torch.arange(len(self.names), device=device), torch.tensor(self.numels, device=device)
        )


def gossip(W: torch.Tensor, X: torch.Tensor) -> torch.Tensor:
    """One gossip step: row i becomes Σ_j w_ij X_j."""
    return W @ X


def gaussian_noise(shape, std: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """N(0, std_e²) noise of ``shape`` (E, P); ``std`` has one entry per row.

    Drawn on ``generator``'s device and moved to ``std``'s, so a CPU generator gives the
    same noise to a GPU run as to a CPU run.
    """
    z = torch.randn(shape, generator=generator, device=generator.device, dtype=std.dtype).to(std.device)
    return z * std.view(-1, *([1] * (len(shape) - 1)))


def _channels_last(t: torch.Tensor) -> torch.Tensor:
    """A 4-D tensor (images, conv weights) in channels-last memory, oneDNN's fast CPU layout;
    any other tensor as it is."""
    return t.contiguous(memory_format=torch.channels_last) if t.dim() == 4 else t


def consensus_distance(X: torch.Tensor) -> torch.Tensor:
    """(1/N) Σ_i ‖x_i − x̄‖²."""
    return (X - X.mean(0, keepdim=True)).pow(2).sum(1).mean()


class Engine:
    """Functional model plus the batched gradient and evaluation primitives.

    Parameters
    ----------
    module : nn.Module
        A template instance; its parameters give the layout and the initial values.
    device : torch.device
    memory_mb : float
        Budget for one chunk's per-sample gradients (models_in_chunk·B·P floats). Chunks
        of tens of MB are fastest on the CI machine; much larger chunks become memory-bound
        (the measurements behind the default: ``docs/benchmarks.md``, "Engine design
        choices").
    strategy : {"auto", "shared_batch", "per_edge", "per_model"}
        How :meth:`clipped_sums` batches its work. ``"shared_batch"``: per batch, samples
        outermost and the models that use the batch vmapped inside (the first layer is one
        dense conv over all those models' filters). ``"per_edge"``: per (model, batch) pair,
        one ``vmap(grad)`` over the batch's samples. ``"per_model"`` (config
        ``per_sample_strategy: per_model``): one model at a time, one forward and backward
        pass and per-sample weight gradients from the layers' inputs and output gradients
        (:mod:`dpdl_core.sim.per_sample`; ``nn.Sequential`` conv nets only). ``"bookkeeping"``
        (``per_sample_strategy: bookkeeping``): every model that reads a batch in one
        forward and backward pass, per-unit norms from the kept activations and output
        gradients, the clipped sum as one weighted GEMM (:mod:`dpdl_core.sim.bookkeeping`; the
        only kernel that draws per-sample dropout masks). ``"auto"`` picks per batch by the
        deterministic rule of :meth:`choose_strategy` (never by timing: a run's history must
        not depend on machine load). The two agree to float rounding, not bit for bit.
    compile : bool
        Compile the shared-batch per-sample kernel with ``torch.compile`` (inductor): faster
        for LeNet on the CPU, slower for the CIFAR-10 CNN, after a compilation per batch
        shape (``docs/benchmarks.md``, "Engine design choices"). The results agree with the
        eager kernel to float rounding (~6e-7), not bit for bit, so it is off by default and
        a config that turns it on hashes differently.
    eval_strategy : {"vmap", "per_model"}
        How :meth:`evaluate` pushes M models through a test set. ``"vmap"``: one call over
        all models, ``vmap`` of the module (every conv after the first then runs as a
        grouped conv). ``"per_model"``: one model at a time on image chunks of
        :attr:`EVAL_CHUNK`, conv weights and images channels-last (oneDNN's fast layout
        on CPU). The two agree to float summation order (losses ~1e-7 relative), not bit
        for bit, so the config field that picks ``per_model`` is hashed
        (``benchmarks/bench_eval.py`` measures the ratio per model).
    batch_grad_strategy : {"vmap", "per_model"}
        How :meth:`batch_gradients` computes the whole-batch gradients of the models that
        share a batch: ``vmap`` of ``grad`` over them (every conv after the first a grouped
        one), or one model at a time by plain autograd, channels-last. They agree to float
        summation order, so the config field that picks ``per_model`` is hashed
        (``benchmarks/bench_eval.py`` measures both).
    """

    STRATEGIES = ("auto", "shared_batch", "per_edge", "per_model", "bookkeeping")
    EVAL_STRATEGIES = EVAL_STRATEGIES
    BATCH_GRAD_STRATEGIES = BATCH_GRAD_STRATEGIES
    # Images per forward pass of the per-model evaluation: small enough that a conv net's
    # activations stay in cache (bench_eval.py; docs/benchmarks.md, "Evaluation forward").
    EVAL_CHUNK = 256

    def __init__(
        self,
        module: nn.Module,
        device: torch.device | str = "cpu",
        memory_mb: float = 48.0,
        strategy: str = "auto",
        compile: bool = False,
        eval_strategy: str = "vmap",
        batch_grad_strategy: str = "vmap",
    ):
        if strategy not in self.STRATEGIES:
            raise ValueError(f"strategy={strategy!r} is not known; allowed values: {list(self.STRATEGIES)}")
        if strategy == "per_model" and per_sample.unsupported_reason(module):
            raise ValueError(f"the per-model per-sample kernel cannot run this model: "
                             f"{per_sample.unsupported_reason(module)}; use per_sample_strategy: vmap")
        if bookkeeping.has_dropout(module) and strategy != "bookkeeping":
            raise ValueError("the model has dropout, whose per-sample masks only the book-keeping kernel draws; "
                             "use per_sample_strategy: bookkeeping")
        self._steps = bookkeeping.plan(module) if strategy == "bookkeeping" else None
        # Per-sample dropout masks of the gradient passes (set by the run from its seed).
        self.dropout_generator: torch.Generator | None = None
        if eval_strategy not in self.EVAL_STRATEGIES:
            raise ValueError(f"eval_strategy={eval_strategy!r} is not known; "
                             f"allowed values: {list(self.EVAL_STRATEGIES)}")
        if batch_grad_strategy not in self.BATCH_GRAD_STRATEGIES:
            raise ValueError(f"batch_grad_strategy={batch_grad_strategy!r} is not known; "
                             f"allowed values: {list(self.BATCH_GRAD_STRATEGIES)}")
        self.eval_strategy = eval_strategy
        self.batch_grad_strategy = batch_grad_strategy
        self.device = torch.device(device)
        self.module = module.to(self.device)
        self.layout = ParamLayout.from_module(module)
        self.memory_mb = memory_mb
        self.strategy = strategy
        for p in self.module.parameters():
            p.requires_grad_(False)
        # Evaluation and the vmap kernels call the module functionally: in eval mode a
        # Dropout layer is the identity there; the book-keeping kernel applies its own masks.
        self.module.eval()

        def unit_loss(params, xu, yu):
            loss = F.cross_entropy(functional_call(self.module, params, (xu,)), yu)
            return loss, loss.detach()

        # Samples outermost, models inside with the batch shared: the first layer then
        # runs as one dense conv over all models' filters, faster on CPU than batching
        # (model, batch) pairs, which makes every conv a grouped conv (docs/benchmarks.md,
        # "Engine design choices").
        models_on_shared_unit = vmap(grad(unit_loss, has_aux=True), in_dims=(0, None, None))
        self._shared_batch_grads = vmap(models_on_shared_unit, in_dims=(None, 0, 0))
        if compile:
            # dynamic=False: one specialised kernel per (models, batch) shape; a run has few.
            self._shared_batch_grads = torch.compile(self._shared_batch_grads, dynamic=False)
        self._models_on_shared_batch = models_on_shared_unit
        # One model, vmapped over the samples (units) of its batch: the per-edge strategy.
        self._per_edge_grads = vmap(grad(unit_loss, has_aux=True), in_dims=(None, 0, 0))

        def forward(params, x):
            return functional_call(self.module, params, (x,))

        self._per_agent_forward = vmap(forward, in_dims=(0, None))

    @property
    def P(self) -> int:
        return self.layout.size

    def initial_params(self, n_agents: int) -> torch.Tensor:
        """``(N, P)``: every agent starts from the template's parameters (x_0^i = x_0)."""
        flat = torch.cat([p.detach().reshape(-1) for p in self.module.parameters()]).to(self.device)
        return flat.unsqueeze(0).repeat(n_agents, 1).contiguous()

    def _models_per_chunk(self, B: int) -> int:
        return max(1, int(self.memory_mb * 2**20 // (4 * B * self.P)))

    def choose_strategy(self, batch_size: int, models: int) -> str:
        """The strategy :meth:`clipped_sums` uses for one batch of ``batch_size`` samples
        shared by ``models`` models: the Engine's ``strategy`` unless it is ``"auto"``.
        Deterministic: the same arguments give the same choice on every machine and under
        any load (a run's history depends on it at float rounding).

        The auto rule is ``shared_batch`` for every shape: in interleaved measurements
        sharing the batch won or tied everywhere (no consistent winner only for the CIFAR-10
        CNN at B = 216; the ratios: ``docs/benchmarks.md``, "Engine design choices"). Two candidates for per_edge
        measured within the machine's noise and are not taken, because either would change
        stored histories (at float rounding) for no proven gain: one model per batch (k = 1;
        DP-DSGD, Muffliato, NetFleet, LEASGD: would change four pinned histories) and one
        model per memory chunk (2·B·P floats over ``memory_mb``: would change LEASGD ``cpu``
        (leasgd_mlp, B=32) and PDSL ``paper`` (B=250) runs).
        """
        if self.strategy != "auto":
            return self.strategy
        return "shared_batch"

    def clipped_sums(
        self,
        X: torch.Tensor,
        data_index: torch.Tensor,
        xb: torch.Tensor,
        yb: torch.Tensor,
        clip: float,
        unit: int = 1,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Σ over a batch of clipped per-unit gradients, for E (model, batch) pairs.

        Pair e is model ``X[e]`` on the batch of agent ``data_index[e]`` — for DPDL, every
        edge (i, j): x_i on agent j's batch. Pairs are grouped by batch, so each batch is
        pushed once through all models that use it.

        Parameters
        ----------
        X : (E, P)
            The model of each pair.
        data_index : (E,) long
            Which batch each pair uses.
        xb : (A, B, C, H, W), yb : (A, B)
            The A agents' batches.
        clip : float
            C; each unit's gradient g becomes g·min{1, C/‖g‖} (eqs 9, 12).
        unit : int
            Samples per clipping unit: 1 is per-sample clipping (the paper); m > 1 clips
            the mean gradient of each group of m consecutive samples (the authors'
            micro-batches). B must be a multiple of ``unit``.

        Returns
        -------
        sums : (E, P)
            Σ_u ĝ_u over the B/unit units.
        losses : (E, B/unit)
            Mean loss of each unit at the pair's model.
        """
        A, B = yb.shape
        if B % unit:
            raise ValueError(f"batch size {B} is not a multiple of the clipping unit {unit}")
        U = B // unit
        xu = xb.reshape(A, U, unit, *xb.shape[2:])
        yu = yb.reshape(A, U, unit)
        E = X.shape[0]
        sums = torch.empty(E, self.P, device=self.device)
        losses = torch.empty(E, U, device=self.device)
        step = self._models_per_chunk(B)
        order = torch.argsort(data_index, stable=True)
        counts = torch.bincount(data_index, minlength=A).tolist()
        start = 0
        # One iteration per batch (agent) and memory chunk; each is a large vectorized call.
        for a, count in enumerate(counts):
            rows_a = order[start : start + count]
            start += count
            if count and self.strategy == "bookkeeping":
                sums[rows_a], losses[rows_a] = self._bookkeeping(X[rows_a], xb[a], yb[a], clip, unit)
                continue
            if count and self.strategy == "per_model":
                per_sample.clipped_sums(self.module, self.layout.unflatten(X[rows_a]), xb[a], yb[a], clip, unit,
                                        sums, losses, rows_a.tolist())
                continue
            if count and self.choose_strategy(B, count) == "per_edge":
                for e in rows_a.tolist():
                    g, loss = self._per_edge_grads(self.layout.unflatten(X[e]), xu[a], yu[a])  # (U, ...)
                    sq = sum(t.flatten(1).pow(2).sum(-1) for t in g.values())  # (U,)
                    factor = torch.clamp(clip / (sq.sqrt() + 1e-12), max=1.0)
                    sums[e] = torch.cat([torch.tensordot(factor, g[n], dims=1).reshape(-1) for n in self.layout.names])
                    losses[e] = loss
                continue
            # Even chunks (6 models with room for 5 run as 3 + 3, not 5 + 1).
            size = math.ceil(count / max(1, math.ceil(count / step))) if count else 1
            for c in range(0, count, size):
                rows = rows_a[c : c + size]
                g, loss = self._shared_batch_grads(self.layout.unflatten(X[rows]), xu[a], yu[a])  # (U, k, ...)
                sq = sum(t.flatten(2).pow(2).sum(-1) for t in g.values())  # (U, k)
                factor = torch.clamp(clip / (sq.sqrt() + 1e-12), max=1.0)
                summed = {n: torch.einsum("uk,uk...->k...", factor, t) for n, t in g.items()}
                sums[rows] = self.layout.flatten(summed, n_lead=1)
                losses[rows] = loss.T
        return sums, losses

    def _bookkeeping(self, X: torch.Tensor, xb: torch.Tensor, yb: torch.Tensor, clip: float,
                     unit: int) -> tuple[torch.Tensor, torch.Tensor]:
        """:func:`dpdl_core.sim.bookkeeping.clipped_sums` of the models ``X`` (k, P) on one batch,
        with fresh dropout masks for a model that has dropout."""
        masks = bookkeeping.dropout_masks(self.module, tuple(xb.shape[1:]), X.shape[0], yb.shape[0],
                                          self.dropout_generator) if bookkeeping.has_dropout(self.module) else []
        return bookkeeping.clipped_sums(self._steps, self.layout.unflatten(X), _channels_last(xb), yb, clip, unit,
                                        masks)

    def batch_gradients(
        self, X: torch.Tensor, data_index: torch.Tensor, xb: torch.Tensor, yb: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Mean-loss gradient of each (model, batch) pair, no per-sample work.

        Same pairing as :meth:`clipped_sums`; used where a method clips the batch gradient
        as a whole (PDSL's eqs 10 and 13, DP-CGA as the DPDL paper describes it). The
        Engine's ``batch_grad_strategy`` says how the models that share a batch are batched:
        ``vmap`` of ``grad`` over them, or one model at a time (:meth:`_model_gradient`).

        Returns
        -------
        grads : (E, P)
        losses : (E,)
        """
        E = X.shape[0]
        grads = torch.empty(E, self.P, device=self.device)
        losses = torch.empty(E, device=self.device)
        order = torch.argsort(data_index, stable=True)
        counts = torch.bincount(data_index, minlength=yb.shape[0]).tolist()
        start = 0
        for a, count in enumerate(counts):
            rows = order[start : start + count]
            start += count
            if not count:
                continue
            if self.strategy == "bookkeeping" and bookkeeping.has_dropout(self.module):
                # One unit of the whole batch, unclipped: the gradient of the batch's mean loss
                # under the same per-sample dropout masks as the clipped passes.
                g, loss = self._bookkeeping(X[rows], xb[a], yb[a], math.inf, yb.shape[1])
                grads[rows], losses[rows] = g, loss[:, 0]
                continue
            if self.batch_grad_strategy == "per_model":
                xa = _channels_last(xb[a])
                for e in rows.tolist():
                    grads[e], losses[e] = self._model_gradient(X[e], xa, yb[a])
                continue
            g, loss = self._models_on_shared_batch(self.layout.unflatten(X[rows]), xb[a], yb[a])
            grads[rows] = self.layout.flatten(g, n_lead=1)
            losses[rows] = loss
        return grads, losses

    def _model_gradient(self, x: torch.Tensor, xb: torch.Tensor, yb: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(P,) mean-loss gradient and the loss of one model ``x`` on one batch, by plain
        autograd with 4-D tensors channels-last (oneDNN's native CPU layout)."""
        params = {n: _channels_last(t).requires_grad_(True) for n, t in self.layout.unflatten(x).items()}
        with torch.enable_grad():
            loss = F.cross_entropy(functional_call(self.module, params, (xb,)), yb)
            g = torch.autograd.grad(loss, [params[n] for n in self.layout.names])
        # reshape(-1) reads a channels-last gradient in its logical (NCHW) order, the layout's.
        return torch.cat([t.reshape(-1) for t in g]), loss.detach()

    @torch.no_grad()
    def evaluate(self, X: torch.Tensor, x: torch.Tensor, y: torch.Tensor,
                 batch: int | None = None, strategy: str | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Mean cross-entropy and accuracy of each of the M models in ``X`` (M, P).

        ``batch``: images per forward pass (default 2,000 for ``vmap``, :attr:`EVAL_CHUNK`
        for ``per_model``); ``strategy`` says how the models are batched (default: the
        engine's ``eval_strategy``).
        """
        strategy = strategy or self.eval_strategy
        if strategy not in self.EVAL_STRATEGIES:
            raise ValueError(f"strategy={strategy!r} is not known; allowed values: {list(self.EVAL_STRATEGIES)}")
        if strategy == "per_model":
            return self._evaluate_per_model(X, x, y, batch or self.EVAL_CHUNK)
        batch = batch or 2000
        params = self.layout.unflatten(X)
        M = X.shape[0]
        loss = torch.zeros(M, device=self.device)
        correct = torch.zeros(M, device=self.device)
        for s in range(0, len(y), batch):
            xs, ys = x[s : s + batch].to(self.device), y[s : s + batch].to(self.device)
            logits = self._per_agent_forward(params, xs)  # (M, b, classes)
            loss += F.cross_entropy(logits.flatten(0, 1), ys.repeat(M), reduction="none").view(M, -1).sum(1)
            correct += (logits.argmax(-1) == ys).sum(1)
        return loss / len(y), correct / len(y)

    def _evaluate_per_model(self, X: torch.Tensor, x: torch.Tensor, y: torch.Tensor,
                            batch: int) -> tuple[torch.Tensor, torch.Tensor]:
        """:meth:`evaluate` one model at a time, 4-D tensors (conv weights, images) channels-last."""
        chunks = [(_channels_last(x[s : s + batch].to(self.device)), y[s : s + batch].to(self.device))
                  for s in range(0, len(y), batch)]
        params = self.layout.unflatten(X)
        M = X.shape[0]
        loss = torch.zeros(M, device=self.device)
        correct = torch.zeros(M, device=self.device)
        for i in range(M):
            model = {n: _channels_last(t[i]) for n, t in params.items()}
            for xs, ys in chunks:
                logits = functional_call(self.module, model, (xs,))
                loss[i] += F.cross_entropy(logits, ys, reduction="sum")
                correct[i] += (logits.argmax(-1) == ys).sum()
        return loss / len(y), correct / len(y)
