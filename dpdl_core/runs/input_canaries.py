"""Input-space canaries for the audit of a training run (:mod:`dpdl_core.runs.audit_run`,
``AuditSpec(kind="input")``): real examples in one victim agent's data, scored from the
victim's models alone (black-box).

* The m canaries are drawn from ``derive_seed(seed, "audit", "inputs")`` (and their labels
  from ``derive_seed(seed, "audit", "labels")``) before the inclusion coins
  (``derive_seed(seed, "audit", "inclusion")``). ``mislabelled``: images of the run's
  dataset that no agent trains on (the training images outside the run's pool, then the
  test images), each with its label moved to another class, uniformly among the K − 1.
  ``out_of_distribution``: images of uniform noise over the training images' range, each
  with a uniform label.
* In every round each canary that is in is sampled with the victim's rate q = B / n_victim
  (independent coins from ``derive_seed(seed, "audit", "sampling")``, Poisson sampling at the
  accountant's q), and a sampled canary joins every gradient computed from the victim's
  batch in that round as one more example: its clipped gradient at the pair's model is added
  to the per-sample clipped sum (:meth:`~dpdl_core.sim.engine.Engine.clipped_sums`), and it
  enters the batch mean that batch clipping clips
  (:meth:`~dpdl_core.sim.engine.Engine.batch_gradients`: (B·ḡ + Σ g_c) / (B + s) for s
  sampled canaries).
* The observer sees the victim's models (``algorithm.models(state)``, what a gossip protocol
  shares with the neighbours) and scores canary c at the model the run ends with
  (``observed="final"``) or sums its score over the model after every round
  (``"every_round"``); the score at a model is the negative loss of the canary's label, or
  its label's margin (:func:`~dpdl_core.sim.audit.input_canary_scores`).

The injection wraps the engine's two kernels on the run's own instance
(:class:`InputCanaryAuditor`); the training loop, the algorithms and the kernels are
unchanged, and the batches, the noise and the dropout masks come from the run's own streams
as they would without canaries.
"""
from __future__ import annotations

import numpy as np
import torch
from torch.func import functional_call

from ..sim.audit import input_canary_scores
from ..sim.seeding import derive_seed

__all__ = ["CANARIES", "OBSERVED", "InputCanaryAuditor", "draw_input_canaries"]

CANARIES = ("mislabelled", "out_of_distribution")
# The victim's models an observer scores: the one the run ends with, or one per round.
OBSERVED = ("final", "every_round")


def draw_input_canaries(prep, m: int, canary: str) -> tuple[torch.Tensor, torch.Tensor]:
    """``m`` canary examples for ``prep``'s run: images ``(m, ...)`` and labels ``(m,)`` on
    the run's device (the module docstring says how each kind is drawn).

    Raises
    ------
    ValueError
        For an unknown ``canary``, or fewer than ``m`` images that no agent trains on.
    """
    seed = prep.config.seed
    gen = torch.Generator().manual_seed(derive_seed(seed, "audit", "inputs"))
    labels = torch.Generator().manual_seed(derive_seed(seed, "audit", "labels"))
    data = prep.data
    classes = int(data.y_train.max()) + 1
    if canary == "mislabelled":
        used = np.zeros(len(data.y_train), dtype=bool)
        for part in prep.parts:
            used[np.asarray(part)] = True
        unused = torch.as_tensor(np.flatnonzero(~used))
        if len(unused) + len(data.y_test) < m:
            raise ValueError(f"m={m} mislabelled canaries need m images that no agent trains on; the run leaves "
                             f"{len(unused)} training and {len(data.y_test)} test images: pass a smaller m")
        # The unused training images first, then the test images, each in a seeded order.
        train = unused[torch.randperm(len(unused), generator=gen)][:m]
        test = torch.randperm(len(data.y_test), generator=gen)[: m - len(train)]
        x = torch.cat([data.x_train[train], data.x_test[test]])
        true = torch.cat([data.y_train[train], data.y_test[test]])
        # Another class for each, uniform among the K - 1.
        y = (true + torch.randint(1, classes, (m,), generator=labels)) % classes
        return x.to(prep.x_train.device, prep.x_train.dtype), y.to(prep.y_train.device)
    if canary == "out_of_distribution":
        lo, hi = float(data.x_train.min()), float(data.x_train.max())
        x = lo + (hi - lo) * torch.rand((m, *data.x_train.shape[1:]), generator=gen)
        y = torch.randint(0, classes, (m,), generator=labels)
        return x.to(prep.x_train.device, prep.x_train.dtype), y.to(prep.y_train.device)
    raise ValueError(f"canary={canary!r} is not known; allowed values: {list(CANARIES)}")


class InputCanaryAuditor:
    """Puts the sampled canaries into the victim's gradients and keeps the victim's models.

    Installed as a tap of :func:`~dpdl_core.sim.loop.training_rounds`: :meth:`probe` draws the
    round's sampled canaries before the step (and, ``observed="every_round"``, scores the
    canaries at the victim's model the previous round ended with); :meth:`finish` scores
    them at the final model.
    :meth:`install` wraps the run's engine's ``clipped_sums`` and ``batch_gradients`` (that
    instance only).
    """

    def __init__(self, prep, m: int, victim: int, x: torch.Tensor, y: torch.Tensor, included: np.ndarray,
                 q: float, score: str = "loss", observed: str = "final"):
        if observed not in OBSERVED:
            raise ValueError(f"observed={observed!r} is not known; allowed values: {list(OBSERVED)}")
        self.prep, self.m, self.victim, self.q, self.score = prep, m, victim, q, score
        self.every_round = observed == "every_round"
        self.x, self.y = x, y
        self.included = torch.as_tensor(included)
        self.sampling = torch.Generator().manual_seed(derive_seed(prep.config.seed, "audit", "sampling"))
        self.active = torch.zeros(m, dtype=torch.bool)
        self.participations = torch.zeros(m, dtype=torch.long)
        self.injections = 0  # gradients computed from the victim's batch (where sampled canaries enter)
        self.observed = 0  # victim's models scored
        self.total = np.zeros(m)

    # What the auditor accumulates over the rounds, kept in an audit's checkpoint with the
    # state of ``sampling`` (:func:`dpdl_core.runs.audit_run.audit_run`).
    KEPT = ("total", "observed", "injections", "participations")

    def install(self) -> None:
        engine = self.prep.engine
        clipped = type(engine).clipped_sums.__get__(engine)
        gradients = type(engine).batch_gradients.__get__(engine)

        def clipped_sums(X, data_index, xb, yb, clip, unit=1):
            sums, losses = clipped(X, data_index, xb, yb, clip, unit)
            rows, cx, cy = self._canaries(data_index)
            if cx is not None:
                # Each canary is one clipping unit of its own.
                extra, _ = self._aside(clipped, X[rows], torch.zeros_like(rows), cx, cy, clip, 1)
                sums[rows] += extra
            return sums, losses

        def batch_gradients(X, data_index, xb, yb):
            grads, losses = gradients(X, data_index, xb, yb)
            rows, cx, cy = self._canaries(data_index)
            if cx is not None:
                B, s = yb.shape[1], cy.shape[1]
                extra, _ = self._aside(gradients, X[rows], torch.zeros_like(rows), cx, cy)
                grads[rows] = (B * grads[rows] + s * extra) / (B + s)
            return grads, losses

        engine.clipped_sums = clipped_sums
        engine.batch_gradients = batch_gradients

    def _aside(self, kernel, *args):
        """``kernel(*args)`` on the canaries, leaving the run's dropout stream where it was
        (a model with dropout draws the canaries' masks from it, then the run draws its own
        masks as it would without canaries)."""
        stream = self.prep.engine.dropout_generator
        kept = None if stream is None else stream.get_state()
        try:
            return kernel(*args)
        finally:
            if kept is not None:
                stream.set_state(kept)

    def _canaries(self, data_index):
        """The rows computed from the victim's batch and this round's sampled canaries as a
        one-batch ``(1, s, ...)`` input (None when no canary is sampled)."""
        rows = torch.nonzero(data_index == self.victim).squeeze(1)
        self.injections += len(rows)
        active = self.active.to(self.x.device)
        if not len(rows) or not bool(active.any()):
            return rows, None, None
        return rows, self.x[active].unsqueeze(0), self.y[active].unsqueeze(0)

    def uninstall(self) -> None:
        for name in ("clipped_sums", "batch_gradients"):
            self.prep.engine.__dict__.pop(name, None)

    def probe(self, t: int, prep, state) -> None:
        if t > 1 and self.every_round:
            self._score(state)
        coins = torch.rand(self.m, generator=self.sampling) < self.q
        self.active = coins & self.included
        self.participations += self.active.long()

    def observe(self, ctx, channel, messages, models, owners) -> None:
        """The observer of this kind reads models, not messages."""

    def finish(self, state) -> None:
        """Score the canaries at the model the victim ends with."""
        self._score(state)

    @torch.no_grad()
    def _score(self, state) -> None:
        engine = self.prep.engine
        model = self.prep.algorithm.models(state)[self.victim]
        logits = functional_call(engine.module, engine.layout.unflatten(model), (self.x,))
        self.total += input_canary_scores(logits, self.y, self.score)
        self.observed += 1

    def scores(self) -> np.ndarray:
        """Each canary's score at the victim's final model, or summed over its model after
        every round (``observed``)."""
        return self.total.copy()
