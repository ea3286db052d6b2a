"""The one training loop every run, sweep and attack goes through.

Per round t: the schedule installs W_t (``RunContext.begin_round``); taps that probe
(e.g. the gradient-inversion harness) run their side computation on a copy of the state;
every agent samples its batch; the algorithm takes its step, sending its messages through
the context, which counts them and shows them to the taps. Callers (the runner, the attack
harness) consume the rounds and decide what to record.
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence

import torch

from .algorithms.base import Tap

__all__ = ["training_rounds"]


def training_rounds(prep, state: dict[str, torch.Tensor], start: int, stop: int,
                    taps: Sequence[Tap] = ()) -> Iterator[tuple[int, torch.Tensor]]:
    """Run rounds ``start..stop`` of ``prep``'s algorithm on ``state`` (in place).

    Parameters
    ----------
    prep : dpdl_core.runs.runner.Prepared
    taps : sequence of Tap
        Observers of the messages; a tap with a ``probe(t, prep, state)`` method is called
        before round t's real step and may run a side step on a copy of ``state``.

    Yields
    ------
    (t, losses) : int, (N,) tensor
        After each round, each agent's training loss at its pre-step model.
    """
    ctx, alg = prep.ctx, prep.algorithm
    ctx.taps = list(taps)
    try:
        for t in range(start, stop + 1):
            ctx.begin_round(t)
            for tap in taps:
                if hasattr(tap, "probe"):
                    tap.probe(t, prep, state)
            xb, yb = prep.sample_batches()
            yield t, alg.step(state, xb, yb)
    finally:
        ctx.taps = []
