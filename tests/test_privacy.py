import math

import numpy as np
import pytest

from dpdl_core.papers.dpdl.privacy import authors_code_sigma, theorem1_sigma
from dpdl_core.sim.privacy import PrivacyError, SigmaRequest, calibrate, rdp_epsilon, rdp_sigma
from dpdl_core.sim.topology import make_topology


def test_rdp_sigma_meets_target_tightly():
    s = rdp_sigma(1.0, 0.1, 4, 200, 1e-5)
    assert rdp_epsilon(s, 0.1, 4, 200, 1e-5) <= 1.0
    assert rdp_epsilon(s * 0.99, 0.1, 4, 200, 1e-5) > 1.0


def test_rdp_sigma_grows_as_sqrt_k():
    s1 = rdp_sigma(0.5, 0.12, 1, 100, 1e-5)
    for k in (2, 6, 11):
        assert rdp_sigma(0.5, 0.12, k, 100, 1e-5) / s1 == pytest.approx(math.sqrt(k), rel=5e-4)


def test_larger_epsilon_never_needs_larger_sigma():
    sig = [rdp_sigma(e, 0.12, 6, 300, 1e-5) for e in (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)]
    assert all(a >= b for a, b in zip(sig, sig[1:]))


def test_small_epsilon_and_unreachable():
    s = rdp_sigma(0.05, 0.12, 6, 1000, 1e-5)
    assert rdp_epsilon(s, 0.12, 6, 1000, 1e-5) <= 0.05
    with pytest.raises(PrivacyError, match="unreachable"):
        rdp_sigma(1e-7, 1.0, 30, 10**6, 1e-9)
    with pytest.raises(PrivacyError, match="sampling rate"):
        rdp_epsilon(1.0, 1.5, 1, 10, 1e-5)


def test_regression_values():
    """Pinned outputs of each rule for the paper's MNIST bipartite N=10 setting."""
    W = make_topology("bipartite", 10).W
    # rdp, q = 216/1743, k = 6, T = 100.
    assert rdp_sigma(0.5, 216 / 1743, 6, 100, 1e-5) == pytest.approx(RDP_PINNED, rel=2e-4)
    # authors' code: sample_rate = 216*10/5e5; (96*sr/0.5)*(sqrt(6) + 15)/sqrt(6*6).
    expected = (96 * 216 * 10 / 5e5 / 0.5) * (math.sqrt(6) + 15) / 6
    assert authors_code_sigma(0.5, W, 216) == pytest.approx(np.full(10, expected))
    # eq. (23) with c2 = h = 1.
    q = 216 / (10 * 1743)
    num = (2 / math.sqrt(1 / 6) + 15 * 1.5 * 10 / 8 + 1.5 * (1 / 6) * 4 * 10 / 2) * q * math.sqrt(100 * math.log(1e5))
    assert theorem1_sigma(0.5, 1e-5, W, 216, 1743, 100, 1.5) == pytest.approx(np.full(10, num / (math.sqrt(36) * 0.5)))


RDP_PINNED = 23.7520


def test_calibrate_rules_and_report():
    W = make_topology("ring", 6).W
    sizes = np.array([500, 500, 400, 500, 500, 500])
    k = (W > 0).sum(1)
    def req(**kw):
        return SigmaRequest(**{"epsilon": 1.0, "delta": 1e-5, "W": W, "local_sizes": sizes, "messages": k,
                               "batch_size": 50, "rounds": 50, **kw})

    rep = calibrate("rdp", req())
    assert rep.sigma[2] > rep.sigma[0]  # the smaller agent is sampled at a higher rate
    assert np.all(rep.epsilon_rdp <= 1.0 + 1e-9)
    none = calibrate("rdp", req(epsilon=None))
    assert np.all(none.sigma == 0) and np.all(np.isinf(none.epsilon_rdp))
    fixed = calibrate("fixed", req(epsilon=None, sigma=2.0))
    assert np.all(fixed.sigma == 2.0) and np.all(np.isfinite(fixed.epsilon_rdp))
    with pytest.raises(PrivacyError, match="allowed values"):
        calibrate("laplace", req(rounds=5))


def test_noise_scale_changes_what_the_accountant_sees():
    """A mechanism with half the noise per unit of sensitivity gets the ε of σ/2, and the
    rdp rule calibrates σ up to make up for it."""
    W = make_topology("ring", 6).W
    base = dict(epsilon=1.0, delta=1e-5, W=W, local_sizes=np.full(6, 500), messages=np.full(6, 3), batch_size=50,
                rounds=50)
    fixed = calibrate("fixed", SigmaRequest(**{**base, "sigma": 2.0}), noise_scale=0.5)
    assert fixed.epsilon_rdp[0] == pytest.approx(rdp_epsilon(1.0, 0.1, 3, 50, 1e-5))
    full = calibrate("rdp", SigmaRequest(**base))
    half = calibrate("rdp", SigmaRequest(**base), noise_scale=0.5)
    assert half.sigma[0] == pytest.approx(2 * full.sigma[0]) and half.epsilon_rdp[0] <= 1.0 + 1e-9
