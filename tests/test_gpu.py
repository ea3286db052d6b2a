"""`device: cuda` runs everything the CPU runs: every pinned case (every algorithm, both
datasets, private and not) on the GPU gives the CPU's history to float tolerance, and the
PDSL evaluator agrees with the engine there. Skipped, with a message, where no GPU exists;
the package never needs one."""
import json
from pathlib import Path

import pytest
import torch

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU on this machine: GPU tests skipped")

CASES = json.loads((Path(__file__).resolve().parent / "pinned" / "cases.json").read_text())


def assert_histories_close(cpu, gpu, eval_samples: int):
    """Equal to float tolerance, metric by metric (different kernels and summation orders:
    not bit for bit). An accuracy may differ by two test images whose top two logits are
    within rounding of each other, so argmax picks differently on the two devices."""
    assert list(cpu["metric"]) == list(gpu["metric"])
    report = []
    for metric, c in cpu.groupby("metric"):
        g = gpu.loc[c.index, "value"].to_numpy()
        diff = abs(g - c["value"].to_numpy())
        if metric.endswith("acc"):
            bad = diff > 2 / eval_samples + 1e-6
        else:
            bad = diff > 1e-3 + 1e-3 * abs(c["value"].to_numpy())
        if bad.any():
            report.append(f"{metric}: {bad.sum()} of {len(c)} differ, max |cuda - cpu| {diff.max():.3g}")
    assert not report, "cuda history differs from cpu: " + "; ".join(report)


def _history(config: dict):
    from dpdl_core import run
    from dpdl_core.runs.config import ExperimentConfig

    res = run(ExperimentConfig.from_dict(config), save=False, progress=False)
    return res.history.sort_values(["metric", "round", "agent"]).reset_index(drop=True)


@pytest.mark.parametrize("case", sorted(CASES))
def test_cuda_run_matches_cpu(case):
    cpu = _history({**CASES[case], "device": "cpu"})
    gpu = _history({**CASES[case], "device": "cuda"})
    assert_histories_close(cpu, gpu, CASES[case]["eval_samples"])


def test_stacked_evaluator_on_cuda():
    from dpdl_core.papers.pdsl.evaluation import StackedEvaluator
    from dpdl_core.sim.engine import Engine
    from dpdl_core.sim.models import build_model

    eng = Engine(build_model("pdsl_mnist", "mnist", seed=0), device="cuda")
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(70, 1, 28, 28, generator=g), torch.randint(0, 10, (70,), generator=g)
    X = (eng.initial_params(4).cpu() + 0.1 * torch.randn(4, eng.P, generator=g)).cuda()
    torch.testing.assert_close(StackedEvaluator(eng, x, y, image_batch=32)(X), eng.evaluate(X, x, y)[1])


def _first_smoke_configs():
    """The first smoke run of every run group of every paper (PDSL, LEASGD and DPDL's own
    sweeps): each paper's algorithms and models, a few rounds each."""
    from dpdl_core.runs.plan import paper_groups

    out = []
    for paper in ("dpdl", "pdsl", "leasgd"):
        for group in paper_groups(paper, "smoke"):
            if group.configs:
                out.append(pytest.param(group.configs[0], id=f"{paper}-{group.name}"))
    return out


@pytest.mark.parametrize("config", _first_smoke_configs())
def test_cuda_paper_smoke_run_matches_cpu(config):
    import dataclasses

    from dpdl_core import run

    hist = {}
    for device in ("cpu", "cuda"):
        res = run(dataclasses.replace(config, device=device), save=False, progress=False)
        hist[device] = res.history.sort_values(["metric", "round", "agent"]).reset_index(drop=True)
    assert_histories_close(hist["cpu"], hist["cuda"], config.eval_samples)
