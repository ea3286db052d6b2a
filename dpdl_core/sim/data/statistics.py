"""Statistics of a partition: label counts per agent and their entropy."""
from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["label_counts", "mean_label_entropy"]


def label_counts(labels, parts: list[np.ndarray], n_classes: int = 10) -> pd.DataFrame:
    """Agents × classes table of sample counts (index ``agent``, columns 0..n_classes-1)."""
    labels = np.asarray(labels)
    rows = [np.bincount(labels[p], minlength=n_classes) for p in parts]
    df = pd.DataFrame(rows, columns=list(range(n_classes)))
    df.index.name = "agent"
    return df


def mean_label_entropy(counts: pd.DataFrame) -> float:
    """Mean over agents of the Shannon entropy (nats) of the agent's label distribution."""
    p = counts.to_numpy(dtype=float)
    p = p / p.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        h = -np.where(p > 0, p * np.log(p), 0.0).sum(axis=1)
    return float(h.mean())
