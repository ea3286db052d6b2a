"""What every algorithm module provides, and the per-run context it works in.

The context is also the algorithms' only way to talk: :meth:`RunContext.gossip`,
:meth:`RunContext.broadcast` and :meth:`RunContext.send` move vectors between agents over
this round's graph (the schedule's mixing matrix), count every vector sent per agent, and
show the messages to the loop's taps (observers such as the gradient-inversion harness).
"""
from __future__ import annotations

from dataclasses import dataclass, field, is_dataclass, replace
from typing import ClassVar, Protocol

import numpy as np
import torch

from ..engine import Engine, gaussian_noise, gossip
from ..schedules import Schedule
from ..topology import Topology

__all__ = ["ALGORITHMS", "Algorithm", "RunContext", "RunView", "Tap", "register"]


class Tap(Protocol):
    """An observer of the messages of a round (e.g. an eavesdropper)."""

    def observe(self, ctx: "RunContext", channel: str, messages: torch.Tensor, models: torch.Tensor,
                owners: torch.Tensor) -> None:
        """``messages`` (M, P) of ``channel``; ``models`` (M, P) the parameters each was computed
        at (public: agents broadcast them); ``owners`` (M,) whose local batch each came from."""


@dataclass(frozen=True)
class RunView:
    """One run's own part of a context (:attr:`RunContext.members`).

    Attributes
    ----------
    rows : slice
        The run's rows in every (N, ·) tensor of the context.
    noise : torch.Generator
        The run's noise stream: its messages draw from it in the order a plain run would.
    rng : torch.Generator
        The run's algorithm randomness (pairings, groups, permutations).
    lr : float
        The run's η_1.
    validation : tuple of tensors, optional
        The run's ``(x_val, y_val)`` (the split depends on its seed).
    """

    rows: slice
    noise: torch.Generator
    rng: torch.Generator
    lr: float
    validation: tuple | None


@dataclass
class RunContext:
    """Everything an algorithm step needs, built once per run by the runner.

    Attributes
    ----------
    topology : Topology
        The run's base graph (names, degrees, spectrum).
    schedule : Schedule
        Who talks to whom in round t (its mixing matrix W_t).
    sigma : (N,)
        Noise multiplier of each agent's messages (σ_i; noise std σ_i·C).
    rng : torch.Generator
        The algorithm's own randomness (random pairings, permutations), a stream apart from
        batches and noise.
    validation : tuple of tensors, optional
        ``(x_val, y_val)`` carved from the test set (config ``validation_samples``).
    taps : list of Tap
        Observers of this run's messages (none in plain training).
    round : int
        The current round t (1-based), set by the loop.
    lr_decay, lr_decay_every
        Step decay of ``lr`` applied by :meth:`begin_round` (every 0 rounds: constant).
    W, edge_i, edge_j, edge_w, self_edge
        This round's mixing matrix and its directed edges w_ij > 0 (self-loops included,
        sorted by i then j); ``self_edge`` is the position of (i, i).
    mixing_source
        What the schedule (or the algorithm) gave for this round's W: a W_t it returns again
        rebuilds nothing.
    sent : (N,) long
        Vectors each agent has sent so far (counted by gossip, broadcast and send).
    stacked : tuple of RunView
        Set by :mod:`dpdl_core.runs.stacking` only: the runs stacked in this context. Read
        :attr:`members`, which a plain run has too.

    Every algorithm reads one run's own part of the context through :attr:`members`, the
    same way whether the run is alone or stacked: run r's rows, noise stream, ``rng``, η_1
    and validation set are ``members[r]``. In a stack of R runs of n = ``topology.n_agents``
    agents, rows ``r·n .. (r+1)·n − 1`` of every (N, ·) tensor are run r's, N = R·n, and
    this round's W is block diagonal with one block per run (``W_blocks``), so no message
    crosses runs; ``noise_generator``, ``rng``, ``validation`` are then run 0's and ``lr``
    becomes an (N, 1) column where the runs' η differ.
    """

    engine: Engine
    topology: Topology
    schedule: Schedule
    sigma: torch.Tensor
    clip: float
    lr: float
    momentum: float
    batch_size: int
    noise_generator: torch.Generator
    rng: torch.Generator
    validation: tuple[torch.Tensor, torch.Tensor] | None = None
    taps: list = field(default_factory=list)
    lr_decay: float = 1.0
    lr_decay_every: int = 0
    base_lr: float = None
    round: int = 0
    W: torch.Tensor = None
    edge_i: torch.Tensor = None
    edge_j: torch.Tensor = None
    edge_w: torch.Tensor = None
    self_edge: torch.Tensor = None
    sent: torch.Tensor = None
    stacked: tuple = ()
    W_blocks: tuple = ()
    mixing_source: object = None

    @classmethod
    def build(cls, engine: Engine, topology: Topology, schedule: Schedule, sigma: np.ndarray, **kwargs) -> RunContext:
        ctx = cls(
            engine=engine,
            topology=topology,
            schedule=schedule,
            sigma=torch.as_tensor(sigma, dtype=torch.float32, device=engine.device),
            **kwargs,
        )
        ctx.sent = torch.zeros(ctx.n_agents, dtype=torch.long)
        ctx.base_lr = ctx.lr  # η_1; begin_round decays from it
        ctx.set_mixing(schedule.mixing(1))
        return ctx

    def side(self, **changes) -> RunContext:
        """A copy for a side computation (an attack's probe round): same graph, its own
        message counter and a copy of the algorithm's generator, so the training run is
        left exactly as it was; ``changes`` replace fields (batch size, σ, noise, taps)."""
        def copy(generator):
            out = torch.Generator(device=generator.device)
            out.set_state(generator.get_state())
            return out

        rng = copy(self.rng)
        stacked = tuple(replace(m, rng=rng if m.rng is self.rng else copy(m.rng)) for m in self.stacked)
        return replace(self, **{"sent": torch.zeros_like(self.sent), "rng": rng, "stacked": stacked, **changes})

    # -- the round's graph ----------------------------------------------------------------
    def begin_round(self, t: int) -> None:
        """Called by the loop before round t: installs the schedule's W_t and η_t."""
        self.round = t
        lrs = [m.lr for m in self.members]
        if len(set(lrs)) > 1:
            # Each run's η_t in double, then float32, as a plain run's scalar becomes in its products.
            decay = self.lr_decay ** ((t - 1) // self.lr_decay_every) if self.lr_decay_every else 1.0
            per_run = torch.tensor([lr * decay for lr in lrs], dtype=torch.float32, device=self.engine.device)
            self.lr = per_run.repeat_interleave(self.topology.n_agents).unsqueeze(1)
        elif self.lr_decay_every:
            self.lr = self.base_lr * self.lr_decay ** ((t - 1) // self.lr_decay_every)
        W = self.schedule.mixing(t)
        if W is not self.mixing_source:
            self.set_mixing(W)

    def set_mixing(self, W) -> None:
        """Use ``W`` as this round's mixing matrix (algorithm-driven schedules): an (n, n)
        matrix for every run, or, in a stack, a tuple of one (n, n) matrix per run."""
        blocks = tuple(W) if isinstance(W, tuple) else (W,) * self.runs
        n = self.topology.n_agents
        blocks = tuple(torch.as_tensor(b, dtype=torch.float32, device=self.engine.device) for b in blocks)
        if len(blocks) != self.runs or any(b.shape != (n, n) for b in blocks):
            raise ValueError(f"mixing matrices of shapes {[tuple(b.shape) for b in blocks]}; "
                             f"expected {self.runs} of ({n}, {n})")
        self.mixing_source = W
        self.W_blocks = blocks
        W = torch.block_diag(*blocks)
        nz = torch.nonzero(W > 0)
        self.W = W
        self.edge_i, self.edge_j = nz[:, 0], nz[:, 1]
        self.edge_w = W[self.edge_i, self.edge_j]
        self.self_edge = torch.nonzero(self.edge_i == self.edge_j).squeeze(1)

    @property
    def members(self) -> tuple[RunView, ...]:
        """Each run's own part of this context: one for a plain run, R for a stack of R."""
        if self.stacked:
            return self.stacked
        whole = slice(0, self.topology.n_agents)
        return (RunView(whole, self.noise_generator, self.rng, self.base_lr, self.validation),)

    @property
    def runs(self) -> int:
        """Runs in this context (1 for a plain run)."""
        return len(self.stacked) or 1

    @property
    def n_agents(self) -> int:
        """Rows of the stacked tensors: every agent of every run (a plain run: its N agents)."""
        return self.runs * self.topology.n_agents

    @property
    def private(self) -> bool:
        return bool((self.sigma > 0).any())

    # -- communication ----------------------------------------------------------------------
    def _count_links(self) -> None:
        """Every agent j sends one vector to each i ≠ j with w_ij > 0."""
        out = (self.W > 0).sum(0) - (torch.diagonal(self.W) > 0).long()
        self.sent += out.cpu()

    def gossip(self, X: torch.Tensor, channel: str | None = None, models: torch.Tensor | None = None) -> torch.Tensor:
        """Row i becomes Σ_j w_ij X_j with this round's W; every agent sends its row to its
        neighbours. ``channel`` names the rows for the taps (computed at ``models``)."""
        self._count_links()
        if channel is not None:
            self._show(channel, X, X if models is None else models, torch.arange(self.n_agents, device=X.device))
        # Run by run: one (n, n) product per run is bit for bit a plain run's (a batched or
        # block-diagonal product sums in another order), and a run that diverges to NaN cannot
        # reach the others through 0·NaN.
        return torch.cat([gossip(Wr, X[m.rows]) for m, Wr in zip(self.members, self.W_blocks, strict=True)])

    def broadcast(self, X: torch.Tensor) -> None:
        """Every agent sends its row of ``X`` (e.g. its model) to its neighbours."""
        self._count_links()

    def send(self, channel: str, messages: torch.Tensor, senders: torch.Tensor, receivers: torch.Tensor,
             models: torch.Tensor) -> None:
        """Point-to-point messages: row e goes from ``senders[e]`` (made from its batch) to
        ``receivers[e]``, computed at ``models[e]``. Rows with sender = receiver stay local."""
        remote = senders != receivers
        self.sent += torch.bincount(senders[remote].cpu(), minlength=self.n_agents)
        self._show(channel, messages[remote], models[remote], senders[remote])

    def reveal(self, channel: str, messages: torch.Tensor, models: torch.Tensor, owners: torch.Tensor) -> None:
        """Show the taps what an eavesdropper derives from the broadcasts (e.g. a gradient
        hidden in a model update), without sending anything."""
        self._show(channel, messages, models, owners)

    def _show(self, channel, messages, models, owners) -> None:
        for tap in self.taps:
            tap.observe(self, channel, messages, models, owners)

    # -- the Gaussian mechanism -----------------------------------------------------------------
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

    def noise(self, owners: torch.Tensor, P: int) -> torch.Tensor:
        """Gaussian noise N(0, σ_o²C²I) for messages made by agents ``owners`` (E,)."""
        # Each run's messages from its own stream, in the order a plain run draws them.
        out = torch.zeros(len(owners), P, device=self.W.device)
        run_of = owners // self.topology.n_agents
        for r, member in enumerate(self.members):
            rows = torch.nonzero(run_of == r).squeeze(1)
            if len(rows) and bool((self.sigma[member.rows] > 0).any()):
                out[rows] = gaussian_noise((len(rows), P), self.sigma[owners[rows]] * self.clip, member.noise)
        return out


class Algorithm:
    """Base class: a small module per algorithm implements ``init_state`` and ``step``.

    Subclasses define ``name`` (the config value), ``display_name`` (legends and tables), a
    frozen ``Params`` dataclass of their options, ``messages_per_round`` (k_i, the Gaussian
    releases agent i makes from its batch each round, which the accountant composes) and,
    where a release is not a per-sample clipped sum with noise std σC, ``noise_scale``.
    They register with :func:`dpdl_core.sim.algorithms.register`.

    ``stackable = True`` declares that the algorithm can run several independent runs as one
    (:mod:`dpdl_core.runs.stacking`): its state is per-agent rows only, it reads each run's
    own rows, randomness, η_1 and validation set from ``ctx.members[r]`` (one member in a
    plain run, so the code is the same alone and stacked), it reads a run's size as
    ``ctx.topology.n_agents`` (``ctx.n_agents`` counts every stacked row), it mixes only
    through the context, its ``diagnostics`` can be told apart per run
    (``diagnostics(agents=...)``) and its ``round_metrics`` depend on the state alone (the
    runner passes each run's rows). ``tests/test_stacking.py`` checks each stackable
    algorithm against plain runs.

    ``execution_options`` names the options of ``Params`` that change how the algorithm
    computes, never what (results equal to float rounding), with their allowed values: a
    study run stored under another of those values counts as the run
    (:meth:`dpdl_core.runs.studies.StudyRun.twins`). ``hashed_unless`` gives the options added
    after the algorithm's runs were first stored, with their defaults: at those values they
    are left out of a config's hash, so the stored runs keep their identity.
    """

    name: ClassVar[str]
    display_name: ClassVar[str]
    Params: ClassVar[type]
    stackable: ClassVar[bool] = False
    execution_options: ClassVar[dict[str, tuple]] = {}
    hashed_unless: ClassVar[dict] = {}

    def __init__(self, params, ctx: RunContext):
        self.params = params
        self.ctx = ctx

    @classmethod
    def messages_per_round(cls, topology: Topology, params) -> np.ndarray:
        raise NotImplementedError

    @classmethod
    def noise_scale(cls, params, batch_size: int) -> float:
        """Noise std of one release over its sensitivity, in units of σ: the accountant sees
        the noise multiplier σ·noise_scale. 1 for a per-sample clipped sum with noise σC."""
        return 1.0

    def init_state(self, X0: torch.Tensor) -> dict[str, torch.Tensor]:
        raise NotImplementedError

    def step(self, state: dict[str, torch.Tensor], xb: torch.Tensor, yb: torch.Tensor) -> torch.Tensor:
        """Advance one round in place; return each agent's training loss (N,) at its
        pre-step model on its own batch."""
        raise NotImplementedError

    def diagnostics(self, agents: slice = slice(None)) -> dict:
        """Counters worth recording with the run (e.g. QP fallbacks); ``agents``: the rows of
        one run of a stack (a stackable algorithm counts per agent)."""
        return {}

    def counters(self, agents: slice = slice(None)) -> dict:
        """What ``diagnostics`` has accumulated for the rows ``agents`` (one run of a stack),
        JSON-like, for the run's checkpoint: a resumed run's diagnostics then cover every round,
        not only those since its last resume. Default: nothing to keep."""
        return {}

    def restore_counters(self, agents: slice, counters: dict) -> None:
        """Continue ``diagnostics`` of the rows ``agents`` from a checkpoint's ``counters``."""

    def round_metrics(self, state: dict[str, torch.Tensor]) -> dict:
        """Metrics of this round to record in the history after the step: name → a scalar
        (network-wide, ``agent = -1``) or one value per agent, computed from ``state`` (in a
        stack, one run's rows of it). Default: none."""
        return {}

    def models(self, state: dict[str, torch.Tensor]) -> torch.Tensor:
        """The (N, P) models to evaluate."""
        return state["x"]


ALGORITHMS: dict[str, type[Algorithm]] = {}


def register(cls: type[Algorithm]) -> type[Algorithm]:
    """Class decorator adding ``cls`` to the registry under ``cls.name``."""
    for attr in ("name", "display_name", "Params"):
        if not hasattr(cls, attr):
            raise TypeError(f"algorithm class {cls.__name__} must define {attr!r}")
    if not is_dataclass(cls.Params):
        raise TypeError(f"{cls.__name__}.Params must be a dataclass")
    if ALGORITHMS.get(cls.name, cls) is not cls:
        raise ValueError(f"two algorithms are named {cls.name!r}: {ALGORITHMS[cls.name].__name__} and {cls.__name__}")
    ALGORITHMS[cls.name] = cls
    return cls
