"""Schedules: who talks to whom in round t, as a mixing matrix W_t.

The loop asks the run's schedule for W_t before every round (``RunContext.begin_round``);
gossip, broadcasts and point-to-point messages of that round use it. A schedule returns
the *same* tensor object while the graph does not change, so a static graph costs nothing
per round. Algorithms whose pairings depend on their own state (LEASGD's leader–follower
groups) install W_t themselves with ``RunContext.set_mixing``.

Add a schedule with :func:`register_schedule`; the config field ``schedule`` names it.
"""
from __future__ import annotations

from typing import Callable, Protocol

import numpy as np
import torch

from .registry import named_registry
from .topology import Topology, make_topology

__all__ = ["SCHEDULES", "Schedule", "make_schedule", "register_schedule"]


class Schedule(Protocol):
    def mixing(self, t: int) -> torch.Tensor:
        """W_t, shape (N, N), for round t (1-based)."""


SCHEDULES: dict[str, Callable[..., Schedule]] = {}


register_schedule = named_registry(SCHEDULES, "schedules")
"""``@register_schedule("name")`` on a class ``(topology, generator, device) -> Schedule``."""


@register_schedule("static")
class Static:
    """The topology's W in every round."""

    def __init__(self, topology: Topology, generator: np.random.Generator, device="cpu"):
        self.W = torch.as_tensor(topology.W, dtype=torch.float32, device=device)

    def mixing(self, t: int) -> torch.Tensor:
        return self.W


@register_schedule("random_ring")
class RandomRing:
    """A ring over a fresh uniform permutation of the agents in every round (the random
    logical rings of the straggler-resilient scheme), Metropolis–Hastings weights."""

    def __init__(self, topology: Topology, generator: np.random.Generator, device="cpu"):
        self.n, self.rng, self.device = topology.n_agents, generator, device
        self.ring = make_topology("ring", self.n).W
        self.t, self.W = None, None

    def mixing(self, t: int) -> torch.Tensor:
        if t != self.t:
            perm = self.rng.permutation(self.n)
            W = np.empty_like(self.ring)
            W[np.ix_(perm, perm)] = self.ring
            self.t, self.W = t, torch.as_tensor(W, dtype=torch.float32, device=self.device)
        return self.W


def make_schedule(name: str, topology: Topology, generator: np.random.Generator, device="cpu") -> Schedule:
    """The schedule ``name`` over ``topology``."""
    if name not in SCHEDULES:
        raise ValueError(f"schedule={name!r} is not known; allowed values: {sorted(SCHEDULES)}")
    return SCHEDULES[name](topology, generator, device)
