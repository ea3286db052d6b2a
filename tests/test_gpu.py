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


def _history(config: dict):
    from dpdl_core import run
    from dpdl_core.config import ExperimentConfig

    res = run(ExperimentConfig.from_dict(config), save=False, progress=False)
    return res.history.sort_values(["metric", "round", "agent"]).reset_index(drop=True)


@pytest.mark.parametrize("case", sorted(CASES))
def test_cuda_run_matches_cpu(case):
    cpu = _history({**CASES[case], "device": "cpu"})
    gpu = _history({**CASES[case], "device": "cuda"})
    assert list(cpu["metric"]) == list(gpu["metric"])
    # Different kernels and summation orders: equal to float tolerance, not bit for bit.
    torch.testing.assert_close(torch.tensor(gpu["value"].values), torch.tensor(cpu["value"].values), rtol=1e-3, atol=1e-3)


def test_stacked_evaluator_on_cuda():
    from dpdl_core.engine import Engine
    from dpdl_core.models import build_model
    from dpdl_core.papers.pdsl.evaluation import StackedEvaluator

    eng = Engine(build_model("pdsl_mnist", "mnist", seed=0), device="cuda")
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(70, 1, 28, 28, generator=g), torch.randint(0, 10, (70,), generator=g)
    X = (eng.initial_params(4).cpu() + 0.1 * torch.randn(4, eng.P, generator=g)).cuda()
    torch.testing.assert_close(StackedEvaluator(eng, x, y, image_batch=32)(X), eng.evaluate(X, x, y)[1])
