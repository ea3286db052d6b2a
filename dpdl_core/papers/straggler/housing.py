"""The binarized UCI housing data of Sec. VI-B, and its per-run splits over the nodes.

Offline default: the UCI (Boston) housing file ``housing.data`` (506 rows, 13 features and
the median value MEDV), found like every other dataset of the package: the local cache
``<data_dir>/housing.data`` first, then the offline mirror ``$DPDL_DATA_MIRROR``. Nothing
is downloaded. Any other regression table (e.g. the 8-feature OpenML ``houses`` set the
paper's d = 8 suggests, spec §5.1) goes through :func:`prepare_housing` from arrays.

Preprocessing, in the paper's order (Sec. VI-B): y = +1 iff MEDV > median(MEDV) (ties
−1), features standardized over all rows, every row scaled to unit ℓ2 norm (so every
logistic loss is 1-Lipschitz, k = 1); then, per run, a random 80/20 train/test split and a
random split of the training rows over the n nodes.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ...sim import MIRROR_ENV, DataUnavailableError, default_data_dir, mirror_dir

__all__ = ["CAL_HOUSING_FILE", "HOUSING_FILE", "HousingData", "RunSplits", "load_cal_housing", "load_housing",
           "prepare_housing", "split_runs"]

HOUSING_FILE = "housing.data"
UCI_SOURCE = "https://archive.ics.uci.edu/ml/machine-learning-databases/housing/housing.data"


@dataclass(frozen=True)
class HousingData:
    """Binarized, standardized, unit-norm data.

    Attributes
    ----------
    x : np.ndarray
        ``(N, d)`` float64, rows of unit ℓ2 norm.
    y : np.ndarray
        ``(N,)`` float64 labels in {−1, +1}.
    label : str
        Caption text naming the data, e.g. ``UCI housing (Boston), 506 rows``.
    meta : dict
        ``source`` (file read), ``median`` (threshold of the labels), ``positives``.
    """

    x: np.ndarray
    y: np.ndarray
    label: str
    meta: dict = field(default_factory=dict)

    @property
    def d(self) -> int:
        return self.x.shape[1]


def prepare_housing(features: np.ndarray, target: np.ndarray, label: str, source: str = "arrays") -> HousingData:
    """Binarize at the median, standardize, scale rows to unit norm (Sec. VI-B).

    Parameters
    ----------
    features : array (N, d)
    target : array (N,)
        The continuous value (MEDV); y = +1 iff target > median(target), ties → −1.
    label : str
        Caption text for figures.
    """
    features = np.asarray(features, dtype=np.float64)
    target = np.asarray(target, dtype=np.float64)
    if features.ndim != 2 or target.shape != (features.shape[0],):
        raise ValueError(f"features must be (N, d) and target (N,); got {features.shape} and {target.shape}")
    median = float(np.median(target))
    y = np.where(target > median, 1.0, -1.0)
    std = features.std(axis=0)
    if (std == 0).any():
        raise ValueError(f"constant feature columns {np.flatnonzero(std == 0).tolist()} cannot be standardized")
    x = (features - features.mean(axis=0)) / std
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return HousingData(x, y, label, {"source": source, "median": median, "positives": int((y > 0).sum())})


def _find(data_dir: Path | None, mirror: Path | None) -> Path:
    data_dir = Path(data_dir) if data_dir is not None else default_data_dir()
    if mirror is None:
        mirror = mirror_dir()
    tried = []
    for where, folder in (("cache", data_dir), ("mirror", mirror)):
        if folder is None:
            tried.append(f"mirror (none given: ${MIRROR_ENV} unset)")
            continue
        path = Path(folder) / HOUSING_FILE
        if path.is_file():
            return path
        tried.append(f"{where} {path} (absent)")
    raise DataUnavailableError(
        f"UCI housing ({HOUSING_FILE}) is not available. Tried: " + "; ".join(tried) + ". "
        f"To fix: set DATA_MIRROR=../shared/data (make) or ${MIRROR_ENV} to a folder holding "
        f"{HOUSING_FILE}, the UCI (Boston) housing dataset (506 rows x 14 whitespace-separated "
        f"columns, the last the median value; from {UCI_SOURCE} or any redistribution of it). "
        "Nothing is downloaded at run time."
    )


def load_housing(*, path: Path | str | None = None, data_dir: Path | str | None = None,
                 mirror: Path | str | None = None) -> HousingData:
    """Read ``housing.data`` and preprocess it with :func:`prepare_housing`.

    Parameters
    ----------
    path : path, optional
        The file itself; otherwise the cache ``<data_dir>/housing.data``, then the mirror.
    data_dir : path, optional
        Cache folder (default :func:`dpdl_core.sim.data.default_data_dir`).
    mirror : path, optional
        Offline mirror folder; defaults to ``$DPDL_DATA_MIRROR``.

    Raises
    ------
    DataUnavailableError
        If the file is nowhere; the message says which variable to set and where the file
        comes from.
    ValueError
        If the file is not 14 numeric columns.
    """
    if path is not None:
        path = Path(path)
        if not path.is_file():
            raise DataUnavailableError(
                f"{path} does not exist. Set DATA_MIRROR=../shared/data (make) or ${MIRROR_ENV} to a "
                f"folder holding {HOUSING_FILE} (UCI Boston housing, from {UCI_SOURCE})."
            )
    else:
        path = _find(data_dir, mirror)
    table = np.loadtxt(path, dtype=np.float64, ndmin=2)
    if table.shape[1] != 14:
        raise ValueError(f"{path}: expected 14 columns (13 features and MEDV), got {table.shape[1]}")
    return prepare_housing(table[:, :13], table[:, 13], f"UCI housing (Boston), {len(table)} rows", str(path))


@dataclass(frozen=True)
class RunSplits:
    """Per-run train/test splits and node partitions, stacked over runs.

    Attributes
    ----------
    z : np.ndarray
        ``(R, n, m, d)``: y·x of the training rows of each node, zero-padded to the largest
        node size m (the logistic loss only needs the product y·x).
    mask : np.ndarray
        ``(R, n, m)`` bool, True on real rows.
    x_test, y_test : np.ndarray
        ``(R, n_test, d)`` and ``(R, n_test)``.
    """

    z: np.ndarray
    mask: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray

    @property
    def n_runs(self) -> int:
        return self.z.shape[0]

    @property
    def n_nodes(self) -> int:
        return self.z.shape[1]


def split_runs(data: HousingData, n_runs: int, *, n_nodes: int = 10, test_fraction: float = 0.2,
               seed: int = 0) -> RunSplits:
    """Draw each run's split: run r uses ``np.random.default_rng(seed + r)`` (seeds 0–99, spec §5.7).

    The test set has ⌈test_fraction·N⌉ rows (scikit-learn's rounding: 102 of 506); the
    training rows are shuffled and cut into n near-equal parts (40 or 41 rows for Boston).
    """
    if not 0 < test_fraction < 1:
        raise ValueError(f"test_fraction={test_fraction!r} must be in (0, 1)")
    N, d = data.x.shape
    n_test = math.ceil(test_fraction * N)
    if N - n_test < n_nodes:
        raise ValueError(f"{N - n_test} training rows cannot be split over n_nodes={n_nodes}")
    m = math.ceil((N - n_test) / n_nodes)
    z = np.zeros((n_runs, n_nodes, m, d))
    mask = np.zeros((n_runs, n_nodes, m), dtype=bool)
    x_test = np.empty((n_runs, n_test, d))
    y_test = np.empty((n_runs, n_test))
    zx = data.y[:, None] * data.x
    for r in range(n_runs):  # set-up only, once per run; the training loop is vectorized
        perm = np.random.default_rng(seed + r).permutation(N)
        test, train = perm[:n_test], perm[n_test:]
        x_test[r], y_test[r] = data.x[test], data.y[test]
        for v, part in enumerate(np.array_split(train, n_nodes)):
            z[r, v, : len(part)] = zx[part]
            mask[r, v, : len(part)] = True
    return RunSplits(z, mask, x_test, y_test)


CAL_HOUSING_FILE = "cal_housing.data"
CAL_HOUSING_ROWS = 20_640


def load_cal_housing(*, path: Path | str | None = None, data_dir: Path | str | None = None,
                     mirror: Path | str | None = None) -> HousingData:
    """Read the California housing set, the paper's [39] (OpenML 823, d = 8), and binarize it.

    ``cal_housing.data``: 20,640 rows of 9 comma-separated columns, the 8 features and the
    median house value (the target, last). Found like :func:`load_housing` (cache, then the
    offline mirror); preprocessed by :func:`prepare_housing`.

    Raises
    ------
    DataUnavailableError
        If the file is nowhere.
    ValueError
        If the file is not 9 numeric columns.
    """
    if path is None:
        data_dir = Path(data_dir) if data_dir is not None else default_data_dir()
        mirror = mirror if mirror is not None else mirror_dir()
        found = [Path(f) / CAL_HOUSING_FILE for f in (data_dir, mirror) if f is not None]
        path = next((p for p in found if p.is_file()), None)
        if path is None:
            raise DataUnavailableError(
                f"California housing ({CAL_HOUSING_FILE}) is not available. Tried: "
                + ("; ".join(str(p) for p in found) or f"no folder (${MIRROR_ENV} unset)")
                + f". To fix: set DATA_MIRROR=../shared/data (make) or ${MIRROR_ENV} to a folder holding "
                f"{CAL_HOUSING_FILE} (OpenML 823 / StatLib cal_housing, 20,640 rows x 9 comma-separated columns). "
                "Nothing is downloaded at run time.")
    table = np.loadtxt(path, dtype=np.float64, delimiter=",", ndmin=2)
    if table.shape[1] != 9:
        raise ValueError(f"{path}: expected 9 columns (8 features and the median house value), got {table.shape[1]}")
    return prepare_housing(table[:, :8], table[:, 8], f"California housing (OpenML 823), {len(table):,} rows",
                           str(path))
