"""Every stored ε is the accountant's ε of the mechanism that ran: for each algorithm and
clipping mode, the run's ``epsilon_rdp`` equals a direct dp_accounting computation of its
releases, written here from the mechanism's description (k releases per round of one
Poisson-sampled batch, noise std over sensitivity)."""
import math

import dp_accounting as dpa
import numpy as np
import pytest
from dp_accounting import rdp

from dpdl_core.runs.config import ExperimentConfig
from dpdl_core.runs.runner import prepare
from dpdl_core.sim.privacy import RDP_ORDERS

SIGMA, T, B, N = 1.0, 40, 8, 6
BASE = dict(n_agents=N, topology="ring", batch_size=B, train_samples=600, rounds=T, sigma_rule="fixed", sigma=SIGMA,
            epsilon=None, delta=1e-5)

# algorithm, options -> (releases per agent per round on a ring, noise multiplier the accountant must see)
MECHANISMS = {
    ("dpdl", ()): (3, SIGMA),  # 2 cross-gradients + 1 self-gradient, per-sample clipped sums, noise σC
    # micro-batch clipping (M = 4 micro-batches): noise σC/B, sensitivity 2C/M
    ("dpdl", (("clip_mode", "microbatch"), ("n_microbatches", 4))): (3, SIGMA * 4 / (2 * B)),
    ("dp_dpsgd", ()): (1, SIGMA),
    ("muffliato", ()): (1, SIGMA),
    ("dp_netfleet", (("local_steps", 3),)): (3, SIGMA),  # one noisy gradient per local step, same batch
    ("dp_cga", ()): (3, SIGMA),  # per-sample clipping, as DPDL
    ("dp_cga", (("clip", "batch"), ("noise", "matched"))): (3, SIGMA / (2 * B)),  # noise σC/B, sensitivity 2C
    ("dp_cga", (("clip", "batch"), ("noise", "calibrated"))): (3, SIGMA / 2),  # noise σC, sensitivity 2C
}


def direct_epsilon(q: float, k: int, multiplier: float) -> float:
    acc = rdp.RdpAccountant(orders=RDP_ORDERS)
    acc.compose(dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(multiplier / math.sqrt(k))), T)
    return acc.get_epsilon(1e-5)


@pytest.mark.parametrize("key", list(MECHANISMS), ids=lambda k: k[0] + "".join(f"-{v}" for _, v in k[1]))
def test_stored_epsilon_is_the_accountants_for_the_mechanism_that_ran(key):
    algorithm, options = key
    k, multiplier = MECHANISMS[key]
    prep = prepare(ExperimentConfig(algorithm=algorithm, algo=dict(options), **BASE))
    report = prep.sigma_report
    assert list(report.k) == [k] * N
    for agent in range(N):
        q = B / len(prep.parts[agent])
        assert report.epsilon_rdp[agent] == pytest.approx(direct_epsilon(q, k, multiplier), rel=1e-9)


def test_batch_clipped_dp_cga_at_the_paper_noise_is_not_private():
    """DP-CGA with the clipped batch mean and matched noise: the ε that run really has."""
    prep = prepare(ExperimentConfig(algorithm="dp_cga", algo={"clip": "batch"}, **{**BASE, "batch_size": 216,
                                                                                  "train_samples": 6000}))
    assert np.min(prep.sigma_report.epsilon_rdp) > 1e3
