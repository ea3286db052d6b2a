"""What a user meets when the machine, not the input, stops a command: a full disk or a
read-only folder (one ``error:`` line naming the path, exit 2, and a finished run's rounds kept
in its checkpoint), two report builds at once, and Ctrl-C while ``figures`` executes notebooks
(one short paragraph with the command that resumes, no traceback)."""
import errno
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pandas as pd
import pytest
from test_newcomer import TINY, _sets, assert_clean_error, cli, in_process, needs_kernel

from dpdl_core.runs.config import ExperimentConfig
from dpdl_core.runs.results import ResultStore

ROOT = Path(__file__).resolve().parents[1]


def _disk_full(path):
    return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))


# -- a limit known before training fails before it ---------------------------------------
def test_a_batch_larger_than_an_agents_data_fails_before_training(tmp_path):
    started = time.perf_counter()
    proc = cli("run", "--results", str(tmp_path), *_sets({**TINY, "batch_size": 100000}))
    assert_clean_error(proc, "batch_size=100000 is more than the 100 training samples of the smallest agent",
                       "allowed: batch_size <= 100")
    assert time.perf_counter() - started < 120 and not list(tmp_path.glob("checkpoints/*"))


def test_a_sweep_refuses_a_batch_that_cannot_fit_before_its_first_run(tmp_path):
    from dpdl_core.runs.config import ConfigError
    from dpdl_core.runs.sweep import run_sweep

    fits = ExperimentConfig.from_dict({**TINY, "rounds": 2})
    too_big = ExperimentConfig.from_dict({**TINY, "rounds": 2, "batch_size": 150, "seed": 1})
    with pytest.raises(ConfigError, match=r"batch_size=150 with n_agents=6 needs at least 900 training samples, "
                                          r"and mnist with train_samples=600 has 600 \(about 100 per agent\)"):
        run_sweep([fits, too_big], store=ResultStore(tmp_path), workers=1, progress=False)
    assert not ResultStore(tmp_path).hashes()  # the run that fits did not train first


# -- a finished run that cannot be stored -------------------------------------------------
def test_a_run_whose_result_cannot_be_written_keeps_its_rounds_and_the_rerun_stores_them(tmp_path, monkeypatch,
                                                                                          capsys):
    from dpdl_core.runs import runner

    fields = {**TINY, "rounds": 6, "eval_every": 3}
    args = ["run", "--results", str(tmp_path), *[a for k, v in fields.items() for a in ("--set", f"{k}={v}")]]
    real_save = ResultStore.save

    def full(self, run_hash, *a, **k):
        raise _disk_full(self.path(run_hash))

    monkeypatch.setattr(ResultStore, "save", full)
    code, err = in_process(capsys, *args)
    cfg = ExperimentConfig.from_dict(fields)
    store = ResultStore(tmp_path)
    assert code == 2, err
    line = err.strip().splitlines()[-1]
    assert line.startswith("error: the result of run ") and "No space left on device" in line, err
    assert str(store.path(cfg.hash)) in line and f"Free space in {tmp_path}" in line
    assert f"its 6 computed rounds are kept in the checkpoint {store.checkpoint_path(cfg.hash)}" in line
    assert store.checkpoint_path(cfg.hash).is_file() and not store.has(cfg.hash)

    # Space freed: the rerun trains nothing and stores what the first run computed.
    monkeypatch.setattr(ResultStore, "save", real_save)
    trained = []
    monkeypatch.setattr(runner, "training_rounds", lambda *a, **k: trained.append(a) or iter(()))
    stored = runner.run(cfg, store=store, progress=False)
    assert store.has(cfg.hash) and not store.checkpoint_path(cfg.hash).exists()
    monkeypatch.undo()
    fresh = runner.run(cfg, store=ResultStore(tmp_path / "fresh"), progress=False)
    pd.testing.assert_frame_equal(stored.history, fresh.history)


def test_a_full_disk_anywhere_is_one_error_line_naming_the_path(tmp_path, monkeypatch, capsys):
    from dpdl_core import cli

    target = tmp_path / "runs.csv"

    def full(args):
        raise _disk_full(target)

    monkeypatch.setattr(cli, "_cmd_list", full)
    code, err = in_process(capsys, "list", "fields")
    assert code == 2 and err.strip() == (f"error: cannot write {target}: No space left on device; free space there "
                                         "(or choose a folder you can write) and run the same command again")


# -- the report site: a target that cannot be written, two builds at once -----------------
@pytest.fixture
def figures(tmp_path, monkeypatch):
    """A figures folder with one cpu figure, as `make figures` leaves it."""
    import matplotlib.pyplot as plt

    from dpdl_core.verdicts.plotting import caption, save_figure

    monkeypatch.setenv("DPDL_FIGURES_DIR", str(tmp_path / "figures"))
    fig, ax = plt.subplots(figsize=(2, 2))
    ax.plot([0, 1], [1, 0])
    save_figure(fig, "dpdl_fig01_mnist_bipartite", caption("MNIST subset", "cpu", "N = 4 ring"))
    plt.close(fig)
    return tmp_path / "figures"


@pytest.mark.parametrize("where", ["under a file", "under /proc"])
def test_report_to_a_folder_that_cannot_be_written_names_it(figures, tmp_path, capsys, where):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    out = blocker / "site" if where == "under a file" else Path("/proc/dpdl-report-site")
    code, err = in_process(capsys, "report", "--profile", "cpu", "--figures", str(figures), "--out", str(out))
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith("error: ") and str(out) in err, err


def test_report_on_a_full_disk_names_the_file(figures, tmp_path, monkeypatch, capsys):
    import shutil

    def full(src, dst, *a, **k):
        raise _disk_full(dst)

    monkeypatch.setattr(shutil, "copy2", full)
    out = tmp_path / "site"
    code, err = in_process(capsys, "report", "--profile", "cpu", "--figures", str(figures), "--out", str(out))
    assert code == 2, err
    assert err.count("\n") == 1 and "No space left on device" in err and str(out / "figures") in err, err


def test_two_reports_at_once_one_waits_or_is_refused_by_name(figures, tmp_path, capsys):
    from dpdl_core.verdicts.site import build_lock

    out = tmp_path / "site"
    with build_lock(out):  # another `report` building the same folder
        code, err = in_process(capsys, "report", "--profile", "cpu", "--figures", str(figures), "--out", str(out))
    assert code == 2 and err.count("\n") == 1, err
    assert f"another `report` is building {out}" in err
    code, err = in_process(capsys, "report", "--profile", "cpu", "--figures", str(figures), "--out", str(out))
    assert code == 0 and (out / "index.html").is_file(), err


# -- Ctrl-C while figures executes notebooks ----------------------------------------------
DRIVER = """
import sys
from pathlib import Path
from dpdl_core.verdicts import pipeline
from dpdl_core.cli import main
real = pipeline.execute_notebooks
def in_tmp(profile, kernel, papers=None, only=None, out_dir=None, notebook_dir=None):
    return real(profile, kernel, papers=papers, only=only, out_dir=Path(sys.argv[1]) / "out",
                notebook_dir=Path(sys.argv[1]) / "notebooks")
pipeline.execute_notebooks = in_tmp
sys.exit(main(sys.argv[2:]))
"""


@needs_kernel
def test_ctrl_c_in_figures_prints_one_paragraph_with_the_resume_command(tmp_path):
    folder = tmp_path / "notebooks" / "overview"
    folder.mkdir(parents=True)
    for name in ("a_first", "b_second", "c_third"):
        params = nbformat.v4.new_code_cell("profile = 'cpu'")
        params.metadata["tags"] = ["parameters"]
        nb = nbformat.v4.new_notebook(cells=[params, nbformat.v4.new_code_cell(
            "import time\nprint('started', flush=True)\nfor _ in range(600):\n    time.sleep(0.1)")])
        nb.metadata["kernelspec"] = {"name": "python3", "language": "python", "display_name": "Python 3"}
        nbformat.write(nb, folder / f"{name}.ipynb")
    env = {**os.environ, "DPDL_PROGRESS": "0", "DPDL_FIGURES_DIR": str(tmp_path / "figures")}
    proc = subprocess.Popen([sys.executable, "-c", DRIVER, str(tmp_path), "figures", "--profile", "smoke"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=ROOT,
                            start_new_session=True)
    seen = []
    for line in proc.stdout:
        seen.append(line)
        if line.startswith("[1/3]"):
            break
    time.sleep(8)  # the kernel has started and runs the cell
    os.killpg(proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the whole process group
    out = "".join(seen) + proc.communicate(timeout=120)[0]
    assert proc.returncode == 130, out
    assert "Traceback" not in out and "ERROR" not in out, out
    after = out.split("[1/3]", 1)[1].split("\n", 1)[1].strip()
    assert after.count("\n\n") == 0 and len(after.splitlines()) <= 5, after  # one short paragraph
    assert "interrupted in overview/a_first.ipynb (1/3, profile smoke)" in after, after
    assert "python -m dpdl_core figures --profile smoke --only a_first b_second c_third" in after.replace("\n", " ")


@pytest.fixture
def notebooks_run(tmp_path, monkeypatch):
    """``execute_notebooks`` with papermill replaced by ``notebooks_run.then(source, executed)``
    (no kernel, no plan); ``notebooks_run.calls`` lists the notebooks it was asked to run."""
    import papermill

    from dpdl_core.verdicts import pipeline

    monkeypatch.setattr(pipeline, "_check_kernel", lambda kernel: None)
    monkeypatch.setattr(pipeline, "_planned_seconds", lambda *a: None)
    monkeypatch.setenv("DPDL_FIGURES_DIR", str(tmp_path / "figures"))
    fake = SimpleNamespace(calls=[], then=None)

    def execute(source, executed, **kwargs):
        fake.calls.append(Path(source).stem)
        fake.then(source, executed)

    monkeypatch.setattr(papermill, "execute_notebook", execute)
    real = pipeline.execute_notebooks
    monkeypatch.setattr(pipeline, "execute_notebooks", lambda profile, kernel, papers=None, only=None: real(
        profile, kernel, papers=papers, only=only, out_dir=tmp_path / "out"))
    return fake


TWO_FIGURES = ("--profile", "smoke", "--paper", "dpdl", "--only", "fig01_mnist_bipartite",
               "fig02_mnist_fully_connected")


def test_figures_interrupted_by_papermill_names_the_notebooks_left(notebooks_run, capsys):
    def then(source, executed):
        if len(notebooks_run.calls) == 2:
            raise KeyboardInterrupt
        Path(executed).write_text("{}")

    notebooks_run.then = then
    code, err = in_process(capsys, "figures", *TWO_FIGURES)
    assert code == 130 and "Traceback" not in err, err
    assert "interrupted in dpdl/fig02_mnist_fully_connected.ipynb (2/2, profile smoke)" in err
    assert "python -m dpdl_core figures --profile smoke --paper dpdl --only fig02_mnist_fully_connected" in err


@pytest.mark.parametrize("ename, evalue, expected", [
    ("OSError", "[Errno 28] No space left on device: '/data/figures/cpu/dpdl_fig01.png'",
     "error: cannot write /data/figures/cpu/dpdl_fig01.png: No space left on device"),
    ("ResultNotSaved", "the result of run 0123abcd could not be written to /r/0123abcd.csv.gz: No space left on device",
     "error: the result of run 0123abcd could not be written to /r/0123abcd.csv.gz"),
])
def test_figures_stops_at_a_notebook_that_met_a_full_disk(notebooks_run, capsys, ename, evalue, expected):
    from papermill.exceptions import PapermillExecutionError

    def then(source, executed):
        raise PapermillExecutionError(2, 3, "run(...)", ename, evalue, [])

    notebooks_run.then = then
    code, err = in_process(capsys, "figures", *TWO_FIGURES)
    assert code == 2 and notebooks_run.calls == ["fig01_mnist_bipartite"], (code, notebooks_run.calls, err)
    assert err.count("\n") == 1 and err.startswith(expected), err
