"""The privacy audit of the token ring: how much one node's data shows in what another node
sees, against the network-DP ε of Theorems 2 and 3.

The paper's guarantee is node-level network DP (Definition 3): a node v that sees the token
whenever it visits v learns little about the *whole* dataset of another node u (D ∼_u D'
differ in D_u only). Each update adds N(0, σ²I) with σ = k√(8 log(1.25/δ))/ε (footnote 3),
the Gaussian mechanism for a gradient that one node's data can move by 2k (f_u is
k-Lipschitz, so ‖∇f_u‖ ≤ k).

The audit (Steinke, Nasr & Jagielski 2023; :mod:`dpdl_core.sim.audit`) runs ``runs``
independent token rings at once, one canary a run: in run r the victim u holds, with
probability 1/2 each, one of two neighbouring datasets whose loss is linear,
f_u(τ) = ±k⟨e, τ⟩ (gradients ±k·e, e a fixed unit direction). That pair is k-Lipschitz,
convex and 0-smooth, so Theorems 2 and 3 cover it, and it moves u's gradient by exactly the
2k the noise is calibrated to: the worst case the guarantee must hold against. The other
nodes keep their real data, the same split in every run (the auditor may know them; a DP
guarantee holds for every D_{−u}). Independent runs with one canary each are one mechanism
that is (ε, δ)-DP in every canary, so the one-run bound applies as it is.

The observer is another node v (:class:`TokenCanary`): it sees the token when it arrives
(with the update counter c it carries) and knows what it sends on. It scores a run by the
token's drop along e from each departure to the next arrival, each passage divided by its
step size ζ/√c, summed: the victim's update moves the token by ∓η·k·e, the n − 1 updates
of a passage add noise of std σ·η each. The scores give the audited ε at the spec's
confidence (one-run and f-DP bounds, the best k of the declared grid).

δ: Theorems 2 and 3 state (ε_ss, δ + δ')-NDP, δ' bounding the chance that a node updates more
than h̃ times (a Chernoff bound). A node is visited once a round on either ring, at most
⌈h_max/n⌉ ≤ h̃ times, so that event never happens, the proof's composition over at most h̃
updates covers every run, and the audit tests ε_ss at δ alone. Beside it the LDP accountant:
the victim's K updates as K Gaussian mechanisms of sensitivity 2k, composed exactly (μ-GDP
with μ = 2k√K/σ): an upper bound for any observer, one who sees every message included.

Results: ``results/audit/straggler-<spec hash>.json``, a
:class:`~dpdl_core.runs.slots.JsonSlot` read by the answer's audit table with the other
mechanisms'. docs/privacy.md, "The token ring (network DP)", says how to read it. Command
line: ``python -m dpdl_core.papers.straggler.audit --help``.
"""
from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import math
import sys
import time
from dataclasses import dataclass

import numpy as np

from ...runs import AUDIT_DIR, JsonSlot, ResultStore
from ...sim import (
    DataUnavailableError,
    best_k_epsilon_lower_bound,
    best_k_fdp_epsilon_lower_bound,
    check_choice,
    check_int,
    draw_inclusion,
    gdp_epsilon,
)
from .housing import RunSplits
from .theorems import SCHEMES, PaperParams, thm2_epsilon, thm3_as_printed, thm3_diagnostic
from .token_ring import TokenRingConfig, run_token_ring

__all__ = ["AUDIT_DATA", "TokenAuditSpec", "TokenCanary", "main", "token_audit", "token_audit_cached"]

SCHEME_NAMES = {"ss_ring": "SS-Ring", "ss_rand_ring": "SS-Rand-Ring"}
# The other nodes' data of every audit (:func:`_load_splits`: the full file or nothing).
AUDIT_DATA = "California housing (OpenML 823), 20,640 rows, d = 8"


@dataclass(frozen=True)
class TokenAuditSpec:
    """One audit of Algorithm 1 (defaults: the paper's n = 10, p = 1e-4, batches of 100).

    Attributes
    ----------
    scheme : {"ss_ring", "ss_rand_ring"}
    p : float
        Skipping probability.
    h_max : int
        Hops of every run.
    runs : int
        Independent runs, one canary each (the audit's m).
    victim, observer : int
        The node whose dataset is the canary, and the node that scores it (distinct).
    confidence : float
        Of the audited lower bound.
    seed : int
        Of the runs' hops, the inclusion coins and the direction e.
    batch_size : int
        Mini-batch of the other nodes' updates.
    """

    scheme: str = "ss_rand_ring"
    p: float = 1e-4
    h_max: int = 10_000
    runs: int = 1000
    victim: int = 0
    observer: int = 1
    confidence: float = 0.95
    seed: int = 0
    batch_size: int = 100

    def __post_init__(self):
        check_choice(self, "scheme", SCHEMES)
        if not 0 <= self.p < 1:
            raise ValueError(f"p={self.p!r} must be in [0, 1)")
        for name, low in (("h_max", 1), ("runs", 2), ("victim", 0), ("observer", 0), ("seed", 0),
                          ("batch_size", 1)):
            check_int(self, name, low)
        if self.victim == self.observer:
            raise ValueError(f"victim and observer are both node {self.victim}: network DP is about another node")
        if not 0 < self.confidence < 1:
            raise ValueError(f"confidence={self.confidence!r} must be in (0, 1)")

    def hash(self) -> str:
        """16 hex digits of the spec's fields (with the paper's constants it runs under)."""
        text = json.dumps({**dataclasses.asdict(self), "params": dataclasses.asdict(PaperParams())}, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


class TokenCanary:
    """The canary and its observer inside :func:`~.token_ring.run_token_ring` (its ``canary``).

    Parameters
    ----------
    included : (R,) bool
        Run r's victim holds the "+" dataset (gradient +k·e) if True, the "−" one otherwise.
    direction : (d,) unit vector e.
    victim, observer : int
    k : float
        Lipschitz constant: the canary gradients' norm.
    zeta : float
        The step-size parameter (η = ζ/√c), by which the observer weighs each passage.
    """

    def __init__(self, included: np.ndarray, direction: np.ndarray, victim: int, observer: int, k: float,
                 zeta: float):
        R = len(included)
        self.sign = np.where(included, 1.0, -1.0)
        self.e, self.victim, self.observer, self.k, self.zeta = direction, victim, observer, k, zeta
        self.scores = np.zeros(R)
        self.victim_updates = np.zeros(R, dtype=np.int64)
        self._departed = np.zeros((R, len(direction)))
        self._seen = np.zeros(R, dtype=bool)

    def gradient(self, v: np.ndarray, grad: np.ndarray) -> np.ndarray:
        """The hop's gradients with the victim's replaced by its canary loss's, ±k·e."""
        at = v == self.victim
        if not at.any():
            return grad
        grad = grad.copy()
        grad[at] = self.sign[at, None] * self.k * self.e
        return grad

    def observe(self, v: np.ndarray, before: np.ndarray, after: np.ndarray, c: np.ndarray) -> None:
        """Count the victim's updates; at the observer's hops, score the passage that ends there
        (the drop along e since the observer last sent the token on, times √c/ζ) and keep what
        it sends on."""
        self.victim_updates += (v == self.victim) & (before != after).any(axis=1)
        at = v == self.observer
        if not at.any():
            return
        drop = (self._departed[at] - before[at]) @ self.e
        self.scores[at] += np.where(self._seen[at], drop * np.sqrt(c[at]) / self.zeta, 0.0)
        self._departed[at] = after[at]
        self._seen[at] = True


def _shared_splits(splits: RunSplits, runs: int) -> RunSplits:
    """Run 0's split seen by ``runs`` runs (views, no copies): the auditor fixes D_{−u}."""
    return RunSplits(*(np.broadcast_to(a[:1], (runs, *a.shape[1:])) for a in
                       (splits.z, splits.mask, splits.x_test, splits.y_test)))


def token_audit(spec: TokenAuditSpec, splits: RunSplits, params: PaperParams = PaperParams(),
                sigma: float | None = None, progress: bool | None = None) -> dict:
    """Run the audit of ``spec`` on the nodes' data of ``splits`` (its first run's split).

    Parameters
    ----------
    spec : TokenAuditSpec
    splits : RunSplits
        The other nodes' data (:func:`~.housing.split_runs`); the victim's rows are not used.
    params : PaperParams
        n must match the splits; ε, δ, k, ζ fix σ, the theorems' ε_ss and the accountant.
    sigma : float, optional
        Noise std in place of the paper's (tests: σ = 0 measures the audit's power); the
        accountant's ε is then for that σ, and the theorems' ε_ss no longer applies (NaN).
    progress : bool, optional
        Progress over hops.

    Returns
    -------
    dict
        The stored record (see the module docstring): the audited ε (one-run and f-DP) with
        its counts, the theorem's ε_ss (nominal), the LDP accountant's ε, and the run's facts.
    """
    if splits.n_nodes != params.n:
        raise ValueError(f"the splits have {splits.n_nodes} nodes, the paper's constants n = {params.n}")
    if max(spec.victim, spec.observer) >= params.n:
        raise ValueError(f"victim {spec.victim} and observer {spec.observer} must be nodes 0-{params.n - 1}")
    start = time.perf_counter()
    rng = np.random.default_rng([spec.seed, 2])  # apart from the hops' stream [seed, 1]
    included = draw_inclusion(spec.runs, rng)
    e = rng.standard_normal(splits.z.shape[-1])
    e /= np.linalg.norm(e)
    noise = params.sigma if sigma is None else float(sigma)
    canary = TokenCanary(included, e, spec.victim, spec.observer, params.k, params.zeta)
    config = TokenRingConfig(scheme=spec.scheme, p=spec.p, h_max=spec.h_max, zeta=params.zeta, sigma=noise,
                             radius=params.radius, batch_size=spec.batch_size, eval_every=spec.h_max, seed=spec.seed)
    result = run_token_ring(_shared_splits(splits, spec.runs), config, progress=progress, canary=canary,
                            desc=f"audit {SCHEME_NAMES[spec.scheme]} p={spec.p:g}")
    one_run = best_k_epsilon_lower_bound(canary.scores, included, params.delta, spec.confidence)
    fdp = best_k_fdp_epsilon_lower_bound(canary.scores, included, params.delta, spec.confidence)
    K = int(canary.victim_updates.max())
    mu = 2 * params.k * math.sqrt(K) / noise if noise > 0 else math.inf
    theorem = thm2_epsilon if spec.scheme == "ss_ring" else thm3_as_printed
    paper_noise = sigma is None
    return {
        "algorithm": spec.scheme,
        "paper": "straggler",
        "mechanism": f"{SCHEME_NAMES[spec.scheme]} (token ring, p = {spec.p:g})",
        "config": {"seed": spec.seed, "algo": {}, "scheme": spec.scheme, "p": spec.p, "h_max": spec.h_max,
                   "batch_size": spec.batch_size, "sigma": noise, "n": params.n, "zeta": params.zeta,
                   "radius": params.radius},
        "spec": {"kind": "gradient", **dataclasses.asdict(spec)},
        "sigma_rule": "paper" if paper_noise else "fixed",
        "channel": "token",
        "epsilon_nominal": float(theorem(spec.h_max, spec.p, params)) if paper_noise else math.nan,
        "epsilon_nominal_source": ("Theorem 2" if spec.scheme == "ss_ring" else "Theorem 3 as printed"),
        "epsilon_theorem3_diagnostic": (float(thm3_diagnostic(spec.h_max, spec.p, params))
                                        if paper_noise and spec.scheme == "ss_rand_ring" else None),
        "epsilon_accountant": float(gdp_epsilon(mu, params.delta)) if math.isfinite(mu) else math.inf,
        "accountant": "LDP: the victim's updates as Gaussian mechanisms of sensitivity 2k, composed exactly",
        "epsilon_audit": one_run.epsilon,
        "epsilon_audit_informed": one_run.epsilon,
        "epsilon_audit_fdp": fdp.epsilon,
        "epsilon_audit_fdp_informed": fdp.epsilon,
        "audit": one_run.to_dict(),
        "audit_informed": one_run.to_dict(),
        "rounds": spec.h_max // params.n,
        "hops": spec.h_max,
        "victim_updates": K,
        "canaries_in": int(included.sum()),
        "q": 1.0,
        "sigma": noise,
        "mean_score_in": float(canary.scores[included].mean()) if included.any() else None,
        "mean_score_out": float(canary.scores[~included].mean()) if (~included).any() else None,
        "final_accuracy": float(result.accuracy[-1].mean()),
        "seconds": time.perf_counter() - start,
        "config_hash": spec.hash(),
        "spec_hash": spec.hash(),
    }


def token_audit_cached(spec: TokenAuditSpec, splits_loader, root=None, force: bool = False,
                       progress: bool | None = None) -> dict:
    """:func:`token_audit`, stored at ``<root>/straggler-<spec hash>.json`` (root: the audit
    folder, ``results/audit``) under its slot's lease; a stored spec is read, not rerun,
    unless ``force``. ``splits_loader()`` gives the data, called only when the audit runs."""
    slot = JsonSlot(ResultStore(root or AUDIT_DIR), f"straggler-{spec.hash()}", ".")
    with slot.held(force) as found:
        if found is not None:
            return found
        slot.finish(token_audit(spec, splits_loader(), progress=progress))
    return slot.stored()


def _parser() -> argparse.ArgumentParser:
    d = TokenAuditSpec()
    p = argparse.ArgumentParser(
        prog="python -m dpdl_core.papers.straggler.audit",
        description="Audit the token ring's network DP: independent runs of Algorithm 1 on California housing, "
                    "one canary a run (the victim node's whole dataset, a linear loss of gradient +k e or -k e), "
                    "scored by another node from the token it sees; the audited epsilon (a lower bound) beside "
                    "Theorem 2's or 3's epsilon_ss and the LDP accountant's (an upper bound). Stored in "
                    "results/audit/.")
    p.add_argument("--scheme", choices=SCHEMES, default=d.scheme, help=f"default {d.scheme}")
    p.add_argument("--p", type=float, default=d.p, help=f"skipping probability (default {d.p:g})")
    p.add_argument("--h-max", type=int, default=d.h_max, help=f"hops per run (default {d.h_max:,})")
    p.add_argument("--runs", type=int, default=d.runs, help=f"runs, one canary each (default {d.runs:,})")
    p.add_argument("--victim", type=int, default=d.victim, help=f"node holding the canary (default {d.victim})")
    p.add_argument("--observer", type=int, default=d.observer, help=f"node scoring it (default {d.observer})")
    p.add_argument("--seed", type=int, default=d.seed, help=f"default {d.seed}")
    p.add_argument("--confidence", type=float, default=d.confidence, help=f"default {d.confidence}")
    p.add_argument("--root", default=None, help=f"where results go (default {AUDIT_DIR})")
    p.add_argument("--force", action="store_true", help="rerun a stored audit")
    return p


def _load_splits() -> RunSplits:
    from .housing import CAL_HOUSING_ROWS, load_cal_housing, split_runs

    data = load_cal_housing()
    if len(data.y) != CAL_HOUSING_ROWS:
        raise ValueError(f"{data.meta['source']} has {len(data.y)} rows, not the full {CAL_HOUSING_ROWS:,}")
    return split_runs(data, 1, n_nodes=PaperParams().n)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        spec = TokenAuditSpec(scheme=args.scheme, p=args.p, h_max=args.h_max, runs=args.runs, victim=args.victim,
                              observer=args.observer, seed=args.seed, confidence=args.confidence)
    except ValueError as exc:
        _parser().error(str(exc))
    try:
        out = token_audit_cached(spec, _load_splits, args.root, force=args.force, progress=True)
    except (DataUnavailableError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\naudit stopped before it finished; nothing was stored: run the same command again",
              file=sys.stderr)
        return 130
    print(f"{out['mechanism']}, {out['hops']:,} hops, {spec.runs:,} runs: {out['epsilon_nominal_source']} "
          f"eps_ss {out['epsilon_nominal']:.3g}, LDP accountant eps {out['epsilon_accountant']:.3g}, audited eps "
          f">= {out['epsilon_audit']:.2f} (f-DP {out['epsilon_audit_fdp']:.2f}) at {spec.confidence:.0%} "
          f"({out['audit']['correct']}/{out['audit']['guesses']} right, {out['seconds']:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
