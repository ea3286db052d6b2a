"""Experiment configuration: one frozen dataclass, YAML/dict round trips, overrides, hash.

Every field is validated on construction; a bad value raises :class:`ConfigError` naming
the field and its allowed values. Algorithm-specific options live in ``algo`` (a dict)
and are validated by the algorithm's own ``Params`` dataclass, defaults filled in, so two
configs that mean the same run hash the same.

YAML (files and ``--set`` values) is read safely, with two changes to PyYAML's YAML 1.1:
exponent floats such as ``1e-3`` are numbers (as in YAML 1.2), and a key given twice is an
error rather than a silent overwrite.
"""
from __future__ import annotations

import functools
import hashlib
import json
import math
import re
import types
import warnings
from collections.abc import Mapping
from dataclasses import MISSING, asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Union, get_args, get_origin, get_type_hints

import yaml

from ..home import __version__
from ..sim.strategies import AUTO, BATCH_GRAD_STRATEGIES, EVAL_STRATEGIES, PER_SAMPLE_STRATEGIES
from ..sim.validation import check_choice, check_int

__all__ = ["ConfigError", "ExperimentConfig", "apply_overrides", "per_sample_rule", "precheck", "registry_choices"]

DEVICES = ("cpu", "cuda", "auto")
# x_0: one model shared by every agent (the papers' Algorithm 1) or one random model per
# agent (the DPDL authors' released code, which never seeds).
INITS = ("shared", "per_agent")
# Which evaluations also measure the test set (the validation set is measured at every one).
TEST_AT = ("every_evaluation", "best_validation")
# Fields that do not change what a run computes, so they stay out of its hash.
_UNHASHED = ("checkpoint_every",)
# Fields added after results were first stored: at these values they are left out of the
# hash, so runs stored before they existed keep their identity.
_HASHED_UNLESS = {"validation_samples": None, "schedule": "static", "lr_decay": 1.0, "lr_decay_every": 0,
                  "compile": False, "init": "shared", "mixing": "metropolis", "stop_on_divergence": True,
                  "eval_strategy": "vmap", "test_at": "every_evaluation",
                  "batch_grad_strategy": "vmap", "per_sample_strategy": "vmap"}


class ConfigError(ValueError):
    """An invalid or unknown configuration field."""


# YAML 1.1 (PyYAML) reads ``1e-3`` and ``1.0e3`` as strings, so ``--set lr=1e-3`` would be
# rejected as "not a number"; YAML 1.2 reads them as floats, and so do these.
_EXPONENT_FLOAT = re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$")


class _Loader(yaml.SafeLoader):
    """Safe YAML that reads exponent floats and rejects a key given twice in one mapping."""

    def construct_mapping(self, node, deep=False):
        # PyYAML keeps the last of two equal keys without a word; in a config the first is
        # then silently ignored, which is never what was meant.
        seen = set()
        for key_node, _ in node.value:
            if isinstance(key_node, yaml.ScalarNode) and key_node.tag != "tag:yaml.org,2002:merge":
                key = self.construct_object(key_node)
                if key in seen:
                    raise yaml.constructor.ConstructorError(
                        "while constructing a mapping", node.start_mark,
                        f"found the key {key!r} twice; give each field once", key_node.start_mark)
                seen.add(key)
        return super().construct_mapping(node, deep=deep)


class _Dumper(yaml.SafeDumper):
    """Safe YAML whose strings that :class:`_Loader` would read as floats are quoted."""


for _cls in (_Loader, _Dumper):
    _cls.add_implicit_resolver("tag:yaml.org,2002:float", _EXPONENT_FLOAT, list("-+0123456789."))


def _load_yaml(text: str, what: str) -> Any:
    """Parse ``text`` with :class:`_Loader`; a syntax error becomes a :class:`ConfigError`."""
    try:
        return yaml.load(text, Loader=_Loader)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{what} is not valid YAML: {exc}") from None


def _describe_type(hint) -> str:
    """``float | None`` → ``a finite number or null`` (for error messages)."""
    if get_origin(hint) in (Union, types.UnionType):
        return " or ".join(_describe_type(a) for a in get_args(hint))
    names = {float: "a finite number", int: "an integer", str: "a string", bool: "true or false", type(None): "null"}
    return names.get(hint, getattr(hint, "__name__", str(hint)))


def _has_type(value, hint) -> bool:
    """Whether ``value`` fits the annotation ``hint`` (bools are not numbers here)."""
    if get_origin(hint) in (Union, types.UnionType):
        return any(_has_type(value, a) for a in get_args(hint))
    if hint is type(None):
        return value is None
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool) and _finite(value)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint in (str, bool):
        return isinstance(value, hint)
    return True  # other annotations are left to the Params' own checks


def _finite(value) -> bool:
    # math.isfinite would overflow on a huge int; an int is always finite.
    return not isinstance(value, float) or math.isfinite(value)


def _check_algo_options(algorithm: str, options: dict) -> None:
    """Names and types of ``options`` against the algorithm's ``Params`` annotations.

    The Params dataclasses check ranges, but a value of the wrong type (``alpha: abc``)
    would reach them as a bare comparison ``TypeError`` that names no field.
    """
    from ..sim.algorithms import get_algorithm

    params = get_algorithm(algorithm).Params
    annotations = get_type_hints(params)
    hints = {f.name: annotations[f.name] for f in fields(params)}
    allowed = sorted(hints)
    for name, value in options.items():
        if not isinstance(name, str) or name not in hints:
            raise ConfigError(f"algo: unknown option {name!r} for algorithm {algorithm!r}; allowed options: {allowed}")
        if not _has_type(value, hints[name]):
            raise ConfigError(f"algo.{name}={value!r} must be {_describe_type(hints[name])} (algorithm {algorithm!r})")


def _algorithms() -> tuple[str, ...]:
    from ..sim.algorithms import known_algorithms

    return tuple(sorted(known_algorithms()))


def _sigma_rules() -> tuple[str, ...]:
    from ..sim.privacy import SIGMA_RULES
    from ..sim.registry import load_plugins

    load_plugins()
    return tuple(sorted(SIGMA_RULES))


_choices_saved = False


def registry_choices() -> dict[str, list]:
    """The allowed values of every named field, from the registries (the papers loaded);
    also written to :mod:`~dpdl_core.runs.namecache` for the command line's early check."""
    global _choices_saved
    from ..sim.data import PARTITION_SCHEMES, datasets
    from ..sim.models import MODELS
    from ..sim.schedules import SCHEDULES
    from ..sim.topology import MIXINGS, topologies

    choices = {"dataset": list(datasets()), "model": sorted(MODELS) + ["auto"], "algorithm": list(_algorithms()),
               "topology": list(topologies()), "partition": list(PARTITION_SCHEMES),
               "sigma_rule": list(_sigma_rules()), "schedule": sorted(SCHEDULES), "mixing": list(MIXINGS)}
    if not _choices_saved:
        from . import namecache

        namecache.save(choices)
        _choices_saved = True
    return choices


def _check_float(c, name, low, high, inclusive_low=False, hint="") -> None:
    value = getattr(c, name)
    ok = _has_type(value, float)
    ok = ok and (value >= low if inclusive_low else value > low) and (high is None or value <= high)
    if not ok:
        rng = f">= {low}" if inclusive_low else f"> {low}"
        rng += f" and <= {high}" if high is not None else ""
        raise ConfigError(f"{name}={value!r} must be a finite number {rng}{hint}")


def _check_values(c) -> None:
    """The checks of ``c`` (a config, or any object with its fields) that need no registry:
    the fixed choices, integers, numbers and the shape of ``algo``."""
    check_choice(c, "device", DEVICES, error=ConfigError)
    check_choice(c, "init", INITS, error=ConfigError)
    check_choice(c, "eval_strategy", EVAL_STRATEGIES, error=ConfigError)
    check_choice(c, "test_at", TEST_AT, error=ConfigError)
    check_choice(c, "batch_grad_strategy", BATCH_GRAD_STRATEGIES, error=ConfigError)
    check_choice(c, "per_sample_strategy", PER_SAMPLE_STRATEGIES, error=ConfigError)
    for name in ("compile", "stop_on_divergence"):
        if not isinstance(getattr(c, name), bool):
            raise ConfigError(f"{name}={getattr(c, name)!r} is not allowed; allowed values: [False, True] "
                              "(YAML: false, true)")
    for name in ("n_agents", "rounds", "batch_size", "eval_every"):
        check_int(c, name, minimum=1, error=ConfigError)
    check_int(c, "seed", minimum=0, error=ConfigError)
    check_int(c, "checkpoint_every", minimum=0, error=ConfigError)
    check_int(c, "lr_decay_every", minimum=0, error=ConfigError)
    _check_float(c, "lr_decay", 0, 1)
    for name in ("eval_samples", "train_samples", "validation_samples"):
        check_int(c, name, minimum=1, optional=True, error=ConfigError)
    for name, lo, hi in (("alpha_d", 0, None), ("lr", 0, None), ("clip", 0, None), ("delta", 0, 1)):
        _check_float(c, name, lo, hi)
    _check_float(c, "momentum", 0, 1, inclusive_low=True)
    if c.epsilon is not None:
        _check_float(c, "epsilon", 0, None, hint=", or null for a non-private run")
    if not isinstance(c.algo, dict):
        raise ConfigError(f"algo must be a mapping of algorithm options, got {type(c.algo).__name__}")


def _check_names(c, choices: dict[str, list]) -> None:
    """Each named field of ``c`` against ``choices`` (:func:`registry_choices`)."""
    for name, allowed in choices.items():
        if not (name == "model" and c.model == "auto"):
            check_choice(c, name, allowed, error=ConfigError)


@dataclass(frozen=True)
class ExperimentConfig:
    """One decentralized training run.

    Attributes
    ----------
    dataset : str
        A registered dataset (:func:`dpdl_core.sim.data.datasets`: ``mnist``, ``cifar10`` and the papers').
    model : str
        A name from :data:`dpdl_core.sim.models.MODELS`, or ``"auto"`` for the model registered
        as the dataset's default (``lenet`` / ``dpdl_cnn``).
    algorithm : str
        A name from :data:`dpdl_core.sim.algorithms.ALGORITHMS`.
    algo : dict
        Options of the algorithm (its ``Params`` dataclass), defaults filled in.
    topology : str
        A registered topology (:func:`dpdl_core.sim.topology.topologies`: ``fully_connected``,
        ``bipartite``, ``ring`` and the papers').
    schedule : str
        Who talks to whom in round t (:mod:`dpdl_core.sim.schedules`): ``static`` uses the
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
        How σ is derived from (ε, δ), a name from :data:`dpdl_core.sim.privacy.SIGMA_RULES`
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
    init : {"shared", "per_agent"}
        x_0: one model drawn from ``seed`` and copied to every agent, or agent i's own
        random model (seeded by ``seed`` and i), as the DPDL authors' code has it.
    mixing : {"metropolis", "random_sinkhorn"}
        The weights of W: Metropolis-Hastings (the papers'), or every agent's row from its
        own random Sinkhorn matrix drawn from ``seed`` (the DPDL authors' code; row
        stochastic only).
    compile : bool
        Compile the engine's per-sample kernel with ``torch.compile`` (faster on long runs,
        about a minute of compilation first; results equal the eager kernel's to float
        rounding, not bit for bit — see :class:`dpdl_core.sim.engine.Engine`).
    stop_on_divergence : bool
        Stop a run once its mean training loss passes
        :data:`~dpdl_core.runs.runner.EXPLOSION_FACTOR` times its first round's (stored with
        ``meta.diverged``). ``False`` runs on to the last round, so that its final accuracy
        is measured; ``meta.diverged`` and ``meta.diverged_at`` still say that and when. A
        loss or model that is not finite stops every run.
    eval_strategy : {"vmap", "per_model"}
        How the test and validation sets are pushed through the M models: all at once
        under ``vmap``, or one model at a time with channels-last convolutions (several
        times faster for conv nets on CPU; losses equal to float summation order, so it
        is hashed; see :class:`dpdl_core.sim.engine.Engine`). Default ``per_model``, the
        faster or equal in every case measured (``docs/benchmarks.md``); a stored run that
        does not record the field ran ``vmap`` (:meth:`from_stored`).
    test_at : {"every_evaluation", "best_validation"}
        Which evaluations measure the test set. ``best_validation`` (needs
        ``validation_samples``): only those whose mean validation accuracy over the agents
        reaches the best so far (ties included), and the last round, which is all that
        early stopping on validation accuracy reads (LEASGD's Table 1); the validation set
        is measured at every evaluation either way.
    batch_grad_strategy : {"vmap", "per_model"}
        How whole-batch gradients (no per-sample work: PDSL's batch clipping, DP-CGA's
        ``clip: batch``) of the models sharing a batch are computed: ``vmap`` over the
        models, or one model at a time with channels-last convolutions (several times faster
        for conv nets on CPU; gradients equal to float summation order, so it is hashed; see
        :meth:`dpdl_core.sim.engine.Engine.batch_gradients`). Per-sample clipping never uses it.
    per_sample_strategy : {"auto", "vmap", "per_model", "bookkeeping"}
        How per-sample clipped gradient sums are computed: ``vmap`` of ``grad`` over the
        samples and the models sharing a batch; one model at a time from one forward and
        backward pass (:mod:`dpdl_core.sim.per_sample`; ``nn.Sequential`` conv nets of plain
        Conv2d and Linear layers); or every model that reads a batch in one pass, the
        per-unit norms book-kept from that pass (:mod:`dpdl_core.sim.bookkeeping`; the
        ``nn.Sequential`` nets of the four papers, Dropout included, and the only kernel
        for a model with dropout). Speeds: ``docs/benchmarks.md``. Sums equal to float
        summation order, so it is hashed. ``auto`` (the default) is replaced, when the
        config is made, by the kernel :func:`per_sample_rule` picks for the model (the
        book-keeping kernel for every model of the four papers); a stored run that does
        not record the field ran ``vmap`` (:meth:`from_stored`).
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
    compile: bool = False
    init: str = "shared"
    mixing: str = "metropolis"
    stop_on_divergence: bool = True
    eval_strategy: str = "per_model"
    test_at: str = "every_evaluation"
    batch_grad_strategy: str = "vmap"
    per_sample_strategy: str = AUTO

    def __post_init__(self):
        _check_values(self)  # first: a bad number answers before the registries (torch) load
        _check_names(self, registry_choices())
        if self.test_at == "best_validation" and self.validation_samples is None:
            raise ConfigError("test_at='best_validation' picks the test evaluations by validation accuracy, but "
                              "validation_samples is null; allowed: a number of validation_samples, or "
                              "test_at='every_evaluation'")
        if self.sigma_rule == "fixed":
            if not (_has_type(self.sigma, float) and self.sigma >= 0):
                raise ConfigError(f"sigma must be a finite number >= 0 when sigma_rule='fixed', got {self.sigma!r}")
        elif self.sigma is not None:
            raise ConfigError(f"sigma is only used with sigma_rule='fixed' (sigma_rule={self.sigma_rule!r})")
        self._check_sizes()
        _check_algo_options(self.algorithm, self.algo)
        from ..sim.algorithms import resolve_params

        try:
            resolved = resolve_params(self.algorithm, self.algo)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"algo: {exc}") from None
        object.__setattr__(self, "algo", resolved)
        if self.model == "auto":
            from ..sim.models import default_model

            object.__setattr__(self, "model", default_model(self.dataset))
        if self.per_sample_strategy == AUTO:
            object.__setattr__(self, "per_sample_strategy", per_sample_rule(self.model, self.dataset))

    def _check_sizes(self) -> None:
        """Sizes that the data and the graph fix before any run: the graph's smallest N, at
        least one training sample per agent, and a validation set that leaves test images."""
        from ..sim.data import DATASETS
        from ..sim.topology import MIN_AGENTS, check_n_agents

        check_n_agents(self.topology, self.n_agents, error=ConfigError)
        if self.schedule == "random_ring" and self.n_agents < MIN_AGENTS["ring"]:
            # random_ring draws a fresh ring over the agents every round.
            raise ConfigError(f"n_agents={self.n_agents} is too small for schedule='random_ring'; "
                              f"allowed: n_agents >= {MIN_AGENTS['ring']}, or schedule='static'")
        spec = DATASETS[self.dataset]
        available = spec.full_train if self.train_samples is None else min(self.train_samples, spec.full_train)
        if self.n_agents > available:
            what = f"train_samples={self.train_samples}" if self.train_samples is not None else \
                f"the {spec.full_train} training images of {spec.pretty}"
            raise ConfigError(f"n_agents={self.n_agents} is more than {what}: every agent needs a sample; "
                              f"allowed: n_agents <= {available}, or more train_samples (null: all)")
        if self.validation_samples is not None and self.validation_samples >= spec.full_test:
            raise ConfigError(f"validation_samples={self.validation_samples} must be < {spec.full_test}, the test "
                              f"images of {spec.pretty}, so that some are left to evaluate on "
                              "(null: no validation set)")

    # -- conversions ----------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Plain dict of every field (JSON/YAML safe)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ExperimentConfig:
        """Build from a mapping; unknown keys raise :class:`ConfigError` listing the known."""
        _check_known(d)
        return cls(**d)

    @classmethod
    def from_stored(cls, d: Mapping[str, Any]) -> ExperimentConfig:
        """The config of a stored run (or a pinned case) from the fields it records.

        A field it lacks was added after it was stored, so it ran at the value that keeps
        such runs' hashes (``_HASHED_UNLESS``), which need not be today's default (new runs
        default to the faster strategies); :meth:`from_dict` would read the default.
        """
        _check_known(d)
        return cls(**{**{k: v for k, v in _HASHED_UNLESS.items() if k not in d}, **d})

    def to_yaml(self, path: str | Path | None = None) -> str:
        text = yaml.dump(self.to_dict(), Dumper=_Dumper, sort_keys=False)
        if path is not None:
            Path(path).write_text(text)
        return text

    @classmethod
    def from_yaml(cls, path: str | Path) -> ExperimentConfig:
        """From a YAML file."""
        return cls.from_dict(_read_yaml_file(path))

    @classmethod
    def from_yaml_text(cls, text: str, source: str = "the config") -> ExperimentConfig:
        """From YAML text (a mapping of field: value); ``source`` names it in errors."""
        return cls.from_dict(_yaml_mapping(text, source))

    def with_overrides(self, overrides: list[str] | dict[str, Any]) -> ExperimentConfig:
        """Apply ``key=value`` strings (``algo.alpha=2`` for algorithm options) or a dict."""
        return apply_overrides(self, overrides)

    def replace(self, **changes) -> ExperimentConfig:
        """A copy with ``changes``; a per-sample kernel the rule picked is picked again for a
        new model or dataset (:func:`per_sample_rule`), one set explicitly is kept."""
        return replace(self, **_follow_rule(self.to_dict(), changes))

    # -- identity -------------------------------------------------------------------------
    def canonical_json(self) -> str:
        """Canonical JSON of the hashed fields plus the package version."""
        d = {k: v for k, v in self.to_dict().items() if k not in _UNHASHED}
        d = {k: v for k, v in d.items() if k not in _HASHED_UNLESS or v != _HASHED_UNLESS[k]}
        from ..sim.algorithms import get_algorithm

        # Likewise for the algorithm's options added after its runs were stored.
        later = get_algorithm(self.algorithm).hashed_unless
        d["algo"] = {k: v for k, v in d["algo"].items() if k not in later or v != later[k]}
        return json.dumps({"config": d, "version": __version__}, sort_keys=True, separators=(",", ":"))

    @property
    def hash(self) -> str:
        """Stable 16-hex-digit content hash identifying the run."""
        return hashlib.sha256(self.canonical_json().encode()).hexdigest()[:16]


def _field_names() -> list[str]:
    return sorted(f.name for f in fields(ExperimentConfig))


def _check_known(d) -> None:
    """``d`` is a mapping of known field names, else a :class:`ConfigError` listing them."""
    known = _field_names()
    if not isinstance(d, Mapping):
        raise ConfigError(f"a config must be a mapping of field: value, got {type(d).__name__} {d!r:.60}; "
                          f"allowed fields: {known}")
    unknown = sorted(set(d) - set(known), key=str)  # keys of mixed types do not compare
    if unknown:
        raise ConfigError(f"unknown config field(s) {unknown}; allowed fields: {known}")


def _yaml_mapping(text: str, source: str) -> dict:
    data = _load_yaml(text, source)
    if data is None:
        raise ConfigError(f"{source} is empty; it must be a YAML mapping of field: value (e.g. 'epsilon: 0.5'), "
                          f"allowed fields: {_field_names()}")
    if not isinstance(data, dict):
        raise ConfigError(f"{source} must be a YAML mapping of field: value, got {type(data).__name__} "
                          f"{data!r:.60}; allowed fields: {_field_names()}")
    return data


def _read_yaml_file(path: str | Path) -> dict:
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"config file {path} does not exist; pass the path of a YAML file of field: value "
                          "(`python -m dpdl_core run --print-config > my.yaml` writes the defaults to start from)")
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"config file {path} cannot be read as text: {exc}") from None
    return _yaml_mapping(text, f"config file {path}")


def _parse_override(s) -> tuple[str, Any]:
    """``"key=value"`` → ``(key, value)``, the value read as a YAML scalar."""
    if not isinstance(s, str) or "=" not in s:
        raise ConfigError(f"override {s!r} must look like key=value (e.g. epsilon=0.5)")
    k, v = s.split("=", 1)
    k = k.strip()
    if not k:
        raise ConfigError(f"override {s!r} has no key; it must look like key=value, allowed keys: {_field_names()} "
                          "or algo.OPTION")
    if not v.strip():  # YAML reads an empty value as null: `--set epsilon=$UNSET` would turn DP off
        raise ConfigError(f"override {s!r} has no value; it must have one (e.g. {k}=0.5), or {k}=null where the "
                          "field allows no value")
    return k, _load_yaml(v, f"override {s!r}: the value of {k}")


def precheck(config_file: str | Path | None, overrides: list[str]) -> None:
    """Check the config that a YAML file (or the defaults) plus ``key=value`` overrides make,
    as far as that needs no registry: unknown fields, bad numbers, and — from
    :mod:`~dpdl_core.runs.namecache`, where the registries' names are cached — unknown names. The
    command line calls it first, so that a typo answers before torch loads (seconds); the
    full check runs when the config is built.

    Raises
    ------
    ConfigError
        The same error, word for word, that building the config would raise first.
    """
    from . import namecache

    d = _read_yaml_file(config_file) if config_file else {}
    _check_known(d)
    known = _field_names()
    unknown = sorted({k for k, _ in map(_parse_override, overrides) if k not in known and not k.startswith("algo.")})
    if unknown:
        raise ConfigError(f"unknown config field(s) {unknown}; allowed fields: {known}")
    defaults = {f.name: f.default_factory() if f.default is MISSING else f.default for f in fields(ExperimentConfig)}
    choices = namecache.load()

    def check(values: dict) -> None:
        c = types.SimpleNamespace(**values)
        _check_values(c)
        if choices is not None:
            _check_names(c, choices)

    start = {**defaults, **d}
    check(start)  # as `run` builds it: the file's config first,
    check(_merged(start, overrides))  # then the overrides applied to it


def apply_overrides(cfg: ExperimentConfig, overrides: list[str] | dict[str, Any]) -> ExperimentConfig:
    """Return ``cfg`` with overrides applied.

    Parameters
    ----------
    overrides : list of "key=value" or dict
        Values are parsed as YAML scalars (``0.5``, ``1e-3``, ``null``, ``true``);
        ``algo.NAME`` sets an algorithm option and ``algo`` (a mapping) replaces them all.
        A key may be given once; the result does not depend on the order.

    Raises
    ------
    ConfigError
        Naming the bad override or field and what is allowed.
    """
    merged = _merged(cfg.to_dict(), overrides)
    named = overrides.keys() if isinstance(overrides, Mapping) else (str(o).split("=", 1)[0].strip() for o in overrides)
    changes = {k: merged[k] for k in named if k in merged}
    return ExperimentConfig.from_dict({**merged, **_follow_rule(cfg.to_dict(), changes)})


@functools.lru_cache(maxsize=None)
def per_sample_rule(model: str, dataset: str) -> str:
    """The per-sample kernel that ``per_sample_strategy: auto`` picks for ``model`` on ``dataset``.

    The book-keeping kernel wherever it can run the model: it is the fastest private kernel
    in every case measured (every model of the four papers, per-sample and micro-batch, B
    from 16 to 256; ``docs/benchmarks.md``, "The book-keeping kernel"); else ``vmap``, with
    a warning naming why. The rule reads the model, not the machine, so a config's hash does
    not depend on where it is made.
    """
    from ..sim.bookkeeping import unsupported_reason
    from ..sim.models import build_model

    reason = unsupported_reason(build_model(model, dataset, seed=0))
    if reason is None:
        return "bookkeeping"
    warnings.warn(f"per_sample_strategy: auto runs model {model!r} with the vmap kernel: the book-keeping kernel "
                  f"cannot run it ({reason})", stacklevel=2)
    return "vmap"


def _follow_rule(current: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """``changes`` to the config ``current``, with ``per_sample_strategy: auto`` added when
    they change the model or dataset, leave the kernel alone, and the kernel is the one
    :func:`per_sample_rule` picked for the old model."""
    if ({"model", "dataset"} & changes.keys() and "per_sample_strategy" not in changes
            and current["per_sample_strategy"] == per_sample_rule(current["model"], current["dataset"])):
        return {**changes, "per_sample_strategy": AUTO}
    return changes


def _merged(d: dict[str, Any], overrides: list[str] | dict[str, Any]) -> dict[str, Any]:
    """The field values ``d`` with ``overrides`` applied (see :func:`apply_overrides`)."""
    if isinstance(overrides, Mapping):
        items = list(overrides.items())
    elif isinstance(overrides, (str, bytes)) or not hasattr(overrides, "__iter__"):
        # A lone string would otherwise be split into one-character overrides.
        raise ConfigError(f"overrides must be a list of 'key=value' strings or a mapping, got {overrides!r:.60}")
    else:
        items = [_parse_override(s) for s in overrides]
    seen: dict[str, Any] = {}
    for k, v in items:
        if not isinstance(k, str):
            raise ConfigError(f"override key {k!r} must be a field name; allowed: {_field_names()} or algo.OPTION")
        if k in seen:
            raise ConfigError(f"{k} is set twice ({k}={seen[k]!r}, then {k}={v!r}); give each field once")
        seen[k] = v
    d = dict(d)
    algorithm = seen.get("algorithm", d["algorithm"])
    # Options of another algorithm do not carry over, whatever order the overrides came in.
    algo = dict(d["algo"]) if algorithm == d["algorithm"] else {}
    if "algo" in seen:
        if not isinstance(seen["algo"], Mapping):
            raise ConfigError(f"algo={seen['algo']!r} must be a mapping of algorithm options; "
                              "set one option with algo.NAME=VALUE")
        algo = dict(seen.pop("algo"))
    for k, v in seen.items():
        if k.startswith("algo."):
            algo[k[5:]] = v
        else:
            d[k] = v
    d["algo"] = algo
    return d
