"""The straggler paper's study (``make studies PAPER=straggler``): Fig. 2's lower panels on the
paper's data set.

The paper's [39] is the California housing set (OpenML 823, d = 8; ``cal_housing.data``),
not the 13-feature Boston file the ``cpu`` figure falls back to. Each curve of the lower
panels is one stored result: Algorithm 1 (SS-Ring or SS-Rand-Ring, skipping probability p)
for 100 independent runs (seeds 0-99: each run its own 80/20 split and split over n = 10
nodes), mini-batches of 100, 50,000 hops (spec §5.6), test accuracy every 100 hops. The
upper panels are analytic and need no study.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ...studies import Job, Study, StudyRun
from .figures import PROBABILITIES
from .theorems import SCHEMES, PaperParams

__all__ = ["CURVE_FUNCTION", "curve_spec", "study", "token_ring_curve"]

CURVE_FUNCTION = "dpdl_core.papers.straggler.study:token_ring_curve"
# Measured here: about 6 s per 1,000 hops for 100 runs with batches of 100 on one core.
_SECONDS_PER_KILOHOP = 6.0


def curve_spec(scheme: str, p: float, *, n_runs: int = 100, hops: int = 50_000, eval_every: int = 100,
               batch_size: int = 100, seed: int = 0) -> dict:
    """The JSON spec of one lower-panel curve (every constant spelled out, so it is hashed)."""
    params = PaperParams()
    return {"dataset": "cal_housing", "scheme": scheme, "p": p, "n_runs": n_runs, "hops": hops,
            "eval_every": eval_every, "batch_size": batch_size, "n_nodes": params.n, "test_fraction": 0.2,
            "seed": seed, "zeta": params.zeta, "sigma": params.sigma, "radius": params.radius}


def token_ring_curve(spec: dict) -> tuple[pd.DataFrame, dict]:
    """Run one curve of ``spec`` (see :func:`curve_spec`): every run's test accuracy per hop.

    Returns the history (round = hop, agent = run, metric ``test_acc``; metric ``updates``
    at the last hop) and metadata naming the data.
    """
    from .housing import CAL_HOUSING_ROWS, load_cal_housing, split_runs
    from .token_ring import TokenRingConfig, run_token_ring

    data = load_cal_housing()
    if len(data.y) != CAL_HOUSING_ROWS:
        raise ValueError(f"{data.meta['source']} has {len(data.y)} rows, not the full {CAL_HOUSING_ROWS:,}")
    splits = split_runs(data, spec["n_runs"], n_nodes=spec["n_nodes"], test_fraction=spec["test_fraction"],
                        seed=spec["seed"])
    cfg = TokenRingConfig(scheme=spec["scheme"], p=spec["p"], h_max=spec["hops"], zeta=spec["zeta"],
                          sigma=spec["sigma"], radius=spec["radius"], batch_size=spec["batch_size"],
                          eval_every=spec["eval_every"], seed=spec["seed"])
    res = run_token_ring(splits, cfg)
    E, R = res.accuracy.shape
    hist = pd.DataFrame({"round": np.repeat(res.hops, R), "agent": np.tile(np.arange(R), E), "metric": "test_acc",
                         "value": res.accuracy.reshape(-1)})
    upd = pd.DataFrame({"round": int(res.hops[-1]), "agent": np.arange(R), "metric": "updates", "value": res.updates})
    meta = {"dataset_label": f"{data.label}, d = {data.d}", "dataset": {"name": "cal_housing", "subset": False,
            "rows": int(len(data.y)), "source": data.meta["source"]}, "diverged": False}
    return pd.concat([hist, upd], ignore_index=True), meta


def study() -> Study:
    """Six curves (two schemes × three p), 100 runs each, on California housing."""
    runs = []
    for scheme in SCHEMES:
        for p in PROBABILITIES:
            spec = curve_spec(scheme, p)
            runs.append(StudyRun(f"cal_housing/{scheme}/p{p:g}", "Fig. 2 lower panels: accuracy against latency",
                                 2, Job(CURVE_FUNCTION, spec), _SECONDS_PER_KILOHOP * spec["hops"] / 1000))
    return Study(paper="straggler", title="Straggler study (Fig. 2 lower panels, California housing, d = 8)",
                 runs=tuple(runs), order=1,
                 notes="100 runs per curve, 50,000 hops, batches of 100, n = 10, 80/20 split (the paper's scale).")


# -- rendering (from the store alone) --------------------------------------------------------

def curves(store=None) -> pd.DataFrame:
    """Per stored curve and evaluated hop: mean test accuracy over the runs and its standard
    error (the lower panels' lines and bands)."""
    s = study()
    store = store or s.store()
    frames = []
    for r in s.ordered():
        if not store.has(r.hash):
            continue
        _, hist = store.load_run(r.hash)
        acc = hist[hist["metric"] == "test_acc"].groupby("round")["value"]
        frames.append(pd.DataFrame({"scheme": r.work.spec["scheme"], "p": r.work.spec["p"],
                                    "hop": acc.mean().index, "accuracy": acc.mean().to_numpy(),
                                    "se": (acc.std(ddof=1) / np.sqrt(acc.count())).to_numpy(),
                                    "runs": acc.count().to_numpy()}))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
        columns=["scheme", "p", "hop", "accuracy", "se", "runs"])


def table(store=None) -> pd.DataFrame:
    """Final mean accuracy (± SE over the 100 runs) of every stored curve."""
    c = curves(store)
    if c.empty:
        return c
    return c[c["hop"] == c.groupby(["scheme", "p"])["hop"].transform("max")].reset_index(drop=True)


def figure(store=None):
    """Mean test accuracy (±1 SE) against hops of every stored curve (the lower panels before
    each latency model's per-hop latency rescales the axis)."""
    import matplotlib.pyplot as plt

    from .figures import COLORS, SCHEME_NAMES

    c = curves(store)
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for (scheme, p), g in c.groupby(["scheme", "p"]):
        ls = "-" if scheme == "ss_ring" else "--"
        ax.plot(g["hop"], g["accuracy"], ls=ls, color=COLORS.get(p), label=f"{SCHEME_NAMES[scheme]} p={p:g}")
        ax.fill_between(g["hop"], g["accuracy"] - g["se"], g["accuracy"] + g["se"], color=COLORS.get(p), alpha=0.2)
    ax.set(xlabel="hops", ylabel="mean test accuracy", xscale="symlog")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig
