"""Test set-up: the offline mirror (CI: ../shared/data), no progress bars."""
import os
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
_SHARED = ROOT.parent / "shared" / "data"
if not os.environ.get("DPDL_DATA_MIRROR") and (_SHARED / "mnist.npz").exists():
    os.environ["DPDL_DATA_MIRROR"] = str(_SHARED)
os.environ.setdefault("DPDL_PROGRESS", "0")
torch.set_num_threads(min(2, torch.get_num_threads()))
SESSION_THREADS = torch.get_num_threads()


@pytest.fixture(autouse=True)
def _session_threads():
    """Every test starts with the session's torch threads: a command run in this process
    (`study run` sets one thread) would otherwise change the float bits of every test after
    it, and the platform pins were made at this count."""
    yield
    torch.set_num_threads(SESSION_THREADS)


@pytest.fixture(scope="session")
def mnist():
    from dpdl_core.sim.data import load_dataset

    return load_dataset("mnist")


@pytest.fixture(scope="session")
def cifar():
    from dpdl_core.sim.data import load_dataset

    return load_dataset("cifar10")


@pytest.fixture
def store(tmp_path):
    from dpdl_core.runs.results import ResultStore

    return ResultStore(tmp_path / "results")


def pytest_terminal_summary(terminalreporter):
    """Print what the robustness tests tried (tests/guarantees.py)."""
    from guarantees import COUNTS

    if COUNTS:
        terminalreporter.section("guarantees")
        for name, n in sorted(COUNTS.items()):
            terminalreporter.write_line(f"{name}: {n}")
