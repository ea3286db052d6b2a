"""Experiment configuration: one frozen dataclass, YAML/dict round trips, overrides, hash.

Every field is validated on construction; a bad value raises :class:`ConfigError` naming
the field and its allowed values. Algorithm-specific options live in ``algo`` (a dict)
and are validated by the algorithm's own ``Params`` dataclass, defaults filled in, so two
configs that mean the same run hash the same.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import yaml

from . import __version__
from .data import DATASETS, PARTITION_SCHEMES
from .models import MODELS
from .topology import TOPOLOGIES
from .validation import check_choice, check_int

__all__ = ["ConfigError", "ExperimentConfig", "apply_overrides"]

DEVICES = ("cpu", "cuda", "auto")
# Fields that do not change what a run computes, so they stay out of its hash.
_UNHASHED = ("checkpoint_every",)
# Fields added after results were first stored: at these values they are left out of the
# hash, so runs stored before they existed keep their identity.
_HASHED_UNLESS = {"validation_samples": None, "schedule": "static", "lr_decay": 1.0, "lr_decay_every": 0}


class ConfigError(ValueError):
    """An invalid or unknown configuration field."""


def _algorithms() -> tuple[str, ...]:
    from .algorithms import algorithms

    return tuple(sorted(algorithms()))


def _sigma_rules() -> tuple[str, ...]:
    from . import papers
    from .privacy import SIGMA_RULES

    papers.load_all()
    return tuple(sorted(SIGMA_RULES))


@dataclass(frozen=True)
class ExperimentConfig:
    """One decentralized training run.

    Attributes
    ----------
    dataset : {"mnist", "cifar10"}
    model : str
        A name from :data:`dpdl_core.models.MODELS`, or ``"auto"`` for the model registered
        as the dataset's default (``lenet`` / ``dpdl_cnn``).
    algorithm : str
        A name from :data:`dpdl_core.algorithms.ALGORITHMS`.
    algo : dict
        Options of the algorithm (its ``Params`` dataclass), defaults filled in.
    topology : {"fully_connected", "bipartite", "ring"}
    schedule : str
        Who talks to whom in round t (:mod:`dpdl_core.schedules`): ``static`` uses the
        topology in every round.
    n_agents : int
    alpha_d : float
        Dirichlet concentration of the non-IID split.
    partition : {"per_agent", "per_class"}
    epsilon : float or None
        Privacy budget; ``None`` runs the non-private algorithm (σ = 0).
    delta : float
        1e-5 by default (the DPDL paper does not state δ).
    sigma_rule : str
        How σ is derived from (ε, δ), a name from :data:`dpdl_core.privacy.SIGMA_RULES`
        (``rdp``, ``fixed``, and the papers' rules such as ``authors_code``); ``fixed``
        uses ``sigma``.
    sigma : float or None
        Noise multiplier for ``sigma_rule="fixed"``.
    rounds, batch_size : int
    lr, momentum, clip : float
        η, β and the clipping threshold C.
    lr_decay, lr_decay_every : float, int
        Step decay of η: η_t = η·lr_decay^⌊(t−1)/lr_decay_every⌋ (``lr_decay_every = 0``: a
        constant η, the papers' setting; the DPDL authors' code decays by 0.995 every 30
        rounds).
    seed : int
    eval_every : int
        Rounds between test evaluations (the last round is always evaluated).
    eval_samples : int or None
        Test images used at each evaluation (``None``: all).
    train_samples : int or None
        Training images used before partitioning (``None``: all available).
    validation_samples : int or None
        Test images set aside as a validation set (PDSL's Q), drawn by a seeded
        permutation; evaluation then uses the rest of the test set. ``None``: no
        validation set.
    checkpoint_every : int
        Rounds between resumable checkpoints (0: none).
    device : {"cpu", "cuda", "auto"}
    """

    dataset: str = "mnist"
    model: str = "auto"
    algorithm: str = "dpdl"
    algo: dict = field(default_factory=dict)
    topology: str = "bipartite"
    schedule: str = "static"
    n_agents: int = 10
    alpha_d: float = 0.25
    partition: str = "per_agent"
    epsilon: float | None = 0.5
    delta: float = 1e-5
    sigma_rule: str = "rdp"
    sigma: float | None = None
    rounds: int = 100
    batch_size: int = 216
    lr: float = 0.005
    momentum: float = 0.7
    clip: float = 2.0
    lr_decay: float = 1.0
    lr_decay_every: int = 0
    seed: int = 0
    eval_every: int = 10
    eval_samples: int | None = None
    train_samples: int | None = None
    validation_samples: int | None = None
    checkpoint_every: int = 50
    device: str = "cpu"

    def __post_init__(self):
        self._check_choice("dataset", sorted(DATASETS))
        if self.model != "auto":
            self._check_choice("model", sorted(MODELS) + ["auto"])
        self._check_choice("algorithm", _algorithms())
        self._check_choice("topology", TOPOLOGIES)
        self._check_choice("partition", PARTITION_SCHEMES)
        self._check_choice("sigma_rule", _sigma_rules())
        from .schedules import SCHEDULES

        self._check_choice("schedule", sorted(SCHEDULES))
        self._check_choice("device", DEVICES)
        for name in ("n_agents", "rounds", "batch_size", "eval_every"):
            self._check_int(name, minimum=1)
        self._check_int("seed", minimum=0)
        self._check_int("checkpoint_every", minimum=0)
        self._check_int("lr_decay_every", minimum=0)
        self._check_float("lr_decay", 0, 1)
        for name in ("eval_samples", "train_samples", "validation_samples"):
            if getattr(self, name) is not None:
                self._check_int(name, minimum=1)
        for name, lo, hi in (("alpha_d", 0, None), ("lr", 0, None), ("clip", 0, None), ("delta", 0, 1)):
            self._check_float(name, lo, hi)
        self._check_float("momentum", 0, 1, inclusive_low=True)
        if self.epsilon is not None:
            self._check_float("epsilon", 0, None)
        if self.sigma_rule == "fixed":
            if self.sigma is None or not isinstance(self.sigma, (int, float)) or self.sigma < 0:
                raise ConfigError("sigma must be a number >= 0 when sigma_rule='fixed'")
        elif self.sigma is not None:
            raise ConfigError(f"sigma is only used with sigma_rule='fixed' (sigma_rule={self.sigma_rule!r})")
        if not isinstance(self.algo, dict):
            raise ConfigError(f"algo must be a mapping of algorithm options, got {type(self.algo).__name__}")
        from .algorithms import resolve_params

        try:
            resolved = resolve_params(self.algorithm, self.algo)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"algo: {exc}") from None
        object.__setattr__(self, "algo", resolved)
        if self.model == "auto":
            from .models import default_model

            object.__setattr__(self, "model", default_model(self.dataset))

    # -- validation helpers -------------------------------------------------------------
    def _check_choice(self, name: str, allowed) -> None:
        check_choice(self, name, allowed, error=ConfigError)

    def _check_int(self, name: str, minimum: int) -> None:
        check_int(self, name, minimum, error=ConfigError)

    def _check_float(self, name, low, high, inclusive_low=False) -> None:
        value = getattr(self, name)
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        ok = ok and (value >= low if inclusive_low else value > low) and (high is None or value <= high)
        if not ok:
            rng = f">= {low}" if inclusive_low else f"> {low}"
            rng += f" and <= {high}" if high is not None else ""
            raise ConfigError(f"{name}={value!r} must be a number {rng}")

    # -- conversions ----------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Plain dict of every field (JSON/YAML safe)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ExperimentConfig:
        """Build from a mapping; unknown keys raise :class:`ConfigError` listing the known."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ConfigError(f"unknown config field(s) {unknown}; allowed fields: {sorted(known)}")
        return cls(**d)

    def to_yaml(self, path: str | Path | None = None) -> str:
        text = yaml.safe_dump(self.to_dict(), sort_keys=False)
        if path is not None:
            Path(path).write_text(text)
        return text

    @classmethod
    def from_yaml(cls, path: str | Path) -> ExperimentConfig:
        """From a YAML file."""
        path = Path(path)
        if not path.exists():
            raise ConfigError(f"config file {path} does not exist")
        return cls.from_yaml_text(path.read_text())

    @classmethod
    def from_yaml_text(cls, text: str) -> ExperimentConfig:
        """From YAML text."""
        data = yaml.safe_load(text) or {}
        if not isinstance(data, dict):
            raise ConfigError(f"a config must be a YAML mapping, got {type(data).__name__}")
        return cls.from_dict(data)

    def with_overrides(self, overrides: list[str] | dict[str, Any]) -> ExperimentConfig:
        """Apply ``key=value`` strings (``algo.alpha=2`` for algorithm options) or a dict."""
        return apply_overrides(self, overrides)

    def replace(self, **changes) -> ExperimentConfig:
        return replace(self, **changes)

    # -- identity -------------------------------------------------------------------------
    def canonical_json(self) -> str:
        """Canonical JSON of the hashed fields plus the package version."""
        d = {k: v for k, v in self.to_dict().items() if k not in _UNHASHED}
        d = {k: v for k, v in d.items() if k not in _HASHED_UNLESS or v != _HASHED_UNLESS[k]}
        return json.dumps({"config": d, "version": __version__}, sort_keys=True, separators=(",", ":"))

    @property
    def hash(self) -> str:
        """Stable 16-hex-digit content hash identifying the run."""
        return hashlib.sha256(self.canonical_json().encode()).hexdigest()[:16]


def apply_overrides(cfg: ExperimentConfig, overrides: list[str] | dict[str, Any]) -> ExperimentConfig:
    """Return ``cfg`` with overrides applied.

    Parameters
    ----------
    overrides : list of "key=value" or dict
        Values are parsed as YAML scalars (``0.5``, ``null``, ``true``); ``algo.NAME``
        sets an algorithm option.
    """
    if isinstance(overrides, dict):
        items = list(overrides.items())
    else:
        items = []
        for s in overrides:
            if "=" not in s:
                raise ConfigError(f"override {s!r} must look like key=value (e.g. epsilon=0.5)")
            k, v = s.split("=", 1)
            items.append((k.strip(), yaml.safe_load(v)))
    d = cfg.to_dict()
    algo = dict(d["algo"])
    for k, v in items:
        if k.startswith("algo."):
            algo[k[5:]] = v
        else:
            if k == "algorithm" and v != cfg.algorithm:
                algo = {}  # options of another algorithm do not carry over
            d[k] = v
    d["algo"] = algo
    return ExperimentConfig.from_dict(d)
