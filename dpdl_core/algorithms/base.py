"""What every algorithm module provides, and the per-run context it works in."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import torch

from ..engine import Engine, gaussian_noise
from ..topology import Topology

__all__ = ["Algorithm", "RunContext"]


@dataclass
class RunContext:
    """Everything an algorithm step needs, built once per run by the runner.

    Attributes
    ----------
    edge_i, edge_j : (E,) long
        Every ordered pair with w_ij > 0, self-loops included, sorted by i then j.
    edge_w : (E,)
        w_ij of each pair.
    self_edge : (N,) long
        Position of (i, i) in the edge list.
    sigma : (N,)
        Noise multiplier of each agent's messages (σ_i; noise std σ_i·C).
    recorder : dict, optional
        When set, :meth:`record` keeps a copy of every message an algorithm sends this
        round, keyed by channel (the gradient-inversion attacks read it); ``None`` in
        training.
    """

    engine: Engine
    topology: Topology
    W: torch.Tensor
    edge_i: torch.Tensor
    edge_j: torch.Tensor
    edge_w: torch.Tensor
    self_edge: torch.Tensor
    sigma: torch.Tensor
    clip: float
    lr: float
    momentum: float
    batch_size: int
    noise_generator: torch.Generator
    recorder: dict | None = None

    @classmethod
    def build(cls, engine: Engine, topology: Topology, sigma: np.ndarray, *, clip, lr, momentum, batch_size, noise_generator):
        dev = engine.device
        edges = topology.edges()
        e_i = torch.as_tensor(edges[:, 0], device=dev)
        e_j = torch.as_tensor(edges[:, 1], device=dev)
        self_edge = torch.nonzero(e_i == e_j).squeeze(1)
        W = torch.as_tensor(topology.W, dtype=torch.float32, device=dev)
        return cls(
            engine=engine,
            topology=topology,
            W=W,
            edge_i=e_i,
            edge_j=e_j,
            edge_w=W[e_i, e_j],
            self_edge=self_edge,
            sigma=torch.as_tensor(sigma, dtype=torch.float32, device=dev),
            clip=float(clip),
            lr=float(lr),
            momentum=float(momentum),
            batch_size=int(batch_size),
            noise_generator=noise_generator,
        )

    @property
    def n_agents(self) -> int:
        return self.W.shape[0]

    @property
    def private(self) -> bool:
        return bool((self.sigma > 0).any())

    def noisy_gradients(self, X: torch.Tensor, xb: torch.Tensor, yb: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Each agent's DP gradient at ``X[i]`` on its own batch: (Σ_b clip(g_b) + z_i)/B with
        z_i ~ N(0, σ_i²C²I) (the Gaussian mechanism of DPDL eq. 13, DP-SGD style).

        Returns
        -------
        noisy : (N, P)
        losses : (N,) mean batch loss at ``X[i]``
        """
        agents = torch.arange(self.n_agents, device=X.device)
        sums, losses = self.engine.clipped_sums(X, agents, xb, yb, self.clip)
        return (sums + self.noise(agents, self.engine.P)) / yb.shape[1], losses.mean(1)

    def record(self, channel: str, messages: torch.Tensor, models: torch.Tensor, owners: torch.Tensor) -> None:
        """Expose the messages of ``channel`` to an eavesdropper (no-op without a recorder).

        Parameters
        ----------
        messages : (M, P)
            What is sent over the links.
        models : (M, P)
            The parameters each message was computed at (known to the eavesdropper, who
            sees the models broadcast).
        owners : (M,) long
            Whose local batch each message was computed from.
        """
        if self.recorder is not None:
            self.recorder[channel] = (messages.detach().clone(), models.detach().clone(), owners.detach().clone())

    def noise(self, owners: torch.Tensor, P: int) -> torch.Tensor:
        """Gaussian noise N(0, σ_o²C²I) for messages made by agents ``owners`` (E,)."""
        if not self.private:
            return torch.zeros(len(owners), P, device=self.W.device)
        return gaussian_noise((len(owners), P), self.sigma[owners] * self.clip, self.noise_generator)


class Algorithm:
    """Base class: a small module per algorithm implements ``init_state`` and ``step``.

    Subclasses define ``name``, a frozen ``Params`` dataclass of their options, and
    ``messages_per_round`` (k_i, the Gaussian messages agent i computes from its batch
    each round, which the privacy accountant needs).
    """

    name: ClassVar[str]
    Params: ClassVar[type]

    def __init__(self, params, ctx: RunContext):
        self.params = params
        self.ctx = ctx

    @classmethod
    def messages_per_round(cls, topology: Topology, params) -> np.ndarray:
        raise NotImplementedError

    def init_state(self, X0: torch.Tensor) -> dict[str, torch.Tensor]:
        raise NotImplementedError

    @classmethod
    def vectors_per_round(cls, topology: Topology, params) -> int:
        """Parameter-sized vectors sent over all links per round (communication cost)."""
        raise NotImplementedError

    def step(self, state: dict[str, torch.Tensor], xb: torch.Tensor, yb: torch.Tensor) -> torch.Tensor:
        """Advance one round in place; return each agent's training loss (N,) at its
        pre-step model on its own batch."""
        raise NotImplementedError

    def diagnostics(self) -> dict:
        """Counters worth recording with the run (e.g. QP fallbacks)."""
        return {}

    def models(self, state: dict[str, torch.Tensor]) -> torch.Tensor:
        """The (N, P) models to evaluate."""
        return state["x"]
