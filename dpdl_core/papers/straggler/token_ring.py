"""Algorithm 1 (the skipping scheme) on a logical ring, vectorized over independent runs.

One hop of Algorithm 1 at node v = v^{(h)} (eq. 2):

    τ ← Π_W(τ − η(∇f_v(τ; D_v) + N)),  η = ζ/√c,  N ~ N(0, σ²I_d)   if T ≤ t_ss,
    τ ← τ                                                        otherwise,

with c − 1 the number of updates so far, f_v the mean logistic loss
log(1 + e^{−y τ·x}) over a mini-batch of D_v (Sec. VI-B), and Π_W the projection on the ℓ2
ball of radius d_W/2 (spec §5.3). SS-Ring visits v_1 … v_n in a fixed order every round;
SS-Rand-Ring draws a fresh uniform permutation of the nodes each round (Sec. III-A).

Vectorization: the R runs are rows of one array. Each hop is a fixed number of batched
array operations over all runs at once (gather of every run's current node data, margins,
gradients, projection, a masked write-back for the runs whose node did not straggle);
the only Python loop is over hops. Every random draw of a hop is made for all runs at
once by :class:`HopSampler`, which the per-run reference loop of the tests shares.

The straggler event T > t_ss is drawn as U > 1 − p with U uniform; when a latency model
is given, T = Φ_T^{-1}(U) couples the same U to the realized latency ℓ of line 10/12,
so skips and latency are exactly those of drawing T itself.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import expit

from ...sim import Progress, check_choice, check_int
from .housing import RunSplits
from .latency import LatencyModel
from .theorems import SCHEMES, PaperParams

__all__ = ["HopSampler", "TokenRingConfig", "TokenRingResult", "run_token_ring"]

@dataclass(frozen=True)
class TokenRingConfig:
    """One setting of Algorithm 1 (defaults: Sec. VI-A/B of the paper).

    Attributes
    ----------
    scheme : {"ss_ring", "ss_rand_ring"}
    p : float
        Skipping probability Pr[T > t_ss], 0 ≤ p < 1 (0: always wait, t_ss = ∞).
    h_max : int
        Hops (token visits), skipped ones included.
    zeta : float
        Learning-rate parameter, η = ζ/√c (Algorithm 1, line 6).
    sigma : float
        Noise std per coordinate (footnote 3; 10.5976 for ε = 1, δ = 1e-6, k = 1).
    radius : float
        Radius of the ℓ2 ball W (d_W/2 = 5).
    batch_size : int
        Mini-batch per update, drawn without replacement; a node with fewer rows uses all
        of them (Boston: 40–41 rows per node < 100, so full local gradients).
    eval_every : int
        Test accuracy every this many hops (and at hop 0 and h_max).
    seed : int
        Seed of the hop stream (node orders, skips, noise, mini-batches).
    """

    scheme: str = "ss_rand_ring"
    p: float = 1e-4
    h_max: int = 1000
    zeta: float = PaperParams().zeta
    sigma: float = PaperParams().sigma
    radius: float = PaperParams().radius
    batch_size: int = 100
    eval_every: int = 100
    seed: int = 0

    def __post_init__(self):
        check_choice(self, "scheme", SCHEMES)
        check_int(self, "h_max", 1)
        check_int(self, "batch_size", 1)
        check_int(self, "eval_every", 1)
        check_int(self, "seed", 0)
        if not 0 <= self.p < 1:
            raise ValueError(f"p={self.p!r} must be in [0, 1)")
        if not self.zeta > 0 or not self.radius > 0 or not self.sigma >= 0:
            raise ValueError(f"zeta={self.zeta!r} and radius={self.radius!r} must be > 0, sigma={self.sigma!r} >= 0")


@dataclass
class TokenRingResult:
    """Outputs of :func:`run_token_ring` for R runs.

    Attributes
    ----------
    hops : np.ndarray
        ``(E,)`` hops at which the test accuracy was taken (0, eval_every, …, h_max).
    accuracy : np.ndarray
        ``(E, R)`` test accuracy of every run's token.
    tau : np.ndarray
        ``(R, d)`` final tokens τ_{h_max}.
    updates : np.ndarray
        ``(R,)`` number of token updates (c − 1 at the end).
    latency : np.ndarray or None
        ``(R,)`` realized ℓ of Algorithm 1 when a latency model was given.
    """

    config: TokenRingConfig
    hops: np.ndarray
    accuracy: np.ndarray
    tau: np.ndarray
    updates: np.ndarray
    latency: np.ndarray | None = None

    @property
    def mean_accuracy(self) -> np.ndarray:
        """``(E,)`` accuracy averaged over runs (what Fig. 2 plots)."""
        return self.accuracy.mean(axis=1)


class HopSampler:
    """Every random draw of Algorithm 1, batched over R runs, in a fixed order per hop.

    Per hop h (0-based): at a round start (h % n == 0) SS-Rand-Ring draws R permutations
    (argsort of uniform keys: uniform over the n! orders); then U ~ U(0,1)^R (straggler
    events), N ~ σ·N(0, 1)^{R×d} (noise, drawn for skipped runs too so that every run's
    stream stays aligned), and, only if a node can hold more rows than the mini-batch,
    uniform keys R×m whose smallest valid entries pick the mini-batch.
    """

    def __init__(self, config: TokenRingConfig, n_runs: int, n_nodes: int, d: int, m: int):
        self.config = config
        self.R, self.n, self.d, self.m = n_runs, n_nodes, d, m
        # A seed sequence apart from the data splits' default_rng(seed + r).
        self.rng = np.random.default_rng([config.seed, 1])
        self.order = np.broadcast_to(np.arange(n_nodes), (n_runs, n_nodes))

    def nodes(self, h: int) -> np.ndarray:
        """``(R,)`` node visited at hop h by every run."""
        if self.config.scheme == "ss_rand_ring" and h % self.n == 0:
            self.order = self.rng.random((self.R, self.n)).argsort(axis=1)
        return self.order[:, h % self.n]

    def draws(self) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """``(u, noise, keys)`` of one hop; ``keys`` is None when batches are full local sets."""
        u = self.rng.random(self.R)
        noise = self.config.sigma * self.rng.standard_normal((self.R, self.d))
        keys = self.rng.random((self.R, self.m)) if self.m > self.config.batch_size else None
        return u, noise, keys


def accuracy(tau: np.ndarray, x_test: np.ndarray, y_test: np.ndarray) -> np.ndarray:
    """``(R,)`` test accuracy of the linear classifier sign(x·τ) (x·τ = 0 predicts −1)."""
    pred = np.where(np.einsum("rnd,rd->rn", x_test, tau) > 0, 1.0, -1.0)
    return (pred == y_test).mean(axis=1)


def run_token_ring(splits: RunSplits, config: TokenRingConfig, *, latency: LatencyModel | None = None,
                   progress: bool | None = None, desc: str | None = None, canary=None) -> TokenRingResult:
    """Run Algorithm 1 for all R runs of ``splits`` at once.

    Parameters
    ----------
    splits : RunSplits
        Per-run node data and test sets (:func:`~dpdl_core.papers.straggler.housing.split_runs`).
    config : TokenRingConfig
    latency : LatencyModel, optional
        If given, the realized latency ℓ (Algorithm 1's second output) is accumulated with
        t_ss = Φ_T^{-1}(1 − p), from the same uniforms that decide the skips.
    progress : bool, optional
        Progress over hops, a bar or log lines (:func:`dpdl_core.sim.progress.progress_mode`): a
        study's curve of 300 runs takes tens of minutes in a background worker.
    canary : optional
        A privacy audit's view of the hops (:class:`~dpdl_core.papers.straggler.audit.TokenCanary`):
        its ``gradient(v, grad)`` returns the gradients the visited nodes use (the victim's
        replaced by its canary loss's) and its ``observe(v, before, after, c)`` sees every hop's
        token before and after the update, with the update counter c the token carries.

    Returns
    -------
    TokenRingResult
    """
    cfg = config
    R, n, m, d = splits.z.shape
    sampler = HopSampler(cfg, R, n, d, m)
    rows = np.arange(R)
    weights = splits.mask / splits.mask.sum(axis=2, keepdims=True)  # 1/|D_v| on real rows, 0 on padding
    tau = np.zeros((R, d))  # τ₀ = 0 (line 1)
    c = np.ones(R)  # c − 1 = updates so far (lines 1, 10)
    ell = np.zeros(R) if latency is not None else None
    t_ss = latency.t_ss_for_p(cfg.p) if latency is not None else None
    eval_hops = sorted(set(range(0, cfg.h_max + 1, cfg.eval_every)) | {cfg.h_max})
    acc = [accuracy(tau, splits.x_test, splits.y_test)]
    bar = Progress(cfg.h_max, desc or f"{cfg.scheme} p={cfg.p:g}", "hop", progress=progress)
    for h in range(cfg.h_max):
        v = sampler.nodes(h)
        u, noise, keys = sampler.draws()
        update = u <= 1 - cfg.p  # T ≤ t_ss (line 5)
        if keys is not None:
            # The mini-batch is the batch_size smallest keys of the node's real rows (a set:
            # argpartition finds it in linear time); only its rows are gathered.
            valid = splits.mask[rows, v]
            picked = np.argpartition(np.where(valid, keys, np.inf), cfg.batch_size - 1, axis=1)[:, : cfg.batch_size]
            z = splits.z[rows[:, None], v[:, None], picked]
            w = valid[rows[:, None], picked]
            w = w / w.sum(axis=1, keepdims=True)
        elif cfg.scheme == "ss_ring":
            z, w = splits.z[:, v[0]], weights[:, v[0]]  # one node for every run: a view
        else:
            z, w = splits.z[rows, v], weights[rows, v]
        # ∇ mean log(1 + e^{−y τ·x}) = −mean(y x · σ(−y τ·x)), with z = y x; batched matmuls.
        s = w * expit(-(z @ tau[:, :, None])[:, :, 0])
        grad = -(s[:, None, :] @ z)[:, 0, :]
        if canary is not None:
            grad = canary.gradient(v, grad)
        step = tau - (cfg.zeta / np.sqrt(c))[:, None] * (grad + noise)
        norm = np.sqrt((step * step).sum(axis=1, keepdims=True))
        step *= np.minimum(1.0, cfg.radius / np.maximum(norm, 1e-300))  # Π_W, W = ℓ2 ball
        if canary is not None:
            canary.observe(v, tau, np.where(update[:, None], step, tau), c)
        tau = np.where(update[:, None], step, tau)
        c += update
        if ell is not None:
            ell += latency.chi + np.minimum(latency.dist.ppf(u), t_ss)  # lines 10 and 12
        if (h + 1) % cfg.eval_every == 0 or h + 1 == cfg.h_max:
            acc.append(accuracy(tau, splits.x_test, splits.y_test))
        if (h + 1) % 500 == 0:
            bar.update(500)
    bar.update(cfg.h_max - bar.done)
    bar.close()
    return TokenRingResult(cfg, np.array(eval_hops), np.array(acc), tau, c - 1, ell)
