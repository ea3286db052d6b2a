import pytest
import torch

from dpdl_core.papers.dpdl import preset as paper_preset
from dpdl_core.runs.config import ConfigError, ExperimentConfig, apply_overrides


@pytest.mark.parametrize(
    "field, value, match",
    [
        ("dataset", "svhn", r"dataset='svhn' is not allowed; allowed values: \['cifar10', 'mnist'\]"),
        ("topology", "torus", "allowed values"),
        ("algorithm", "sgd", "allowed values"),
        ("partition", "iid", "allowed values"),
        ("sigma_rule", "magic", "allowed values"),
        ("n_agents", 0, "n_agents=0 must be an integer >= 1"),
        ("rounds", 2.5, "rounds"),
        ("lr", -1.0, "lr"),
        ("momentum", 1.5, "momentum"),
        ("epsilon", 0.0, "epsilon"),
        ("delta", 1.0 + 1e-9, "delta"),
    ],
)
def test_invalid_values_name_the_field(field, value, match):
    with pytest.raises(ConfigError, match=match):
        ExperimentConfig(**{field: value})


def test_unknown_keys_listed():
    with pytest.raises(ConfigError, match=r"unknown config field\(s\) \['learning_rate'\]"):
        ExperimentConfig.from_dict({"learning_rate": 0.1})
    with pytest.raises(ConfigError, match="unknown option"):
        ExperimentConfig(algo={"beta": 1})


def test_fixed_sigma_rule_needs_sigma():
    with pytest.raises(ConfigError, match="sigma must be"):
        ExperimentConfig(sigma_rule="fixed")
    with pytest.raises(ConfigError, match="only used"):
        ExperimentConfig(sigma=1.0)
    assert ExperimentConfig(sigma_rule="fixed", sigma=1.0).sigma == 1.0


def test_hash_is_stable_and_content_based():
    cfg = ExperimentConfig()
    # Regression value: changes only if a field, a default or the version changes.
    assert cfg.hash == ExperimentConfig.from_dict(cfg.to_dict()).hash
    assert cfg.hash == EXPECTED_DEFAULT_HASH
    assert cfg.replace(epsilon=1.0).hash != cfg.hash
    assert cfg.replace(checkpoint_every=7).hash == cfg.hash  # does not change what runs
    # Explicit defaults hash like omitted ones.
    assert ExperimentConfig(algo={"cosine": "global"}).hash == cfg.hash
    # A stored config without the later fields ran their old values: its hash is the old
    # default config's, which every run stored before the faster defaults keeps.
    assert ExperimentConfig.from_stored({}).hash == STORED_DEFAULT_HASH
    assert ExperimentConfig(per_sample_strategy="vmap", eval_strategy="vmap").hash == STORED_DEFAULT_HASH


EXPECTED_DEFAULT_HASH = "cdf636bf4f7b782d"
STORED_DEFAULT_HASH = "948cd5080ca8def6"


def test_new_runs_default_to_the_fastest_kernels_and_stored_ones_keep_theirs():
    cfg = ExperimentConfig()
    assert (cfg.per_sample_strategy, cfg.eval_strategy) == ("bookkeeping", "per_model")
    stored = ExperimentConfig.from_stored({"dataset": "mnist", "rounds": 7})
    assert (stored.per_sample_strategy, stored.eval_strategy) == ("vmap", "vmap")
    # A field the stored config records is kept as recorded.
    assert ExperimentConfig.from_stored({"per_sample_strategy": "per_model"}).per_sample_strategy == "per_model"


def test_auto_picks_bookkeeping_for_every_model_of_the_papers_and_vmap_for_others():
    from dpdl_core.sim.models import MODELS, register_model

    for name in sorted(MODELS):
        for dataset in ("mnist", "cifar10"):
            assert ExperimentConfig(dataset=dataset, model=name).per_sample_strategy == "bookkeeping", (name, dataset)

    @register_model("test_strided")
    def strided(in_shape):
        return torch.nn.Sequential(torch.nn.Conv2d(in_shape[0], 4, 3, stride=2), torch.nn.Flatten(),
                                   torch.nn.LazyLinear(10))

    try:
        with pytest.warns(UserWarning, match=r"vmap kernel: the book-keeping kernel cannot run it .*stride"):
            cfg = ExperimentConfig(model="test_strided")
        assert cfg.per_sample_strategy == "vmap"
        # The rule's pick follows a new model; an explicit kernel is kept.
        assert cfg.replace(model="lenet").per_sample_strategy == "bookkeeping"
        assert cfg.with_overrides(["model=lenet"]).per_sample_strategy == "bookkeeping"
        back = ExperimentConfig().replace(model="test_strided")
        assert back.per_sample_strategy == "vmap"
        pinned = ExperimentConfig(per_sample_strategy="per_model")
        assert pinned.replace(model="dpdl_cnn", dataset="cifar10").per_sample_strategy == "per_model"
        assert pinned.with_overrides(["model=dpdl_lenet_authors"]).per_sample_strategy == "per_model"
        assert ExperimentConfig().with_overrides({"model": "test_strided", "per_sample_strategy": "bookkeeping"}) \
            .per_sample_strategy == "bookkeeping"
    finally:
        MODELS.pop("test_strided")


def test_yaml_roundtrip(tmp_path):
    cfg = paper_preset("cifar10", "ring", rounds=7)
    path = tmp_path / "c.yaml"
    cfg.to_yaml(path)
    assert ExperimentConfig.from_yaml(path) == cfg
    with pytest.raises(ConfigError, match=r"does not exist; .*run --print-config > my.yaml"):
        ExperimentConfig.from_yaml(tmp_path / "nope.yaml")


def test_an_override_without_a_value_is_refused_not_read_as_null():
    # YAML reads an empty value as null: `--set epsilon=$UNSET` would silently train without DP.
    with pytest.raises(ConfigError, match=r"override 'epsilon=' has no value; .*epsilon=null"):
        ExperimentConfig().with_overrides(["epsilon="])
    assert ExperimentConfig().with_overrides(["epsilon=null"]).epsilon is None  # said explicitly: allowed


def test_overrides():
    cfg = apply_overrides(ExperimentConfig(), ["epsilon=null", "rounds=5", "algo.alpha=2", "topology=ring"])
    assert cfg.epsilon is None and cfg.rounds == 5 and cfg.algo["alpha"] == 2 and cfg.topology == "ring"
    with pytest.raises(ConfigError, match="key=value"):
        apply_overrides(cfg, ["rounds"])
    with pytest.raises(ConfigError, match="cosine"):
        apply_overrides(cfg, ["algo.cosine=sideways"])


def test_paper_preset_values():
    m = paper_preset("mnist")
    c = paper_preset("cifar10")
    assert (m.lr, m.clip, m.batch_size, m.momentum) == (0.005, 2.0, 216, 0.7)
    assert (c.lr, c.clip, c.model) == (0.03, 3.0, "dpdl_cnn") and m.model == "lenet"
