"""Communication graphs and their mixing matrices.

A :class:`Topology` holds the graph, the mixing matrix W (Metropolis–Hastings weights:
w_ij = 1/(1 + max(d_i, d_j)) on edges, w_ii = 1 − Σ_{j≠i} w_ij, which is 1/(d+1) on
d-regular graphs) and its spectrum. Assumption 3 of the DPDL paper (eq. 27) asks
λ1(W) = 1 and max(|λ2|, |λN|) ≤ √ρ; :attr:`Topology.sqrt_rho` is that maximum.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from numbers import Integral

import networkx as nx
import numpy as np

from .registry import load_plugins

__all__ = ["MIN_AGENTS", "MIXINGS", "TOPOLOGIES", "random_sinkhorn_rows", "Topology", "TopologyError", "check_n_agents",
           "make_topology", "metropolis_hastings", "register_topology", "topologies", "validate_mixing_matrix"]

# How W's weights are set on the graph: Metropolis-Hastings (symmetric, doubly stochastic; the
# papers' assumption), or each agent's row from its own seeded random Sinkhorn matrix (row
# stochastic only; how one released implementation builds W, docs/dpdl_authors_code.md row A).
MIXINGS = ("metropolis", "random_sinkhorn")
# The named graphs, in registration order (a list, so that an unhashable name is compared,
# not hashed); papers add theirs with @register_topology.
TOPOLOGIES: list[str] = []
# Smallest N of each named topology.
MIN_AGENTS: dict[str, int] = {}
_LABELS: dict[str, str] = {}
_BUILDERS: dict[str, Callable[[int], nx.Graph]] = {}


def register_topology(name: str, *, min_agents: int = 1, label: str | None = None):
    """Register ``builder(n) -> networkx.Graph`` as the topology ``name`` (config
    ``topology: name``), buildable for ``n >= min_agents``; ``label`` names it in messages."""

    def deco(builder: Callable[[int], nx.Graph]):
        if _BUILDERS.get(name, builder) is not builder:
            raise ValueError(f"two topologies are named {name!r}")
        if name not in _BUILDERS:
            TOPOLOGIES.append(name)
        _BUILDERS[name], MIN_AGENTS[name], _LABELS[name] = builder, int(min_agents), label or name
        return builder

    return deco


def topologies() -> list[str]:
    """Every named topology, the papers' included (they are loaded first)."""
    load_plugins()
    return list(TOPOLOGIES)


class TopologyError(ValueError):
    """A graph or mixing matrix that the algorithms cannot use."""


@dataclass(frozen=True)
class Topology:
    """A validated communication graph.

    Attributes
    ----------
    name : str
    W : np.ndarray
        Symmetric doubly stochastic mixing matrix with positive diagonal.
    eigenvalues : np.ndarray
        Eigenvalues of W, descending (λ1 = 1 first).
    """

    name: str
    W: np.ndarray
    eigenvalues: np.ndarray
    mixing: str = "metropolis"

    @property
    def n_agents(self) -> int:
        return self.W.shape[0]

    @property
    def sqrt_rho(self) -> float:
        """max(|λ2|, |λN|): the √ρ of Assumption 3 (eq. 27)."""
        return float(max(abs(self.eigenvalues[1]), abs(self.eigenvalues[-1]))) if self.n_agents > 1 else 0.0

    @property
    def rho(self) -> float:
        """ρ of Assumption 3."""
        return self.sqrt_rho**2

    @property
    def spectral_gap(self) -> float:
        """1 − λ2(W): smallest non-zero eigenvalue of I − W (MUFFLIATO's λ)."""
        return float(1.0 - self.eigenvalues[1]) if self.n_agents > 1 else 1.0

    def neighbors(self, i: int) -> np.ndarray:
        """Indices j with w_ij > 0, including i itself (the paper's 𝒩_i)."""
        return np.flatnonzero(self.W[i] > 0)

    @property
    def degrees(self) -> np.ndarray:
        """|𝒩_i| (self included) for every agent."""
        return (self.W > 0).sum(axis=1)

    def edges(self) -> np.ndarray:
        """All ordered pairs (i, j) with w_ij > 0, self-loops included, shape (E, 2)."""
        return np.argwhere(self.W > 0)

    def graph(self) -> nx.Graph:
        """The graph without self-loops, for drawing."""
        g = nx.Graph()
        g.add_nodes_from(range(self.n_agents))
        g.add_edges_from((i, j) for i, j in self.edges() if i < j)
        return g

    def report(self) -> dict:
        """Summary numbers for tables and notebooks."""
        return {
            "topology": self.name,
            "n_agents": self.n_agents,
            "min_degree": int(self.degrees.min() - 1),
            "max_degree": int(self.degrees.max() - 1),
            "lambda2": float(self.eigenvalues[1]) if self.n_agents > 1 else 1.0,
            "lambdaN": float(self.eigenvalues[-1]),
            "sqrt_rho": self.sqrt_rho,
            "spectral_gap": self.spectral_gap,
            **({"mixing": self.mixing} if self.mixing != "metropolis" else {}),
        }


def metropolis_hastings(graph: nx.Graph) -> np.ndarray:
    """Metropolis–Hastings mixing matrix of an undirected graph (self-loops ignored)."""
    n = graph.number_of_nodes()
    index = {v: k for k, v in enumerate(sorted(graph.nodes))}
    deg = np.zeros(n, dtype=int)
    for v in graph.nodes:
        deg[index[v]] = sum(1 for u in graph.neighbors(v) if u != v)
    W = np.zeros((n, n))
    for u, v in graph.edges:
        if u == v:
            continue
        i, j = index[u], index[v]
        W[i, j] = W[j, i] = 1.0 / (1.0 + max(deg[i], deg[j]))
    W[np.diag_indices(n)] = 1.0 - W.sum(axis=1)
    return W


def _sinkhorn(M: np.ndarray, mask: np.ndarray, reg: float, max_iter: int) -> np.ndarray:
    """Alternately normalise the rows and columns of ``M`` (support ``mask``), adding ``reg``
    on the support before each sweep, until both sums are 1 (``np.allclose``)."""
    for _ in range(max_iter):
        M = M + reg * mask
        M = M / M.sum(axis=1, keepdims=True)
        M = M / M.sum(axis=0, keepdims=True)
        if np.allclose(M.sum(axis=1), 1, atol=1e-10) and np.allclose(M.sum(axis=0), 1, atol=1e-10):
            break
    return M


def random_sinkhorn_rows(graph: nx.Graph, seed: int, reg: float = 1e-2, max_iter: int = 1000) -> np.ndarray:
    """W whose row i is row i of agent i's own random doubly stochastic matrix on the graph.

    Each agent draws U(0, 1) weights on the graph's edges and self-loops from its own
    generator (``seed``, i) and balances them by Sinkhorn iterations; it keeps only its row.
    The result is row stochastic but neither symmetric nor column stochastic, so gossip does
    not preserve the average: the construction of an implementation in which every process
    builds its own W (with ``seed`` instead of no seed).
    """
    nodes = sorted(graph.nodes)
    n = len(nodes)
    mask = (nx.to_numpy_array(graph, nodelist=nodes) > 0) | np.eye(n, dtype=bool)
    W = np.zeros((n, n))
    for i in range(n):
        M = np.random.default_rng([seed, i]).random((n, n)) * mask
        W[i] = _sinkhorn(M, mask, reg, max_iter)[i]
    return W


def validate_mixing_matrix(W: np.ndarray, *, atol: float = 1e-10, symmetric: bool = True) -> np.ndarray:
    """Check W and return its eigenvalues (descending; of (W + Wᵀ)/2).

    ``symmetric=False`` accepts a row-stochastic W (:func:`random_sinkhorn_rows`): rows must
    sum to 1, columns need not, and W need not be symmetric.

    Raises
    ------
    TopologyError
        Naming the failed property: square, non-negative, symmetric, doubly stochastic,
        positive self-loops, connected.
    """
    W = np.asarray(W, dtype=float)
    if W.ndim != 2 or W.shape[0] != W.shape[1] or W.shape[0] < 1:
        raise TopologyError(f"W must be a non-empty square matrix, got shape {W.shape}")
    if (W < -atol).any():
        raise TopologyError("W has negative entries; weights must be in [0, 1]")
    if symmetric and not np.allclose(W, W.T, atol=atol):
        raise TopologyError("W is not symmetric (w_ij != w_ji); the papers assume an undirected graph")
    rows = np.allclose(W.sum(axis=1), 1, atol=1e-8)
    if symmetric and not (rows and np.allclose(W.sum(axis=0), 1, atol=1e-8)):
        raise TopologyError("W is not doubly stochastic: every row and column must sum to 1")
    if not rows:
        raise TopologyError("W is not row stochastic: every row must sum to 1")
    if (np.diag(W) <= 0).any():
        bad = np.flatnonzero(np.diag(W) <= 0).tolist()
        raise TopologyError(f"agents {bad} have no self-loop (w_ii = 0); the papers need w_ii > 0")
    g = nx.from_numpy_array(((W > 0) | (W.T > 0)).astype(int))
    if not nx.is_connected(g):
        raise TopologyError(f"the graph is not connected ({nx.number_connected_components(g)} components)")
    eig = np.sort(np.linalg.eigvalsh((W + W.T) / 2))[::-1]
    return eig


def check_n_agents(name: str, n_agents, error: type[Exception] = TopologyError) -> None:
    """Raise ``error`` unless the named topology ``name`` can be built over ``n_agents``
    agents; the message names the allowed N."""
    if name not in TOPOLOGIES and name not in topologies():  # a paper's topology: load the papers
        raise error(f"topology={name!r} is not known; allowed values: {TOPOLOGIES} or a networkx graph")
    if isinstance(n_agents, bool) or not isinstance(n_agents, Integral) or n_agents < 1:
        raise error(f"n_agents={n_agents!r} must be an integer >= 1")
    need = MIN_AGENTS[name]
    if n_agents < need:
        fits = [t for t, m in MIN_AGENTS.items() if m <= n_agents]
        raise error(f"a {_LABELS[name]} needs n_agents >= {need}, got n_agents={n_agents}; allowed: n_agents >= {need} "
                    f"for topology={name!r}, or topology in {fits}")


@register_topology("fully_connected", min_agents=1, label="fully connected graph")
def _fully_connected(n: int) -> nx.Graph:
    return nx.complete_graph(n)


@register_topology("bipartite", min_agents=2, label="bipartite graph")  # one agent on each side
def _bipartite(n: int) -> nx.Graph:
    g = nx.Graph()  # every even-indexed agent linked to every odd-indexed one
    g.add_nodes_from(range(n))
    g.add_edges_from((i, j) for i in range(0, n, 2) for j in range(1, n, 2))
    return g


@register_topology("ring", min_agents=3, label="ring")  # N = 2 is a single edge, not a cycle
def _ring(n: int) -> nx.Graph:
    return nx.cycle_graph(n)


def _named_graph(name: str, n: int) -> nx.Graph:
    check_n_agents(name, n)
    return _BUILDERS[name](int(n))  # a numpy integer too


def make_topology(name: str | nx.Graph, n_agents: int | None = None, *, mixing: str = "metropolis",
                  seed: int = 0) -> Topology:
    """Build a validated topology.

    Parameters
    ----------
    name : str or networkx.Graph
        A registered name (:data:`TOPOLOGIES`: ``fully_connected``, ``bipartite``, ``ring``
        and the papers'); ``bipartite`` is the complete bipartite graph between even- and
        odd-indexed agents; every agent also keeps a self-loop. A networkx graph gets
        Metropolis–Hastings weights over its nodes in sorted order.
    n_agents : int
        Required for a named topology.
    mixing : {"metropolis", "random_sinkhorn"}
        How the weights are set (:data:`MIXINGS`); ``random_sinkhorn`` draws them from
        ``seed`` (:func:`random_sinkhorn_rows`).
    """
    if mixing not in MIXINGS:
        raise TopologyError(f"mixing={mixing!r} is not known; allowed values: {list(MIXINGS)}")
    if isinstance(name, nx.Graph):
        graph, label = name, "custom"
    else:
        graph, label = _named_graph(name, n_agents), name
    if graph.number_of_nodes() == 1:
        W = np.ones((1, 1))
    elif mixing == "random_sinkhorn":
        W = random_sinkhorn_rows(graph, seed)
    else:
        W = metropolis_hastings(graph)
    eig = validate_mixing_matrix(W, symmetric=mixing == "metropolis")
    return Topology(label, W, eig, mixing)
