"""A batch larger than an agent's training samples fails when the run is prepared.

Each round draws B distinct samples from every agent; a larger B would repeat samples in a
batch (a clipped gradient counted twice breaks the privacy accounting) and, far above the
agents' data, grow every round's tensors until memory runs out. So the run stops before
training, with one error line on the command line.
"""
import pytest

from dpdl_core.cli import main
from dpdl_core.runs.config import ConfigError, ExperimentConfig
from dpdl_core.runs.runner import prepare

# 400 samples over 4 agents: 100 each (the per_agent partition gives every agent the same number).
SMALL = dict(n_agents=4, train_samples=400, rounds=1, eval_every=1, eval_samples=50, epsilon=None)


def test_a_batch_of_all_the_smallest_agents_samples_is_allowed():
    xb, _ = prepare(ExperimentConfig(batch_size=100, **SMALL)).sample_batches()
    assert xb.shape[:2] == (4, 100)


def test_a_batch_larger_than_the_smallest_agent_fails_before_training():
    with pytest.raises(ConfigError, match=r"batch_size=101 is more than the 100 training samples of the smallest "
                                          r"agent .*allowed: batch_size <= 100"):
        prepare(ExperimentConfig(batch_size=101, **SMALL))


def test_the_command_line_says_so_in_one_line_and_stores_nothing(tmp_path, capsys):
    # One sample over the limit: were the check missing, the run would train (in a second)
    # rather than exhaust memory as a batch of 100,000 would.
    argv = [a for k, v in {**SMALL, "epsilon": "null", "batch_size": 101}.items() for a in ("--set", f"{k}={v}")]
    assert main(["run", "--results", str(tmp_path), *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: batch_size=101 is more than the 100 training samples") and \
        len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not list(tmp_path.glob("*.csv.gz"))
