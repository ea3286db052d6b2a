import math

import networkx as nx
import numpy as np
import pytest

from dpdl_core.sim.topology import TopologyError, make_topology, validate_mixing_matrix


@pytest.mark.parametrize("name", ["fully_connected", "bipartite", "ring"])
@pytest.mark.parametrize("n", [4, 10, 11])
def test_mixing_matrix_properties(name, n):
    t = make_topology(name, n)
    W = t.W
    assert np.allclose(W, W.T) and np.allclose(W.sum(0), 1) and np.allclose(W.sum(1), 1)
    assert (np.diag(W) > 0).all() and (W >= 0).all()
    assert math.isclose(t.eigenvalues[0], 1.0, abs_tol=1e-10)
    assert 0 <= t.sqrt_rho < 1 and t.spectral_gap > 0


def test_ring_of_ten_spectrum():
    t = make_topology("ring", 10)
    assert np.allclose(t.W[t.W > 0], 1 / 3)
    assert math.isclose(t.eigenvalues[1], 1 / 3 + 2 / 3 * math.cos(2 * math.pi / 10), abs_tol=1e-12)
    assert math.isclose(t.spectral_gap, 2 / 3 * (1 - math.cos(2 * math.pi / 10)), abs_tol=1e-12)


def test_bipartite_structure_and_spectrum():
    t = make_topology("bipartite", 10)
    for i in range(10):
        nb = set(t.neighbors(i)) - {i}
        assert nb == {j for j in range(10) if j % 2 != i % 2}
    # W = (I + A)/6 with A = K_{5,5}: eigenvalues 1, 1/6 (x8), -2/3.
    assert np.allclose(sorted(t.eigenvalues), sorted([1.0] + [1 / 6] * 8 + [-2 / 3]))
    assert math.isclose(t.sqrt_rho, 2 / 3)


def test_fully_connected_is_averaging():
    t = make_topology("fully_connected", 7)
    assert np.allclose(t.W, 1 / 7) and t.sqrt_rho < 1e-12


def test_networkx_graph_gets_metropolis_hastings():
    t = make_topology(nx.star_graph(4))  # hub degree 4, leaves degree 1
    assert np.isclose(t.W[0, 1], 1 / 5) and np.isclose(t.W[1, 1], 4 / 5) and np.isclose(t.W[0, 0], 1 / 5)


@pytest.mark.parametrize(
    "W, match",
    [
        (np.array([[0.5, 0.5], [0.4, 0.6]]), "not symmetric"),
        (np.array([[0.5, 0.2], [0.2, 0.5]]), "doubly stochastic"),
        (np.array([[0.0, 1.0], [1.0, 0.0]]), "self-loop"),
        (np.eye(3), "not connected"),
        (np.ones((2, 3)), "square"),
    ],
)
def test_invalid_mixing_matrices(W, match):
    with pytest.raises(TopologyError, match=match):
        validate_mixing_matrix(W)


def test_unknown_topology_and_bad_sizes():
    with pytest.raises(TopologyError, match="allowed values"):
        make_topology("torus", 9)
    with pytest.raises(TopologyError, match="ring needs"):
        make_topology("ring", 2)
    with pytest.raises(TopologyError, match="not connected"):
        make_topology(nx.empty_graph(3))
