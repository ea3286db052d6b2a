"""Property-based tests of the experiment config: every bad input is a clear ConfigError.

Properties, over generated inputs (``hypothesis``, derandomized so CI sees the same cases):

* a valid config survives every route in and out unchanged (dict, YAML, ``--set``
  strings, ``run --print-config``), hash included;
* every rejection, by any route (``from_dict``, ``from_yaml_text``, ``with_overrides``,
  ``python -m dpdl_core run``), is a :class:`ConfigError` whose message names the field and
  what is allowed; no ``TypeError``, ``KeyError``, ``AttributeError`` or YAML error escapes,
  and the command line answers ``error: ...`` with exit status 2.

Each generated case adds one to the "config fuzz cases tried" counter printed in the
pytest summary (``tests/guarantees.py``).
"""
import ast
import contextlib
import io
import json
import math
import os
import re
import subprocess
import sys
from dataclasses import fields
from pathlib import Path
from typing import get_args, get_type_hints

import pytest
import yaml
from guarantees import record
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from dpdl_core.cli import main
from dpdl_core.runs import namecache
from dpdl_core.runs.config import ConfigError, ExperimentConfig, precheck, registry_choices
from dpdl_core.sim.algorithms import known_algorithms
from dpdl_core.sim.data import DATASETS, PARTITION_SCHEMES
from dpdl_core.sim.models import MODELS
from dpdl_core.sim.privacy import SIGMA_RULES
from dpdl_core.sim.schedules import SCHEDULES
from dpdl_core.sim.topology import MIN_AGENTS, TOPOLOGIES

ROOT = Path(__file__).resolve().parents[1]
CASES = "config fuzz cases tried"
FIELDS = sorted(f.name for f in fields(ExperimentConfig))
ALGORITHMS = sorted(known_algorithms())
SIGMA_RULE_NAMES = sorted(SIGMA_RULES)  # filled in by known_algorithms() (it loads the papers)

# Derandomized and database-free: every run tries the same cases. No deadline, as the
# machine is shared and a slow example is not a failure.
FUZZ = settings(max_examples=100, derandomize=True, database=None, deadline=None,
                suppress_health_check=[HealthCheck.too_slow])

CHOICES = {
    "dataset": sorted(DATASETS),
    "model": sorted(MODELS) + ["auto"],
    "algorithm": ALGORITHMS,
    "topology": list(TOPOLOGIES),
    "schedule": sorted(SCHEDULES),
    "partition": list(PARTITION_SCHEMES),
    "sigma_rule": SIGMA_RULE_NAMES,
    "device": ["cpu", "cuda", "auto"],
    "compile": [False, True],
    "init": ["shared", "per_agent"],
    "mixing": ["metropolis", "random_sinkhorn"],
    "stop_on_divergence": [False, True],
    "test_at": ["every_evaluation", "best_validation"],
    "eval_strategy": ["vmap", "per_model"],
    "batch_grad_strategy": ["vmap", "per_model"],
    "per_sample_strategy": ["vmap", "per_model"],
}
# field: (minimum, may be null)
INTS = {"n_agents": (1, False), "rounds": (1, False), "batch_size": (1, False), "eval_every": (1, False),
        "seed": (0, False), "checkpoint_every": (0, False), "lr_decay_every": (0, False),
        "eval_samples": (1, True), "train_samples": (1, True), "validation_samples": (1, True)}
# field: (low, low included, high or None, range as the message states it, may be null)
FLOATS = {"alpha_d": (0, False, None, "> 0", False), "lr": (0, False, None, "> 0", False),
          "clip": (0, False, None, "> 0", False), "delta": (0, False, 1, "> 0 and <= 1", False),
          "momentum": (0, True, 1, ">= 0 and <= 1", False), "lr_decay": (0, False, 1, "> 0 and <= 1", False),
          "epsilon": (0, False, None, "> 0", True)}
assert set(CHOICES) | set(INTS) | set(FLOATS) | {"algo", "sigma"} == set(FIELDS), "a new field needs a fuzz rule"


def clear_error(exc: BaseException, *names: str) -> str:
    """The message of ``exc``, checked: a ConfigError naming every one of ``names`` and saying
    what is allowed."""
    assert type(exc) is ConfigError, f"{type(exc).__name__} escaped: {exc}"
    msg = str(exc)
    for name in names:
        assert name in msg, f"{name!r} not named in: {msg}"
    assert re.search(r"allowed|must|expected|give each|only used|not valid YAML", msg), msg
    return msg


def rejects(build, *names: str) -> str:
    """Run ``build``; it must raise a clear ConfigError naming ``names``."""
    try:
        build()
    except Exception as exc:  # noqa: BLE001 - the point is which type it is
        return clear_error(exc, *names)
    raise AssertionError(f"accepted, but should name {names}")


def accepts_or_rejects_clearly(build):
    """Run ``build``; a config or a clear ConfigError, never another exception."""
    try:
        return build()
    except Exception as exc:  # noqa: BLE001
        clear_error(exc)
        return None


def set_value(v) -> str:
    """``v`` written so that ``--set key=<text>`` reads it back (JSON is YAML, but YAML
    spells the non-finite floats .inf and .nan)."""
    if isinstance(v, float) and not math.isfinite(v):
        return ".nan" if math.isnan(v) else (".inf" if v > 0 else "-.inf")
    return json.dumps(v)


def cli(*argv: str) -> tuple[int, str, str]:
    """``python -m dpdl_core`` in-process: (exit status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


# -- strategies -----------------------------------------------------------------------------
finite = dict(allow_nan=False, allow_infinity=False)
positive = st.one_of(st.floats(min_value=0, exclude_min=True, max_value=1e6, **finite), st.integers(1, 1000))
unit_open_low = st.floats(min_value=0, exclude_min=True, max_value=1, **finite)
junk = st.one_of(st.text(max_size=8), st.booleans(), st.lists(st.integers(), max_size=2),
                 st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))


def option_types(params) -> dict[str, set]:
    """Each option of a Params dataclass and the types its annotation allows
    (``float | None`` → ``{float, NoneType}``)."""
    hints = get_type_hints(params)
    return {f.name: set(get_args(hints[f.name]) or [hints[f.name]]) for f in fields(params)}


def _allowed_strings(params, name: str) -> list[str]:
    """The values a string option accepts, read off the Params' own error message (which
    must list them: that is part of what is tested)."""
    try:
        params(**{name: "\0not-an-option"})
    except ValueError as exc:
        return ast.literal_eval(re.search(r"allowed values: (\[.*?\])", str(exc)).group(1))
    raise AssertionError(f"{params.__name__}.{name} accepted a nonsense string")


@st.composite
def algo_options(draw, algorithm: str) -> dict:
    """Valid options of ``algorithm``: a random subset of its Params fields, values in the
    ranges every algorithm documents (numbers in (0, 1], integers 1..8)."""
    params = known_algorithms()[algorithm].Params
    out = {}
    for name, types in option_types(params).items():
        if not draw(st.booleans()):
            continue
        if str in types:
            value = st.sampled_from(_allowed_strings(params, name))
        elif float in types:
            value = st.one_of(unit_open_low, st.just(1))
        else:
            value = st.integers(1, 8)
        out[name] = draw(st.one_of(st.none(), value) if type(None) in types else value)
    try:
        params(**out)
    except ValueError:
        assume(False)  # a combination the algorithm rules out (e.g. DP-CGA's noise without clip=batch)
    return out


@st.composite
def valid_dicts(draw) -> dict:
    """Every field of a valid config, cross-field rules included."""
    d = {name: draw(st.sampled_from(allowed)) for name, allowed in CHOICES.items()}
    d["algo"] = draw(algo_options(d["algorithm"]))
    low = MIN_AGENTS[d["topology"]]
    if d["schedule"] == "random_ring":
        low = max(low, MIN_AGENTS["ring"])
    d["n_agents"] = draw(st.integers(low, 64))
    spec = DATASETS[d["dataset"]]
    d.update(
        alpha_d=draw(positive), lr=draw(positive), clip=draw(positive), delta=draw(unit_open_low),
        momentum=draw(st.floats(0, 1, **finite)), lr_decay=draw(unit_open_low),
        epsilon=draw(st.one_of(st.none(), positive)),
        sigma=draw(st.floats(0, 100, **finite)) if d["sigma_rule"] == "fixed" else None,
        rounds=draw(st.integers(1, 10**6)), batch_size=draw(st.integers(1, 4096)), eval_every=draw(st.integers(1, 100)),
        seed=draw(st.integers(0, 2**63)), checkpoint_every=draw(st.integers(0, 100)),
        lr_decay_every=draw(st.integers(0, 100)),
        eval_samples=draw(st.one_of(st.none(), st.integers(1, 10**5))),
        train_samples=draw(st.one_of(st.none(), st.integers(d["n_agents"], 10**6))),
        validation_samples=draw(st.one_of(st.none(), st.integers(1, spec.full_test - 1))),
    )
    if d["test_at"] == "best_validation" and d["validation_samples"] is None:
        d["validation_samples"] = draw(st.integers(1, spec.full_test - 1))  # it picks the tests by validation
    return d


def bad_values(name: str):
    """Values that ``name`` must reject, with the words its message must contain."""
    if name in CHOICES:
        allowed = CHOICES[name]
        values = st.one_of(junk, st.integers(), st.floats(), st.none()).filter(lambda v: v not in allowed)
        return st.tuples(values, st.just([repr(a) for a in allowed]))
    if name in INTS:
        minimum, optional = INTS[name]
        values = st.one_of(st.integers(max_value=minimum - 1), st.floats(), junk)
        if not optional:
            values = st.one_of(values, st.none())
        return st.tuples(values, st.just([f"integer >= {minimum}"]))
    low, inclusive, high, text, optional = FLOATS[name]
    below = st.floats(max_value=low).filter(lambda v: not (v >= low if inclusive else v > low))  # -0.0 >= 0
    values = st.one_of(below, st.sampled_from([math.nan, math.inf, -math.inf]), junk)
    if high is not None:
        values = st.one_of(values, st.floats(min_value=high, exclude_min=True))
    if not optional:
        values = st.one_of(values, st.none())
    return st.tuples(values, st.just([text]))


@st.composite
def one_bad_field(draw):
    """A valid config dict with one field set to a value it must reject."""
    d = draw(valid_dicts())
    name = draw(st.sampled_from(sorted(set(CHOICES) | set(INTS) | set(FLOATS))))
    value, words = draw(bad_values(name))
    d[name] = value
    return d, name, words


# -- valid configs ---------------------------------------------------------------------------
@FUZZ
@given(valid_dicts(), st.randoms(use_true_random=False))
def test_valid_configs_round_trip_dict_yaml_and_overrides(d, rng):
    record(CASES)
    cfg = ExperimentConfig.from_dict(d)
    assert ExperimentConfig.from_dict(cfg.to_dict()) == cfg
    again = ExperimentConfig.from_yaml_text(cfg.to_yaml())
    assert again == cfg and again.hash == cfg.hash
    assert json.loads(again.canonical_json()) == json.loads(cfg.canonical_json())
    # The same config as --set strings over the defaults, in a shuffled order.
    sets = as_sets(cfg.to_dict())
    rng.shuffle(sets)
    via_set = ExperimentConfig().with_overrides(sets)
    assert via_set == cfg and via_set.hash == cfg.hash


@settings(FUZZ, max_examples=40)
@given(valid_dicts())
def test_cli_print_config_round_trips(d):
    record(CASES)
    cfg = ExperimentConfig.from_dict(d)
    argv = ["run", "--print-config"]
    for k, v in d.items():
        if k == "algo":
            argv += [f"--set=algo.{option}={set_value(value)}" for option, value in v.items()]
        else:
            argv.append(f"--set={k}={set_value(v)}")
    code, out, err = cli(*argv)
    assert (code, err) == (0, "")
    assert ExperimentConfig.from_yaml_text(out).hash == cfg.hash


# -- one bad field, by every route ---------------------------------------------------------
@FUZZ
@given(one_bad_field())
def test_a_bad_field_is_named_with_what_is_allowed(case):
    record(CASES)
    d, name, words = case
    msg = rejects(lambda: ExperimentConfig.from_dict(d), name)
    assert all(w in msg for w in words), (words, msg)
    rejects(lambda: ExperimentConfig.from_yaml_text(yaml.safe_dump(d, sort_keys=False)), name)
    rejects(lambda: ExperimentConfig().with_overrides({name: d[name]}), name)
    rejects(lambda: ExperimentConfig().with_overrides([f"{name}={set_value(d[name])}"]), name)


def as_sets(d: dict) -> list[str]:
    """``d`` as ``--set`` strings (``algo.OPTION=`` for the algorithm's options)."""
    sets = [f"{k}={set_value(v)}" for k, v in d.items() if k != "algo"]
    return sets + [f"algo.{k}={set_value(v)}" for k, v in d.get("algo", {}).items()]


@FUZZ
@given(one_bad_field(), st.booleans())
def test_the_check_before_torch_loads_says_what_building_the_config_says(tmp_path_factory, case, from_file):
    """:func:`precheck` (the command line's first look, no registry imported) raises the very
    message that building the config raises, for a bad field in a YAML file or a --set."""
    record(CASES)
    namecache.save(registry_choices())  # the name cache that precheck reads
    if namecache.load() is None:
        pytest.skip("the name cache folder cannot be written here")
    d, name, _ = case
    if from_file:
        path = tmp_path_factory.mktemp("cfg") / "bad.yaml"
        path.write_text(yaml.safe_dump(d, sort_keys=False))
        full = rejects(lambda: ExperimentConfig.from_yaml(path), name)
        early = rejects(lambda: precheck(path, []), name)
    else:
        full = rejects(lambda: ExperimentConfig().with_overrides(as_sets(d)), name)
        early = rejects(lambda: precheck(None, as_sets(d)), name)
    assert early == full


def test_a_bad_value_is_rejected_before_torch_loads(tmp_path):
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path), "DPDL_PROGRESS": "0"}
    code = ("import sys; from dpdl_core.cli import main\n"
            "code = main(['run', '--set', sys.argv[1]])\n"
            "print(code, sorted(m for m in ('torch', 'pandas', 'numpy') if m in sys.modules))")

    def run(override: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-c", code, override], capture_output=True, text=True, cwd=ROOT,
                              env=env)

    for override, words in (("rounds=-1", "rounds=-1 must be an integer >= 1"), ("lr=abc", "lr='abc' must be")):
        proc = run(override)
        assert proc.stdout.strip() == "2 []" and words in proc.stderr, (proc.stdout, proc.stderr)
    # A name needs the registries once; then the cache answers (and a changed source tree
    # makes a new cache key, see namecache).
    first, again = run("algorithm=dpdll"), run("algorithm=dpdll")
    assert first.stdout.strip().startswith("2 [") and "'torch'" in first.stdout, first.stdout
    assert again.stdout.strip() == "2 []", (again.stdout, again.stderr)
    assert first.stderr == again.stderr and "algorithm='dpdll' is not allowed; allowed values: [" in again.stderr


@FUZZ
@given(valid_dicts(), st.one_of(st.none(), junk, st.floats().filter(lambda v: not (math.isfinite(v) and v >= 0))))
def test_sigma_is_a_finite_number_with_the_fixed_rule_only(d, sigma):
    record(CASES)
    d = dict(d, sigma_rule="fixed", sigma=sigma)
    rejects(lambda: ExperimentConfig.from_dict(d), "sigma", "finite number >= 0")
    d = dict(d, sigma_rule="rdp", sigma=1.0)
    rejects(lambda: ExperimentConfig.from_dict(d), "sigma", "sigma_rule='fixed'")


@FUZZ
@given(valid_dicts(), st.one_of(st.none(), st.integers(), st.text(max_size=5), st.lists(st.integers(), max_size=2)))
def test_algo_must_be_a_mapping(d, algo):
    record(CASES)
    rejects(lambda: ExperimentConfig.from_dict(dict(d, algo=algo)), "algo", "mapping")
    rejects(lambda: ExperimentConfig().with_overrides([f"algo={set_value(algo)}"]), "algo", "mapping")


# -- sizes fixed by the graph and the data ------------------------------------------------
@FUZZ
@given(st.data())
def test_sizes_that_no_run_could_use_are_rejected_up_front(data):
    record(CASES)
    d = data.draw(valid_dicts())
    kind = data.draw(st.sampled_from(["graph", "random_ring", "train_samples", "validation", "dataset"]))
    spec = DATASETS[d["dataset"]]
    if kind == "graph":
        d["topology"] = data.draw(st.sampled_from([t for t, m in MIN_AGENTS.items() if m > 1]))
        d["schedule"] = "static"
        d["n_agents"] = data.draw(st.integers(1, MIN_AGENTS[d["topology"]] - 1))
        words = ["n_agents", f">= {MIN_AGENTS[d['topology']]}", d["topology"]]
    elif kind == "random_ring":
        d.update(schedule="random_ring", topology="fully_connected", n_agents=data.draw(st.integers(1, 2)))
        words = ["n_agents", "random_ring", ">= 3"]
    elif kind == "train_samples":
        d["schedule"] = "static"
        d["n_agents"] = data.draw(st.integers(2, 64).filter(lambda n: n >= MIN_AGENTS[d["topology"]]))
        d["train_samples"] = data.draw(st.integers(1, d["n_agents"] - 1))
        words = ["n_agents", "train_samples", f"<= {d['train_samples']}"]
    elif kind == "validation":
        d["validation_samples"] = data.draw(st.integers(spec.full_test, 10**6))
        words = ["validation_samples", f"< {spec.full_test}"]
    else:
        d.update(train_samples=None, schedule="static", n_agents=data.draw(st.integers(spec.full_train + 1, 10**9)))
        words = ["n_agents", f"<= {spec.full_train}"]
    rejects(lambda: ExperimentConfig.from_dict(d), *words)


# -- unknown keys -------------------------------------------------------------------------
keys = st.one_of(st.text(max_size=12), st.integers(), st.none(), st.booleans())


@FUZZ
@given(valid_dicts(), keys.filter(lambda k: k not in FIELDS), st.one_of(st.integers(), st.text(max_size=4)))
def test_unknown_top_level_keys_are_listed_with_the_allowed_fields(d, key, value):
    record(CASES)
    d = {**d, key: value}
    msg = rejects(lambda: ExperimentConfig.from_dict(d), repr(key), "allowed fields")
    assert all(f in msg for f in FIELDS)
    rejects(lambda: ExperimentConfig.from_yaml_text(yaml.safe_dump(d, sort_keys=False)), "allowed fields")
    algo_option = isinstance(key, str) and key.strip().startswith("algo.")  # sets an option, tested below
    if not algo_option:
        rejects(lambda: ExperimentConfig().with_overrides({key: value}), repr(key))
    if isinstance(key, str) and "=" not in key and key.strip() and key.strip() not in FIELDS and not algo_option:
        rejects(lambda: ExperimentConfig().with_overrides([f"{key}=1"]), repr(key.strip()), "allowed fields")


@FUZZ
@given(st.sampled_from(ALGORITHMS), st.data())
def test_unknown_algo_options_are_listed_with_the_allowed_options(algorithm, data):
    record(CASES)
    allowed = sorted(f.name for f in fields(known_algorithms()[algorithm].Params))
    key = data.draw(keys.filter(lambda k: k not in allowed), label="option")
    msg = rejects(lambda: ExperimentConfig(algorithm=algorithm, algo={key: 1}), "algo", repr(key), algorithm)
    assert all(a in msg for a in allowed), msg
    if isinstance(key, str) and "=" not in key and key.strip() not in allowed:  # --set strips the key
        rejects(lambda: ExperimentConfig().with_overrides([f"algorithm={algorithm}", f"algo.{key}=1"]), "algo",
                algorithm)


@FUZZ
@given(st.sampled_from(ALGORITHMS), st.data())
def test_bad_algo_option_values_name_the_option(algorithm, data):
    types = option_types(known_algorithms()[algorithm].Params)
    assume(types)  # DP-DPSGD has no options
    name = data.draw(st.sampled_from(sorted(types)), label="option")
    if str in types[name]:
        allowed = _allowed_strings(known_algorithms()[algorithm].Params, name)
        value = data.draw(st.one_of(junk, st.integers(), st.floats(), st.none()).filter(lambda v: v not in allowed))
    else:
        # Every numeric option of every algorithm is >= 0 (integers >= 1); bools, strings
        # and non-finite floats are never numbers.
        wrong = st.one_of(st.text(max_size=5), st.booleans(), st.lists(st.integers(), max_size=2),
                          st.sampled_from([math.nan, math.inf, -math.inf]))
        below = st.floats(max_value=-1e-9, **finite) if float in types[name] else st.integers(max_value=0)
        value = data.draw(st.one_of(wrong, below) if type(None) in types[name] else st.one_of(wrong, below, st.none()))
    record(CASES)
    rejects(lambda: ExperimentConfig(algorithm=algorithm, algo={name: value}), name)
    rejects(lambda: ExperimentConfig().with_overrides([f"algorithm={algorithm}", f"algo.{name}={set_value(value)}"]),
            name)


# -- YAML that is not a config ----------------------------------------------------------------
not_a_mapping = st.one_of(
    st.lists(st.integers(), min_size=1, max_size=3), st.integers(), st.floats(allow_nan=False), st.booleans(),
    st.text(min_size=1, max_size=10),
)
broken_yaml = st.sampled_from([
    "a: [", "{rounds: 1", "rounds: [1", "? [a]\n: 1", "[1]: 2", "rounds: 5\nrounds: 6", "\t", "rounds: 'x",
    "!!python/object/apply:os.system ['true']", "rounds: *nope", "a: b: c", "---\na: 1\n---\nb: 2", "%YAML 9\n--- 1",
    "\x00", "- a\nb: 1",
])


@FUZZ
@given(st.one_of(not_a_mapping.map(yaml.safe_dump), broken_yaml, st.sampled_from(["", "   \n", "# only a comment\n",
                                                                                    "null", "~", "---\n"])))
def test_yaml_that_is_not_a_mapping_is_a_config_error(text):
    record(CASES)
    msg = rejects(lambda: ExperimentConfig.from_yaml_text(text))
    assert re.search(r"mapping|not valid YAML|unknown config field|twice", msg), msg


@FUZZ
@given(st.text(max_size=40))
def test_any_text_is_a_config_or_a_config_error(text):
    record(CASES)
    accepts_or_rejects_clearly(lambda: ExperimentConfig.from_yaml_text(text))


@FUZZ
@given(st.one_of(st.lists(st.integers(), max_size=3), st.integers(), st.none(), st.text(max_size=5),
                 st.tuples(st.integers()), st.floats(), st.sets(st.integers(), max_size=2)))
def test_from_dict_of_a_non_mapping_is_a_config_error(value):
    record(CASES)
    rejects(lambda: ExperimentConfig.from_dict(value), "mapping", "allowed fields")


# -- --set strings of every shape --------------------------------------------------------------
set_keys = st.one_of(
    st.sampled_from(FIELDS + ["algo.alpha", "algo.x", "algo.", "algo", "", " ", "algo..x", "ALGO.alpha"]),
    st.text(max_size=10))
set_values = st.one_of(
    st.text(max_size=12),
    st.sampled_from(["", "null", "[1", "{a: 1}", "1e-3", "-1", ".inf", ".nan", "!!python/name:os.system", "*x",
                     "&a 1", "'open", "- 1\n- 2", "a: b: c", "\t", "%YAML 1.1", "1\n---\n2", "yes", "0x1F", "1_000"]),
)


@FUZZ
@given(st.lists(st.tuples(set_keys, st.sampled_from(["=", "", "==", " = "]), set_values), min_size=1, max_size=4))
def test_set_strings_of_every_shape(parts):
    record(CASES)
    strings = [k + sep + v for k, sep, v in parts]
    cfg = accepts_or_rejects_clearly(lambda: ExperimentConfig().with_overrides(strings))
    code, out, err = cli("run", "--print-config", *[f"--set={s}" for s in strings])
    assert code == (0 if cfg is not None else 2), (strings, err)
    if cfg is None:
        assert err.startswith("error: ") and err.count("\n") >= 1 and "Traceback" not in err
    else:
        assert ExperimentConfig.from_yaml_text(out) == cfg


@FUZZ
@given(st.sampled_from(FIELDS), st.data())
def test_set_string_shapes_name_the_field(name, data):
    shape = data.draw(st.sampled_from(["no_equals", "empty_key", "bad_value", "broken_yaml", "repeated"]))
    if shape == "no_equals":
        s, words = [data.draw(st.text(max_size=10).filter(lambda t: "=" not in t))], ["key=value"]
    elif shape == "empty_key":
        s, words = [data.draw(st.sampled_from(["", " ", "\t"])) + "=1"], ["no key", "allowed"]
    elif shape == "bad_value":
        assume(name != "algo" and name != "sigma")
        value, words = data.draw(bad_values(name))
        s, words = [f"{name}={set_value(value)}"], [name] + words
    elif shape == "broken_yaml":
        s, words = [f"{name}=" + data.draw(st.sampled_from(["[1", "{a", "'x", "*nope", "a: b: c"]))], [name]
    else:
        s, words = [f"{name}=1", f"{name}=2"], [name, "twice"]
    record(CASES)
    rejects(lambda: ExperimentConfig().with_overrides(s), *words)
    code, _, err = cli("run", "--print-config", *[f"--set={x}" for x in s])
    assert code == 2 and err.startswith("error: ") and all(w in err for w in words), err


@FUZZ
@given(st.dictionaries(keys, st.one_of(st.integers(), st.text(max_size=4), st.none()), min_size=1, max_size=3))
def test_dict_overrides_of_any_keys(overrides):
    record(CASES)
    accepts_or_rejects_clearly(lambda: ExperimentConfig().with_overrides(overrides))


def test_algorithm_change_keeps_the_new_algorithms_options_in_any_order():
    a = ExperimentConfig().with_overrides(["algo.floor=0.5", "algorithm=pdsl"])
    b = ExperimentConfig().with_overrides(["algorithm=pdsl", "algo.floor=0.5"])
    assert a == b and a.algo["floor"] == 0.5


def test_exponent_floats_read_as_numbers():
    cfg = ExperimentConfig().with_overrides(["lr=1e-3", "delta=1E-6", "clip=2.5e0"])
    assert (cfg.lr, cfg.delta, cfg.clip) == (1e-3, 1e-6, 2.5)
    assert ExperimentConfig.from_yaml_text("lr: 3e-4\n").lr == 3e-4


# -- the command line, in a fresh interpreter -------------------------------------------------
# Two cases only: each starts an interpreter that imports torch; the in-process tests above
# cover the many shapes through the same main().
@pytest.mark.parametrize(
    "args, words",
    [
        (["--set", "rounds=abc"], ["rounds", "integer >= 1"]),
        ("broken.yaml", ["not valid YAML", "line"]),
    ],
)
def test_command_line_bad_input_exits_2_without_traceback(tmp_path, args, words):
    (tmp_path / "broken.yaml").write_text("rounds: [5\n")
    argv = [str(tmp_path / args)] if isinstance(args, str) else args
    proc = subprocess.run([sys.executable, "-m", "dpdl_core", "run", *argv, "--print-config"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("error: ") and "Traceback" not in proc.stderr and proc.stdout == ""
    assert all(w in proc.stderr for w in words), proc.stderr


def test_cli_bad_config_files_in_process(tmp_path):
    """Files the command line cannot read as a config: exit 2 and a message naming what is wrong."""
    files = {
        "missing.yaml": (None, "does not exist"),
        "folder": (None, "cannot be read"),
        "binary.yaml": (b"\xff\xfe\x00rounds", "cannot be read"),
        "empty.yaml": (b"# nothing\n", "empty"),
        "scalar.yaml": (b"42\n", "mapping"),
        "list.yaml": (b"- rounds: 5\n", "mapping"),
        "dup.yaml": (b"rounds: 1\nrounds: 2\n", "twice"),
        "unknown.yaml": (b"learning_rate: 0.1\n", "allowed fields"),
        "bad_value.yaml": (b"topology: torus\n", "allowed values"),
    }
    (tmp_path / "folder").mkdir()
    for name, (content, words) in files.items():
        if content is not None:
            (tmp_path / name).write_bytes(content)
        code, out, err = cli("run", str(tmp_path / name), "--print-config")
        assert code == 2 and out == "" and err.startswith("error: ") and words in err, (name, err)
