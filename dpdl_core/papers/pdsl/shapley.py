"""Shapley values of PDSL's candidate models (eqs 16–20 and Algorithm 2 of ``papers/pdsl.txt``).

In round t, agent i has one candidate per neighbour j ∈ M_i (i included),
x_{i,j} = x_i − γ·ĝ_{j,i} (eq 15). A coalition M′ ⊆ M_i is worth the top-1 accuracy on the
validation set Q of the parameter average of its candidates (eqs 16–17).

Every agent's game is solved here at once. Candidates are given per directed edge (row e is
x_{i,j} for e = (i, j), rows grouped by i); the coalition models every agent needs are
built as averaging matrices times the stacked candidates and pushed through ``value_fn``
in chunks of ``chunk`` models — one batched call per chunk, never one model at a time.

Estimators
----------
``exact``
    Eq (18) over all 2^n − 1 non-empty coalitions (n = |M_i|), written as one matrix
    product φ = v · K with K[S, j] = +1/(n·C(n−1, |S|−1)) for j ∈ S and −1/(n·C(n−1, |S|))
    for j ∉ S (:func:`exact_coefficients`).
``permutation``
    Algorithm 2 (eq 26) with R uniform random permutations. The predecessors of the k-th
    player of a permutation are the (k−1)-prefix, so v(Z_j ∪ {j}) of one player is v(Z_j)
    of the next: each permutation costs n evaluations (prefix reuse) instead of the 2n the
    pseudo-code spells out, and repeated prefixes within an agent (the full set appears in
    every permutation) are evaluated once.
``stratified``
    As ``permutation``, but in blocks of n: one uniform permutation and its n cyclic
    rotations, so every player takes every position exactly once per block (each rotation
    is itself a uniform permutation, so the estimate stays unbiased). With v(∅) = 0 the
    first position gains ≈ the whole accuracy (spec §1 pitfall); stratifying removes that
    term's variance. R is rounded up to a multiple of n.

v(∅)
----
Definition 3 sets v(∅) = 0 (``empty="zero"``); eq 17 is undefined at ∅. ``empty="previous"``
takes the accuracy of the agent's previous model x_i^{t−1} (the spec's recommendation): the
exact values then shift by the same constant for every player, which eq 19 removes, while
the Monte Carlo marginals of the first position stop carrying the whole accuracy.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import torch

from ...sim import check_choice, check_int

__all__ = [
    "EMPTY_VALUES",
    "ESTIMATORS",
    "ShapleyConfig",
    "ShapleyResult",
    "coalition_models",
    "evaluate_batched",
    "exact_coefficients",
    "exact_from_values",
    "mc_from_values",
    "min_max_normalise",
    "permutations",
    "prefix_bits",
    "shapley_round",
    "shapley_weights",
]

EMPTY_VALUES = ("zero", "previous")
ESTIMATORS = ("auto", "exact", "permutation", "stratified")
# Coalitions are int64 bitmasks (bit k ↔ the agent's k-th candidate).
MAX_PLAYERS = 62
# Shapley values are sums of multiples of 1/|Q| with rational weights; differences below
# this are floating-point round-off, i.e. a tie in eq 19.
TIE_TOL = 1e-12

ValueFn = Callable[[torch.Tensor], torch.Tensor]


@dataclass(frozen=True)
class ShapleyConfig:
    """How each agent's Shapley values are computed.

    Attributes
    ----------
    estimator : {"auto", "exact", "permutation", "stratified"}
        ``auto``: exact for n ≤ ``exact_max_players``, otherwise ``mc_sampling``.
    exact_max_players : int
        Largest n solved exactly under ``auto`` (8; the spec's 6 gives the same
        choice on the paper's graphs, where n ∈ {3, 6, 10, 11, 20}).
    permutations : int
        R of Algorithm 2 (never given in the paper; the spec recommends 10).
    mc_sampling : {"permutation", "stratified"}
        The Monte Carlo estimator ``auto`` uses beyond ``exact_max_players``.
    empty : {"zero", "previous"}
        v(∅): Definition 3's 0, or the accuracy of x_i^{t−1} (spec §1, recommended).
    chunk : int
        Coalition models per ``value_fn`` call (bounds the forward pass's memory).
    """

    estimator: str = "auto"
    exact_max_players: int = 8
    permutations: int = 10
    mc_sampling: str = "stratified"
    empty: str = "previous"
    chunk: int = 64

    def __post_init__(self):
        check_choice(self, "estimator", ESTIMATORS)
        check_choice(self, "mc_sampling", ("permutation", "stratified"))
        check_choice(self, "empty", EMPTY_VALUES)
        check_int(self, "exact_max_players", minimum=1)
        check_int(self, "permutations", minimum=1)
        check_int(self, "chunk", minimum=1)
        if self.exact_max_players > 20:
            raise ValueError(f"exact_max_players={self.exact_max_players} must be <= 20 (2^n coalitions)")

    def estimator_for(self, n: int) -> str:
        """The estimator used for a game of n players."""
        if self.estimator == "auto":
            return "exact" if n <= self.exact_max_players else self.mc_sampling
        return self.estimator


@dataclass
class ShapleyResult:
    """Shapley values of one round.

    Attributes
    ----------
    phi : (E,) float64
        φ_{i,j} of edge e = (i, j): j's value in agent i's game.
    empty_values : (N,) float64
        v(∅) each agent used.
    evaluations : int
        Models pushed through ``value_fn`` (coalitions plus the previous models under
        ``empty="previous"``).
    """

    phi: torch.Tensor
    empty_values: torch.Tensor
    evaluations: int


def _bits_to_mask(bits: np.ndarray, n: int) -> np.ndarray:
    """(K,) int64 bitmasks → (K, n) bool membership (bit j ↔ player j)."""
    return ((bits[:, None] >> np.arange(n)) & 1).astype(bool)


@lru_cache(maxsize=32)
def exact_coefficients(n: int) -> np.ndarray:
    """K (2^n, n) with φ = v · K for v indexed by bitmask (v[0] = v(∅)); eq (18).

    φ_j = Σ_{S ∌ j} (v(S ∪ {j}) − v(S)) / (n·C(n−1, |S|)): v(T) enters φ_j with
    +1/(n·C(n−1, |T|−1)) when j ∈ T and with −1/(n·C(n−1, |T|)) when j ∉ T.
    """
    if not 1 <= n <= 20:
        raise ValueError(f"n={n} players: exact Shapley is limited to 1..20")
    bits = np.arange(2**n, dtype=np.int64)
    member = _bits_to_mask(bits, n)
    size = member.sum(1)
    w = np.array([1.0 / (n * math.comb(n - 1, s)) for s in range(n)] + [0.0])
    K = np.where(member, w[np.maximum(size - 1, 0)][:, None], -w[size][:, None])
    K.setflags(write=False)
    return K


def exact_from_values(values: np.ndarray) -> np.ndarray:
    """Eq (18) for G games of n players at once.

    Parameters
    ----------
    values : (G, 2^n)
        v(S) indexed by bitmask S, v[:, 0] = v(∅).

    Returns
    -------
    (G, n) Shapley values.
    """
    n = int(round(math.log2(values.shape[1])))
    return values @ exact_coefficients(n)


def permutations(G: int, n: int, R: int, generator: torch.Generator, stratified: bool) -> np.ndarray:
    """Random permutations of n players for G games: (G, R′, n) int64.

    ``stratified``: ⌈R/n⌉ uniform permutations, each followed by its n cyclic rotations,
    R′ = n·⌈R/n⌉; otherwise R′ = R independent uniform permutations (argsort of uniforms).
    """
    def uniform(count: int) -> np.ndarray:
        u = torch.rand(G, count, n, generator=generator, device=generator.device)
        return torch.argsort(u, dim=-1).cpu().numpy()

    if stratified:
        blocks = math.ceil(R / n)
        shift = (np.arange(n)[:, None] + np.arange(n)[None, :]) % n  # (rotation s, position k)
        return uniform(blocks)[:, :, shift].reshape(G, blocks * n, n)
    return uniform(R)


def prefix_bits(perms: np.ndarray) -> np.ndarray:
    """Bitmask of the first k+1 players of each permutation: (..., n) int64."""
    return np.bitwise_or.accumulate(np.left_shift(np.int64(1), perms.astype(np.int64)), axis=-1)


def mc_from_values(perms: np.ndarray, prefix_values: np.ndarray, empty: np.ndarray) -> np.ndarray:
    """Algorithm 2 / eq (26) from the values of every permutation prefix.

    Parameters
    ----------
    perms : (G, R, n)
        Player at each position.
    prefix_values : (G, R, n)
        v of the first k+1 players.
    empty : (G,)
        v(∅).

    Returns
    -------
    (G, n): φ_j = (1/R) Σ_r [v(Z_j ∪ {j}) − v(Z_j)].
    """
    G, R, n = perms.shape
    before = np.concatenate([np.broadcast_to(empty[:, None, None], (G, R, 1)), prefix_values[:, :, :-1]], axis=2)
    marginal = prefix_values - before
    phi = np.zeros((G, n))
    np.add.at(phi, (np.arange(G)[:, None, None], perms), marginal / R)
    return phi


def coalition_models(candidates: torch.Tensor, rows: torch.Tensor, bits: np.ndarray, n: int) -> torch.Tensor:
    """Eq (17): the parameter average of each coalition's candidates.

    Parameters
    ----------
    candidates : (E, P)
        All candidates, one agent's n in consecutive rows.
    rows : (K,) long
        First candidate row of each coalition's agent.
    bits : (K,) int64
        Members of each coalition (bit k ↔ the agent's k-th candidate).
    n : int
        Players per game.

    Returns
    -------
    (K, P)
    """
    member = torch.as_tensor(_bits_to_mask(bits, n), dtype=candidates.dtype, device=candidates.device)
    avg = member / member.sum(1, keepdim=True)
    # (K, n) weights times each coalition's agent's (n, P) block, as one dense (K, E) @ (E, P).
    A = torch.zeros(len(bits), candidates.shape[0], dtype=candidates.dtype, device=candidates.device)
    cols = rows.unsqueeze(1) + torch.arange(n, device=candidates.device)
    A.scatter_(1, cols, avg)
    return A @ candidates


def evaluate_batched(value_fn: ValueFn, make_models: Callable[[slice], torch.Tensor], K: int, chunk: int) -> np.ndarray:
    """v of K models, built and evaluated ``chunk`` at a time: (K,) float64.

    ``make_models(slice)`` returns the (k, P) models of that slice, so at most ``chunk``
    coalition models exist at once.
    """
    out = np.empty(K)
    for s in range(0, K, chunk):
        sl = slice(s, min(K, s + chunk))
        out[sl] = value_fn(make_models(sl)).double().cpu().numpy()
    return out


def shapley_round(
    candidates: torch.Tensor,
    counts: np.ndarray,
    value_fn: ValueFn,
    config: ShapleyConfig,
    generator: torch.Generator,
    previous: torch.Tensor | None = None,
) -> ShapleyResult:
    """Every agent's Shapley values in one round (eqs 16–18, Algorithm 2).

    Parameters
    ----------
    candidates : (E, P)
        x_{i,j} (eq 15), rows grouped by agent i: agent i's n_i = ``counts[i]`` candidates
        are consecutive, in the order of its edge list.
    counts : (N,) int
        n_i = |M_i|.
    value_fn : callable
        (K, P) models → (K,) values (accuracy on Q, e.g. ``engine.evaluate(X, xq, yq)[1]``).
    config : ShapleyConfig
    generator : torch.Generator
        Source of the permutations.
    previous : (N, P), optional
        x_i^{t−1}; required when ``config.empty == "previous"`` (their accuracies are v(∅),
        evaluated in the same batched calls).

    Returns
    -------
    ShapleyResult
    """
    counts = np.asarray(counts, dtype=np.int64)
    N = len(counts)
    if counts.sum() != candidates.shape[0]:
        raise ValueError(f"counts sum to {counts.sum()} but there are {candidates.shape[0]} candidates")
    if counts.max() > MAX_PLAYERS:
        raise ValueError(f"{counts.max()} players exceed the supported {MAX_PLAYERS}")
    if config.empty == "previous" and previous is None:
        raise ValueError('empty="previous" needs the previous models (previous=...)')
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])

    # Plan: per group of agents with the same (n, estimator), the coalitions to evaluate.
    groups = []
    for n in np.unique(counts):
        agents = np.flatnonzero(counts == n)
        est = config.estimator_for(int(n))
        if est == "exact":
            bits = np.broadcast_to(np.arange(1, 2**n, dtype=np.int64), (len(agents), 2**n - 1))
            perms = None
        else:
            perms = permutations(len(agents), int(n), config.permutations, generator, est == "stratified")
            bits = prefix_bits(perms).reshape(len(agents), -1)
        # One evaluation per distinct (agent, coalition) pair.
        local = np.broadcast_to(np.arange(len(agents))[:, None], bits.shape)
        uniq, inverse = np.unique(np.stack([local.ravel(), bits.ravel()], axis=1), axis=0, return_inverse=True)
        groups.append((int(n), agents, est, perms, uniq, inverse.reshape(bits.shape)))

    # Evaluate every group's coalitions (and the previous models) in chunked batched calls.
    parts = []
    for n, agents, _, _, uniq, _ in groups:
        parts.append((n, torch.as_tensor(starts[agents][uniq[:, 0]], device=candidates.device), uniq[:, 1]))
    sizes = [len(p[2]) for p in parts]
    total = sum(sizes) + (N if config.empty == "previous" else 0)
    offsets = np.concatenate([[0], np.cumsum(sizes)])

    def make_models(sl: slice) -> torch.Tensor:
        pieces = []
        for g, (n, rows, bits) in enumerate(parts):
            lo, hi = max(sl.start, offsets[g]), min(sl.stop, offsets[g + 1])
            if lo < hi:
                a, b = lo - offsets[g], hi - offsets[g]
                pieces.append(coalition_models(candidates, rows[a:b], bits[a:b], n))
        lo, hi = max(sl.start, offsets[-1]), sl.stop
        if lo < hi:
            pieces.append(previous[lo - offsets[-1] : hi - offsets[-1]].to(candidates.dtype))
        return torch.cat(pieces)

    values = evaluate_batched(value_fn, make_models, total, config.chunk)
    empty = values[offsets[-1] :] if config.empty == "previous" else np.zeros(N)

    # Combine: eq (18) or eq (26), vectorised over the agents of each group.
    phi = np.empty(candidates.shape[0])
    for g, (n, agents, est, perms, _, inverse) in enumerate(groups):
        v = values[offsets[g] : offsets[g + 1]][inverse]
        if est == "exact":
            phi_g = exact_from_values(np.concatenate([empty[agents][:, None], v], axis=1))
        else:
            phi_g = mc_from_values(perms, v.reshape(perms.shape), empty[agents])
        phi[(starts[agents][:, None] + np.arange(n)).ravel()] = phi_g.ravel()
    return ShapleyResult(torch.as_tensor(phi), torch.as_tensor(empty), int(total))


def min_max_normalise(phi: torch.Tensor, owner: torch.Tensor, N: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Eq (19) within each agent's game: φ̂ = (φ − min)/(max − min).

    The worst player gets 0 and the best 1. Where max − min ≤ 1e-12 (all players tie,
    eq 19 is 0/0; frequent at γ = 0.001, where one step may change no prediction on Q),
    every player gets 1 (spec §5.3).

    Parameters
    ----------
    phi : (E,)
    owner : (E,) long
        The agent whose game each entry belongs to.

    Returns
    -------
    phi_hat : (E,)
    tied : (N,) bool
        Agents whose game was a tie.
    """
    lo = torch.full((N,), math.inf, dtype=phi.dtype, device=phi.device).scatter_reduce(0, owner, phi, "amin")
    hi = torch.full((N,), -math.inf, dtype=phi.dtype, device=phi.device).scatter_reduce(0, owner, phi, "amax")
    span = hi - lo
    tied = span <= TIE_TOL
    phi_hat = torch.where(tied[owner], torch.ones_like(phi), (phi - lo[owner]) / torch.where(tied, 1.0, span)[owner])
    return phi_hat, tied


# Eq (20)'s normalisation: "omega" divides the share by ω_ij as printed (Σ_j π_ij = n for
# uniform ω); "average" keeps the share (Σ_j π_ij = 1), eq (21) read as "a weighted average".
WEIGHTINGS = ("omega", "average")


def shapley_weights(phi_hat: torch.Tensor, omega: torch.Tensor, owner: torch.Tensor, N: int, floor: float = 0.0,
                    weighting: str = "omega") -> torch.Tensor:
    """Eq (20): π_{i,j} = s_{i,j}/ω_{i,j} with the share s = φ̂_{i,j}/Σ_k φ̂_{i,k}.

    Dividing by ω makes Σ_j ω_{i,j}π_{i,j} = Σ_j s_{i,j} = 1, so with uniform ω = 1/n the
    weights sum to n (spec §1.7). ``floor`` f mixes in the uniform share,
    s = (1 − f)·φ̂/Σφ̂ + f/n, so no share falls below f/n (eq 19 alone always gives the worst
    player 0, which makes Theorem 1's σ infinite); f = 0 is eq (20) exactly. ``weighting``
    "average" returns the share itself (Σ_j π_ij = 1): the text calls eq (21) "a weighted
    average", which eq (20)'s division by ω contradicts for uniform ω.

    Parameters
    ----------
    phi_hat : (E,)
        Eq (19) values (non-negative, at least one positive per agent).
    omega : (E,)
        ω_{i,j} of each edge.
    owner : (E,) long
    floor : float in [0, 1]
    """
    if not 0.0 <= floor <= 1.0:
        raise ValueError(f"floor={floor!r} must be in [0, 1]")
    total = torch.zeros(N, dtype=phi_hat.dtype, device=phi_hat.device).index_add_(0, owner, phi_hat)
    n = torch.bincount(owner, minlength=N).to(phi_hat.dtype)
    share = (1.0 - floor) * phi_hat / total[owner] + floor / n[owner]
    if weighting not in WEIGHTINGS:
        raise ValueError(f"weighting={weighting!r} is not known; allowed values: {list(WEIGHTINGS)}")
    return share if weighting == "average" else share / omega.to(phi_hat.dtype)
