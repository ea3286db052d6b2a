"""Non-IID partitions of a training set over agents, and validation splits."""
from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np
import torch

__all__ = ["PARTITION_SCHEMES", "dirichlet_partition", "validation_split"]


PARTITION_SCHEMES = ("per_agent", "per_class")


def dirichlet_partition(
    labels: np.ndarray | torch.Tensor,
    n_agents: int,
    alpha: float,
    *,
    seed: int,
    scheme: str = "per_agent",
    min_size: int = 10,
    max_tries: int = 1000,
) -> list[np.ndarray]:
    """Split sample indices across agents with Dirichlet label skew.

    Parameters
    ----------
    labels : array of int
        Class index of every training sample.
    n_agents : int
    alpha : float
        Dirichlet concentration α_d (> 0); smaller means more skewed.
    seed : int
    scheme : {"per_agent", "per_class"}
        ``per_agent`` (the DPDL authors' released code): agent i draws class proportions
        p_i ~ Dir(α·1) and receives ⌊n/N⌋ samples drawn without replacement with those
        proportions (a class that runs out is replaced by the agent's other classes in
        proportion to p_i), so agents are of equal size. ``per_class`` (FedLab/Flower): the
        samples of each class are split across agents by q_c ~ Dir(α·1), redrawn until
        every agent has at least ``min_size`` samples.
    min_size : int
        Smallest agent allowed under ``per_class``.

    Returns
    -------
    list of np.ndarray
        Disjoint, sorted index arrays, one per agent, none empty.
    """
    labels = np.asarray(labels, dtype=np.int64)
    if scheme not in PARTITION_SCHEMES:
        raise ValueError(f"scheme={scheme!r} is not known; allowed values: {list(PARTITION_SCHEMES)}")
    if isinstance(alpha, bool) or not isinstance(alpha, Real) or not 0 < alpha < math.inf:
        raise ValueError(f"alpha={alpha!r} (the config's alpha_d) must be a finite number > 0; "
                         "smaller is more skewed, e.g. 0.1 to 10")
    if isinstance(n_agents, bool) or not isinstance(n_agents, Integral) or not 1 <= n_agents <= len(labels):
        raise ValueError(f"n_agents={n_agents!r} must be an integer between 1 and the {len(labels)} training samples "
                         "(every agent needs a sample); use fewer agents or more samples (train_samples)")
    rng = np.random.default_rng(seed)
    classes = np.unique(labels)
    pools = {c: rng.permutation(np.flatnonzero(labels == c)) for c in classes}
    if scheme == "per_agent":
        parts = _per_agent(pools, classes, n_agents, alpha, len(labels) // n_agents, rng)
    else:
        parts = _per_class(pools, classes, n_agents, alpha, min_size, max_tries, rng)
    return [np.sort(p) for p in parts]


def _per_agent(pools, classes, n_agents, alpha, size, rng) -> list[np.ndarray]:
    left = {c: list(p) for c, p in pools.items()}
    parts = []
    for _ in range(n_agents):
        p = rng.dirichlet(np.full(len(classes), alpha))
        want = rng.multinomial(size, p)
        take = []
        deficit = 0
        for k, c in enumerate(classes):
            n = min(want[k], len(left[c]))
            deficit += want[k] - n
            take.extend(left[c][:n])
            del left[c][:n]
        while deficit > 0:  # redistribute over classes that still have samples, by p
            avail = np.array([len(left[c]) for c in classes])
            w = np.where(avail > 0, p + 1e-12, 0.0)
            k = rng.choice(len(classes), p=w / w.sum())
            take.append(left[classes[k]].pop(0))
            deficit -= 1
        parts.append(np.array(take, dtype=np.int64))
    return parts


def _per_class(pools, classes, n_agents, alpha, min_size, max_tries, rng) -> list[np.ndarray]:
    n_total = sum(len(p) for p in pools.values())
    min_size = min(min_size, n_total // n_agents)
    for _ in range(max_tries):
        buckets: list[list[int]] = [[] for _ in range(n_agents)]
        for c in classes:
            q = rng.dirichlet(np.full(n_agents, alpha))
            cuts = (np.cumsum(q) * len(pools[c])).astype(int)[:-1]
            for a, chunk in enumerate(np.split(pools[c], cuts)):
                buckets[a].extend(chunk.tolist())
        if min(len(b) for b in buckets) >= max(min_size, 1):
            return [np.array(b, dtype=np.int64) for b in buckets]
    raise RuntimeError(
        f"per_class partition left an agent with fewer than {min_size} samples after "
        f"{max_tries} draws; use fewer agents, a larger alpha, or scheme='per_agent'"
    )


def validation_split(n_test: int, n_val: int = 2000, *, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Random validation/test split of the test set (PDSL's validation set Q).

    Returns
    -------
    (val_idx, test_idx) : sorted disjoint index arrays covering ``range(n_test)``.
    """
    if not 0 < n_val < n_test:
        raise ValueError(f"n_val={n_val} (the config's validation_samples) must be between 1 and "
                         f"n_test-1={n_test - 1}, so that test images are left to evaluate on")
    perm = np.random.default_rng(seed).permutation(n_test)
    return np.sort(perm[:n_val]), np.sort(perm[n_val:])
