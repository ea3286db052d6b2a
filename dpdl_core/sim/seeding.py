"""The one seeding function: every random stream of a run derives from its seed.

``numpy.random.SeedSequence`` spawns independent child streams, so adding a consumer never
shifts the numbers another consumer sees. Nothing here touches global RNG state.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

__all__ = ["RunRngs", "make_rngs"]


@dataclass
class RunRngs:
    """Independent generators of one run.

    Attributes
    ----------
    partition : np.random.Generator
        Non-IID split of the training data.
    init_seed : int
        Model initialization (shared by all agents: x_0^i = x_0).
    batches : torch.Generator
        Mini-batch sampling.
    noise : torch.Generator
        Gaussian DP noise. On the CPU whatever the run's device (draws are moved to the
        device), so a seed gives the same noise, and the same run, on CPU and GPU.
    algorithm : torch.Generator
        The algorithm's own randomness (random pairings, permutations); on the CPU too.
    schedule : np.random.Generator
        A time-varying schedule's draws (e.g. a fresh random ring per round).
    dropout : torch.Generator
        Per-sample dropout masks of the gradient passes (models with Dropout layers); on
        the CPU too.
    """

    partition: np.random.Generator
    init_seed: int
    batches: torch.Generator
    noise: torch.Generator
    algorithm: torch.Generator
    schedule: np.random.Generator
    dropout: torch.Generator


def make_rngs(seed: int) -> RunRngs:
    """Derive all generators of a run from ``seed`` (all on the CPU: see :class:`RunRngs`)."""
    # A SeedSequence's i-th child does not depend on how many are spawned, so streams added
    # later leave the earlier ones (and stored results) unchanged.
    part, init, batch, noise, alg, sched, drop = np.random.SeedSequence(seed).spawn(7)

    def torch_gen(seq):
        return torch.Generator().manual_seed(int(seq.generate_state(1, np.uint64)[0] >> 1))

    return RunRngs(
        partition=np.random.default_rng(part),
        init_seed=int(init.generate_state(1)[0]),
        batches=torch_gen(batch),
        # CUDA's Philox stream differs from the CPU's: drawing on the CPU keeps one stream
        # per seed on every device (the draws are small next to a round's gradients).
        noise=torch_gen(noise),
        algorithm=torch_gen(alg),
        schedule=np.random.default_rng(sched),
        dropout=torch_gen(drop),
    )


def derive_seed(seed: int, *names: str | int) -> int:
    """A child seed of ``seed`` named by ``names`` (stable across runs and machines)."""
    key = [seed] + [int.from_bytes(str(n).encode()[:8].ljust(8, b"\0"), "little") for n in names]
    return int(np.random.SeedSequence(key).generate_state(1)[0])
