"""Acquisition and normalisation of the image datasets.

Acquisition order for a dataset ``name`` (``mnist`` or ``cifar10``):

1. the local cache ``<data_dir>/<name>.npz`` (written after a first download);
2. an offline mirror directory holding ``<name>.npz`` (argument ``mirror``, or the
   environment variable ``DPDL_DATA_MIRROR``; ``make DATA_MIRROR=...`` sets it);
3. torchvision's ``download=True`` into ``<data_dir>/torchvision``, converted once to the
   npz cache.

All npz files follow one schema (see ``data/README.md``): ``x_train``/``x_test`` uint8
(``(n, 28, 28)`` or ``(n, 32, 32, 3)`` HWC), ``y_train``/``y_test`` int64, and ``meta``, a
JSON string with ``name``, ``subset``, ``n_train``, ``n_test`` and ``note``.
"""
from __future__ import annotations

import json
import os
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from ...home import REPO_ROOT
from ..registry import load_plugins

__all__ = [
    "DATASETS",
    "DATA_DIR_ENV",
    "GENERATORS",
    "MIRROR_ENV",
    "FULL_DATA_ENV",
    "SubsetDataError",
    "require_full_data",
    "DataFileError",
    "DataUnavailableError",
    "Dataset",
    "DatasetSpec",
    "default_data_dir",
    "denormalize",
    "describe",
    "load_dataset",
    "mirror_dir",
    "normalize",
    "datasets",
    "input_shape",
    "read_npz",
    "register_dataset",
    "write_npz",
]

MIRROR_ENV = "DPDL_DATA_MIRROR"
DATA_DIR_ENV = "DPDL_DATA_DIR"
# 1: training runs refuse subset data (:func:`require_full_data`). `make figures
# PROFILE=paper` sets it for the notebooks it runs unless ALLOW_SUBSET=1.
FULL_DATA_ENV = "DPDL_REQUIRE_FULL_DATA"
NPZ_KEYS = ("x_train", "y_train", "x_test", "y_test", "meta")


@dataclass(frozen=True)
class DatasetSpec:
    """Static facts about a dataset: image shape, normalization, full sizes."""

    name: str
    pretty: str
    shape: tuple[int, ...]  # stored layout of one image (HW or HWC)
    mean: tuple[float, ...]
    std: tuple[float, ...]
    full_train: int
    full_test: int
    n_classes: int = 10


DATASETS: dict[str, DatasetSpec] = {
    "mnist": DatasetSpec("mnist", "MNIST", (28, 28), (0.1307,), (0.3081,), 60_000, 10_000),
    # CIFAR-10 per-channel statistics of the 50,000 training images (the true std, not the
    # often-copied 0.2023/0.1994/0.2010, which is a std of per-image means).
    "cifar10": DatasetSpec(
        "cifar10",
        "CIFAR-10",
        (32, 32, 3),
        (0.4914, 0.4822, 0.4465),
        (0.2470, 0.2435, 0.2616),
        50_000,
        10_000,
    ),
}


class DataUnavailableError(RuntimeError):
    """Raised when a dataset is in no cache, no mirror, and cannot be downloaded."""


class SubsetDataError(DataUnavailableError):
    """A paper-scale run (the ``paper`` profile, a study) was given a subset of its dataset."""


def require_full_data(meta: dict, what: str = "this run") -> None:
    """Raise :class:`SubsetDataError` when ``meta`` is a subset's and full data is required
    (``$DPDL_REQUIRE_FULL_DATA`` is 1: ``make figures PROFILE=paper`` sets it unless
    ``ALLOW_SUBSET=1``)."""
    if meta.get("subset") and os.environ.get(FULL_DATA_ENV) == "1":
        raise SubsetDataError(
            f"{what} needs the full {meta.get('name', 'dataset')}, but the file found ({meta.get('source')}) is a "
            f"subset ({describe(meta)}). Point ${MIRROR_ENV} (make DATA_MIRROR=...) at a complete mirror such as "
            f"../shared/data_full, or let torchvision download it; to run on the subset anyway, "
            f"make figures ... ALLOW_SUBSET=1 or ${FULL_DATA_ENV}=0 (every caption then names the subset).")


class DataFileError(ValueError):
    """An npz file that is damaged or does not follow the schema of ``data/README.md``."""


@dataclass
class Dataset:
    """A normalized dataset in memory (NCHW float32 tensors) plus its provenance.

    Attributes
    ----------
    x_train, x_test : torch.Tensor
        Normalized images, shape ``(n, C, H, W)``.
    y_train, y_test : torch.Tensor
        int64 labels.
    meta : dict
        ``name``, ``subset``, ``n_train``, ``n_test``, ``note`` and ``source`` (the file read).
    """

    spec: DatasetSpec
    x_train: torch.Tensor
    y_train: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor
    meta: dict = field(default_factory=dict)

    @property
    def label(self) -> str:
        """Human label for figure captions, e.g. ``MNIST subset, 17,435 train images``."""
        return describe(self.meta)


def describe(meta: dict) -> str:
    """Caption text naming the data that actually ran (subset or full, train size)."""
    pretty = DATASETS[meta["name"]].pretty if meta.get("name") in DATASETS else meta.get("name")
    kind = "subset" if meta.get("subset") else "full"
    return f"{pretty} {kind}, {int(meta['n_train']):,} train images"


def data_record(meta: dict) -> dict:
    """What a stored result records of the data that ran: its meta without the free-text
    ``note`` (the study checks ``subset`` of every stored result)."""
    return {k: v for k, v in meta.items() if k != "note"}


def default_data_dir() -> Path:
    """``$DPDL_DATA_DIR`` or the repository's ``data/`` folder."""
    env = os.environ.get(DATA_DIR_ENV)
    if env:
        return Path(env)
    return REPO_ROOT / "data"


def mirror_dir() -> Path | None:
    """The offline mirror folder named by ``$DPDL_DATA_MIRROR`` (``make DATA_MIRROR=DIR``), or None.

    Raises
    ------
    DataUnavailableError
        When the variable names a folder that does not exist.
    """
    env = os.environ.get(MIRROR_ENV)
    if not env:
        return None
    path = Path(env)
    if not path.is_dir():
        raise DataUnavailableError(
            f"${MIRROR_ENV}={env} is not a folder; point it (make DATA_MIRROR=DIR) at the offline "
            "mirror, a folder holding mnist.npz and cifar10.npz (e.g. ../shared/data), or unset it to use "
            "the cache and torchvision's download."
        )
    return path


# Datasets a paper makes in code instead of reading a file: name -> generator() returning
# (arrays, meta) in the npz schema (uint8 images x_train, x_test; int64 labels).
GENERATORS: dict[str, Callable[[], tuple[dict, dict]]] = {}


def register_dataset(spec: DatasetSpec, generator: Callable[[], tuple[dict, dict]] | None = None) -> DatasetSpec:
    """Add ``spec`` to :data:`DATASETS` (config ``dataset: spec.name``); with ``generator``,
    :func:`load_dataset` calls it instead of looking for ``<name>.npz``."""
    if DATASETS.get(spec.name, spec) != spec:
        raise ValueError(f"two datasets are named {spec.name!r}")
    DATASETS[spec.name] = spec
    if generator is not None:
        GENERATORS[spec.name] = generator
    return spec


def datasets() -> list[str]:
    """Every dataset name, the papers' included (they are loaded first)."""
    load_plugins()
    return sorted(DATASETS)


def input_shape(name: str) -> tuple[int, int, int]:
    """The (C, H, W) of one normalized image of dataset ``name``."""
    shape = _check_name(name).shape
    return (1, *shape) if len(shape) == 2 else (shape[2], shape[0], shape[1])


def _check_name(name: str) -> DatasetSpec:
    if name not in DATASETS and name not in datasets():  # a paper's dataset: load the papers
        raise ValueError(f"dataset={name!r} is not known; allowed values: {sorted(DATASETS)}")
    return DATASETS[name]


def read_npz(
    path: Path | str, name: str, fix: str = "re-create it in the schema of data/README.md"
) -> tuple[dict[str, np.ndarray], dict]:
    """Read and validate an npz file of the package schema.

    Parameters
    ----------
    fix : str
        What to do about a bad file, appended to the error (e.g. "re-copy the mirror").

    Raises
    ------
    DataFileError
        A ``ValueError`` naming the file, the bad key and ``fix``: the file is damaged or
        not an npz, a key is missing, an array has the wrong dtype or shape, a label is
        outside the dataset's classes, or ``meta`` is not a JSON object of this dataset.
    """
    spec = _check_name(name)

    def bad(problem: str) -> DataFileError:
        return DataFileError(f"{path}: {problem}; {fix}")

    try:
        with np.load(path, allow_pickle=False) as z:
            missing = [k for k in NPZ_KEYS if k not in z.files]
            if missing:
                raise bad(f"missing keys {missing}; expected {list(NPZ_KEYS)}")
            arrays = {k: z[k] for k in NPZ_KEYS if k != "meta"}
            meta_text = z["meta"]
    except DataFileError:
        raise
    # A truncated or overwritten file fails inside numpy's zip and zlib readers, or
    # np.load takes it for a pickle, which allow_pickle=False refuses with a ValueError.
    except (OSError, EOFError, ValueError, zipfile.BadZipFile, zlib.error) as exc:
        raise bad(f"damaged or not an npz file ({type(exc).__name__}: {exc})") from None
    if meta_text.shape != () or meta_text.dtype.kind not in "US":
        raise bad(f"meta must be a JSON string, got a {meta_text.dtype} array of shape {meta_text.shape}")
    try:
        meta = json.loads(str(meta_text))
    except json.JSONDecodeError as exc:
        raise bad(f"meta is not valid JSON ({exc})") from None
    if not isinstance(meta, dict):
        raise bad(f"meta must be a JSON object with name, subset, n_train, n_test, note; got {type(meta).__name__}")
    if meta.get("name", name) != name:
        raise bad(f"meta names dataset {meta['name']!r}, but the file is read as {name!r}")
    for split in ("train", "test"):
        x, y = arrays[f"x_{split}"], arrays[f"y_{split}"]
        if x.dtype != np.uint8 or tuple(x.shape[1:]) != spec.shape:
            raise bad(f"x_{split} must be uint8 of shape (n, {', '.join(map(str, spec.shape))}), "
                      f"got {x.dtype} {x.shape}")
        if x.shape[0] == 0:
            raise bad(f"x_{split} holds no images")
        if y.shape != (x.shape[0],):
            raise bad(f"y_{split} has shape {y.shape}, expected ({x.shape[0]},)")
        if not np.issubdtype(y.dtype, np.integer):
            raise bad(f"y_{split} must hold integer class indices (int64), got {y.dtype}")
        outside = np.flatnonzero((y < 0) | (y >= spec.n_classes))
        if outside.size:
            i = int(outside[0])
            raise bad(f"y_{split} holds {outside.size} label(s) outside the classes 0..{spec.n_classes - 1} "
                      f"of {spec.pretty} (y_{split}[{i}] = {y[i]})")
        arrays[f"y_{split}"] = y.astype(np.int64)
    return arrays, meta


def write_npz(path: Path | str, arrays: dict[str, np.ndarray], meta: dict) -> None:
    """Write an npz of the package schema atomically (temp file, then rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.npz")
    np.savez_compressed(tmp, **{k: arrays[k] for k in NPZ_KEYS if k != "meta"}, meta=json.dumps(meta))
    os.replace(tmp, path)


def _download_torchvision(spec: DatasetSpec, data_dir: Path) -> tuple[dict[str, np.ndarray], dict]:
    """Fetch the full dataset with torchvision and convert it to the npz schema."""
    import torchvision.datasets as tvd

    root = data_dir / "torchvision"
    cls = {"mnist": tvd.MNIST, "cifar10": tvd.CIFAR10}[spec.name]
    parts = {}
    for split, train in (("train", True), ("test", False)):
        ds = cls(root=str(root), train=train, download=True)
        x = ds.data.numpy() if isinstance(ds.data, torch.Tensor) else np.asarray(ds.data)
        parts[f"x_{split}"] = x.astype(np.uint8)
        parts[f"y_{split}"] = np.asarray(ds.targets, dtype=np.int64)
    meta = {
        "name": spec.name,
        "subset": False,
        "n_train": int(parts["x_train"].shape[0]),
        "n_test": int(parts["x_test"].shape[0]),
        "note": "downloaded with torchvision",
    }
    return parts, meta


def _locate(name: str, data_dir: Path, mirror: Path | None, download: bool):
    spec = _check_name(name)
    cache = data_dir / f"{name}.npz"
    if cache.exists():
        fix = f"delete {cache} (the local cache) and load again to fetch it anew from the mirror or torchvision"
        return (*read_npz(cache, name, fix), str(cache))
    if mirror is not None:
        candidate = Path(mirror) / f"{name}.npz"
        if candidate.exists():
            fix = (f"re-copy the mirror's {name}.npz from its source, or unset ${MIRROR_ENV} or point it at a folder "
                   f"holding a good {name}.npz")
            return (*read_npz(candidate, name, fix), str(candidate))
    tried = [f"cache {cache} (absent)"]
    if mirror is not None:
        tried.append(f"mirror {Path(mirror) / f'{name}.npz'} (absent)")
    else:
        tried.append(f"mirror (none given: ${MIRROR_ENV} unset)")
    if download:
        try:
            arrays, meta = _download_torchvision(spec, data_dir)
        except Exception as exc:  # any network/IO failure ends in the one clear message
            tried.append(f"torchvision download ({type(exc).__name__}: {exc})")
        else:
            write_npz(cache, arrays, meta)
            return arrays, meta, str(cache)
    else:
        tried.append("torchvision download (disabled)")
    raise DataUnavailableError(
        f"{spec.pretty} is not available. Tried: " + "; ".join(tried) + ". "
        f"To fix: connect to the internet once (the full dataset is then cached as {cache}), "
        f"or point ${MIRROR_ENV} (make DATA_MIRROR=DIR) at a folder holding {name}.npz "
        "in the schema of data/README.md."
    )


def load_dataset(
    name: str,
    *,
    data_dir: Path | str | None = None,
    mirror: Path | str | None = None,
    download: bool = True,
) -> Dataset:
    """Load a dataset, normalized, as NCHW float tensors.

    Parameters
    ----------
    name : {"mnist", "cifar10"}
    data_dir : path, optional
        Cache folder (default :func:`default_data_dir`).
    mirror : path, optional
        Offline mirror folder; defaults to ``$DPDL_DATA_MIRROR``.
    download : bool
        Try torchvision's download when neither cache nor mirror has the file.

    Raises
    ------
    DataUnavailableError
        With the places tried and how to get the data.
    """
    spec = _check_name(name)
    data_dir = Path(data_dir) if data_dir is not None else default_data_dir()
    if mirror is None:
        mirror = mirror_dir()
    if name in GENERATORS:
        arrays, meta = GENERATORS[name]()
        source = "generated"
    else:
        arrays, meta, source = _locate(name, data_dir, Path(mirror) if mirror else None, download)
    meta = {**meta, "source": source}
    meta.setdefault("n_train", int(arrays["x_train"].shape[0]))
    meta.setdefault("n_test", int(arrays["x_test"].shape[0]))
    return Dataset(
        spec=spec,
        x_train=normalize(arrays["x_train"], spec),
        y_train=torch.from_numpy(arrays["y_train"]),
        x_test=normalize(arrays["x_test"], spec),
        y_test=torch.from_numpy(arrays["y_test"]),
        meta=meta,
    )


def normalize(x: np.ndarray, spec: DatasetSpec) -> torch.Tensor:
    """uint8 HW/HWC images to normalized float32 NCHW: ``(x/255 - mean) / std``."""
    t = torch.from_numpy(np.ascontiguousarray(x)).float().div_(255.0)
    t = t.unsqueeze(1) if t.ndim == 3 else t.permute(0, 3, 1, 2).contiguous()
    mean = torch.tensor(spec.mean).view(1, -1, 1, 1)
    std = torch.tensor(spec.std).view(1, -1, 1, 1)
    return (t - mean) / std


def denormalize(x: torch.Tensor, spec: DatasetSpec) -> torch.Tensor:
    """Inverse of :func:`normalize` (to [0, 1] pixel scale, not clamped)."""
    mean = torch.tensor(spec.mean, device=x.device).view(1, -1, 1, 1)
    std = torch.tensor(spec.std, device=x.device).view(1, -1, 1, 1)
    return x * std + mean
