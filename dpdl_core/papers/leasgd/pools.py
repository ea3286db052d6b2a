"""The dynamic leader–follower topology of LEASGD (Sec. 2.2, Fig. 1, eq. 3).

Pure tensor functions; the algorithm module calls them on its schedule.

- :func:`n_followers` — size of the follower pool for m workers and p leaders per
  follower (the group shape of Prop. 1: one follower pulled by p leaders).
- :func:`split_pools` — every kτ iterations the workers with the lower recent loss form
  the leader pool, the others the follower pool (Fig. 1b–c); ties go by worker index.
- :func:`draw_groups` — after every communication step the leaders are re-partitioned at
  random among the followers (Sec. 2.2: "randomly pair the leaders and followers after
  each learning update"), from a seeded generator.
- :func:`elastic_matrix` — the simultaneous elastic update of eq. (3) as one (m, m)
  matrix A, so that a communication step is ``X ← A X − η G`` for all workers at once.
- :func:`vectors_per_communication` — models transmitted in one communication step.

A group is encoded by ``follower_of`` (m,) long: ``follower_of[i]`` is the follower that
leader i is paired with this step, and ``follower_of[f] = f`` for a follower f.
"""
from __future__ import annotations

import math

import torch

__all__ = ["draw_groups", "elastic_matrix", "n_followers", "split_pools", "vectors_per_communication"]


def n_followers(m: int, p: int) -> int:
    """Number of followers for m workers with at most p leaders per follower.

    ⌈m/(p+1)⌉ followers, so that every follower has at most p leaders (Prop. 1 needs
    β = pα < 1 for the follower's pull) and, for m = 5, 15 and p = 4, the groups are
    exactly 4 leaders + 1 follower and 12 + 3 (spec §1).

    Raises
    ------
    ValueError
        When p < 1, or when the leader pool would not outnumber the follower pool
        (Sec. 2.2: "the leader pools are always larger than the follower"), e.g. m = 2.
    """
    if p < 1:
        raise ValueError(f"p={p!r} must be an integer >= 1 (leaders per follower)")
    n_f = math.ceil(m / (p + 1))
    if m - n_f <= n_f:
        raise ValueError(
            f"m={m} workers with p={p} leaders per follower give {m - n_f} leaders and {n_f} followers; "
            "the leader pool must be larger (use m >= 3 and p >= 2)"
        )
    return n_f


def split_pools(recent_loss: torch.Tensor, n_follow: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Leader and follower pools from each worker's recent mean loss (Fig. 1b).

    Parameters
    ----------
    recent_loss : (m,)
        Mean training loss of each worker over the last kτ iterations.
    n_follow : int
        Size of the follower pool (:func:`n_followers`).

    Returns
    -------
    leaders : (m − n_follow,) long
        The workers with the lowest losses, ascending by index.
    followers : (n_follow,) long
        The rest, ascending by index. Equal losses are ranked by index (the lower index
        leads); a NaN loss ranks last (a diverged worker follows).
    """
    order = torch.sort(recent_loss, stable=True).indices
    m = recent_loss.shape[0]
    leaders = torch.sort(order[: m - n_follow]).values
    followers = torch.sort(order[m - n_follow :]).values
    return leaders, followers


def draw_groups(leaders: torch.Tensor, followers: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Random leader–follower groups: the leaders, shuffled, are dealt to the followers
    in turn, so group sizes differ by at most one (p each when n_f·p leaders).

    Parameters
    ----------
    leaders, followers : long
        The two pools (:func:`split_pools`).
    generator : torch.Generator
        The only source of randomness (on any device).

    Returns
    -------
    follower_of : (m,) long
        Each leader's follower; a follower maps to itself.
    """
    m = len(leaders) + len(followers)
    shuffled = leaders[torch.randperm(len(leaders), generator=generator, device=generator.device).to(leaders.device)]
    follower_of = torch.empty(m, dtype=torch.long, device=leaders.device)
    follower_of[followers] = followers
    follower_of[shuffled] = followers[torch.arange(len(leaders), device=leaders.device) % len(followers)]
    return follower_of


def elastic_matrix(follower_of: torch.Tensor, alpha: float, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """The elastic averaging of eq. (3) as a matrix A with ``W_{t+1} = A W_t − η G_t``.

    With α = ηρ, leader i of follower f and the follower's leaders L(f):

    - leader: w^i ← (1 − α) w^i + α w^f            (eq. 3, left)
    - follower: w^f ← (1 − α|L(f)|) w^f + α Σ_{i∈L(f)} w^i   (eq. 3, right, summed over
      its leaders; eq. 3 itself when |L(f)| = 1)

    A is symmetric and doubly stochastic (the elastic forces cancel in pairs, so the mean
    model is unchanged), and has non-negative entries when α·max|L(f)| ≤ 1.

    Parameters
    ----------
    follower_of : (m,) long
        The groups (:func:`draw_groups`).
    alpha : float
        α = ηρ.

    Returns
    -------
    A : (m, m)
    """
    m = follower_of.shape[0]
    idx = torch.arange(m, device=follower_of.device)
    lead = follower_of != idx
    li, fi = idx[lead], follower_of[lead]
    A = torch.zeros(m, m, dtype=dtype, device=follower_of.device)
    A[li, fi] = alpha
    A[fi, li] = alpha
    return A + torch.diag(1.0 - A.sum(1))


def vectors_per_communication(follower_of: torch.Tensor) -> int:
    """Models transmitted in one communication step: each leader–follower link carries
    the leader's model to the follower and the follower's back (2 per leader). m = 5,
    p = 4: 8 (D-PSGD on a ring: 2m = 10 per iteration). The loss scalars of a
    recategorization are not parameter vectors and are not counted here."""
    idx = torch.arange(follower_of.shape[0], device=follower_of.device)
    return 2 * int((follower_of != idx).sum())
