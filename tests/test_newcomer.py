"""What a newcomer meets (issue 24): outputs kept per profile, progress off a terminal, one
clear message and exit code per mistake (never a traceback without ``--debug``), nothing
silent, results readable back from the command line, and a README whose quick commands run.

Most cases run the real command line in a subprocess, as a user would, with
``DPDL_PROGRESS=0`` where progress is not the point."""
import json
import os
import re
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import nbformat
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
KERNEL = "dpdl-replication"
# The smallest run that trains for real (a pinned case's scale).
TINY = {"algorithm": "dp_dpsgd", "dataset": "mnist", "train_samples": 600, "eval_samples": 200, "n_agents": 6,
        "batch_size": 16, "eval_every": 10, "epsilon": 0.5, "sigma_rule": "authors_code"}


def _sets(fields: dict) -> list[str]:
    return [a for k, v in fields.items() for a in ("--set", f"{k}={v}")]


def cli(*args: str, env: dict | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    """``python -m dpdl_core ARGS`` as a user runs it (progress off unless ``env`` says)."""
    full = {**os.environ, "DPDL_PROGRESS": "0", **(env or {})}
    return subprocess.run([sys.executable, "-m", "dpdl_core", *args], capture_output=True, text=True, env=full,
                          cwd=ROOT, timeout=timeout)


def assert_clean_error(proc: subprocess.CompletedProcess, *phrases: str, code: int = 2) -> None:
    """Exit ``code``, every phrase in stderr, and no traceback anywhere."""
    assert proc.returncode == code, (proc.returncode, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr + proc.stdout
    for phrase in phrases:
        assert phrase in proc.stderr, (phrase, proc.stderr)


def kernel_installed() -> bool:
    from jupyter_client.kernelspec import KernelSpecManager

    return KERNEL in KernelSpecManager().find_kernel_specs()


needs_kernel = pytest.mark.skipif(not kernel_installed(), reason=f"Jupyter kernel {KERNEL} not registered (make setup)")


# -- start-up -----------------------------------------------------------------------------
def test_help_answers_without_importing_torch():
    # Not timed (timings drift +-50% on these machines): what makes it answer within a second
    # (0.1 s measured) is that nothing heavy is imported.
    code = ("import sys; from dpdl_core.cli import main\n"
            "try:\n    main(['run', '--help'])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in ('torch', 'pandas', 'numpy') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().endswith("[]"), proc.stdout  # nothing heavy imported
    assert "python -m dpdl_core list fields|algorithms|datasets|topologies" in " ".join(proc.stdout.split())


def test_an_unknown_field_is_rejected_before_torch_loads():
    code = ("import sys; from dpdl_core.cli import main\n"
            "code = main(['run', '--set', 'bogus=1'])\n"
            "print(code, sorted(m for m in ('torch', 'pandas', 'numpy') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert proc.stdout.strip() == "2 []", (proc.stdout, proc.stderr)
    assert "unknown config field(s) ['bogus']" in proc.stderr and "Traceback" not in proc.stderr


def test_list_shows_what_run_accepts():
    fields = cli("list", "fields")
    assert fields.returncode == 0 and re.search(r"^epsilon\s", fields.stdout, re.M) and "--set" in fields.stdout
    algorithms = cli("list", "algorithms")
    assert algorithms.returncode == 0 and "dp_dpsgd" in algorithms.stdout and "DP-DPSGD" in algorithms.stdout
    assert "mnist" in cli("list", "datasets").stdout
    assert cli("list", "topologies").stdout.split() == ["fully_connected", "bipartite", "ring"]


def _without_make_flags() -> dict:
    return {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES")}


def test_make_figures_takes_papers_with_commas_or_spaces():
    for paper in ("dpdl,pdsl", "dpdl pdsl"):
        # Under `make test` the parent make's flags would make this one print directory lines.
        proc = subprocess.run(["make", "--no-print-directory", "-n", "figures", f"PAPER={paper}"],
                              capture_output=True, text=True, cwd=ROOT, env=_without_make_flags())
        assert proc.returncode == 0, proc.stderr
        assert "--paper dpdl pdsl" in proc.stdout.splitlines()[-1], proc.stdout


def test_make_figures_renders_the_committed_studies_unless_a_profile_is_named():
    """The main job gives the answer first: by default it renders the committed paper-scale
    studies (computing nothing); a named profile computes at that scale."""
    def last(*args):
        proc = subprocess.run(["make", "--no-print-directory", "-n", "figures", *args], capture_output=True,
                              text=True, cwd=ROOT, env=_without_make_flags())
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.splitlines()[-1]

    assert "figures --committed" in last() and "--profile" not in last()
    assert "--profile cpu" in last("PROFILE=cpu") and "--committed" not in last("PROFILE=cpu")


def test_the_dpdl_command_is_installed():
    dpdl = Path(sys.executable).parent / "dpdl"
    if not dpdl.exists():
        pytest.skip("package not installed with its scripts (pip install -e .)")
    proc = subprocess.run([str(dpdl), "--help"], capture_output=True, text=True)
    assert proc.returncode == 0 and "results" in proc.stdout


# -- user errors: one line, exit 2, no traceback ---------------------------------------
def test_a_bad_field_is_one_line_and_debug_shows_the_traceback():
    assert_clean_error(cli("run", "--set", "no_such_field=1"), "no_such_field")
    proc = cli("run", "--set", "no_such_field=1", "--debug")
    assert proc.returncode != 0 and "Traceback" in proc.stderr


def test_a_stray_argument_shows_its_commands_usage_and_a_bare_paper_name_its_option():
    proc = cli("study", "plan", "pdsl")
    assert_clean_error(proc, "usage: python -m dpdl_core study", "unrecognized arguments: pdsl",
                       "papers are named with --paper, e.g. --paper pdsl")
    proc = cli("answer", "pdsl")  # `answer` takes no papers: no hint
    assert_clean_error(proc, "usage: python -m dpdl_core answer", "unrecognized arguments: pdsl")
    assert "--paper" not in proc.stderr


def test_study_options_are_checked_before_any_work():
    assert_clean_error(cli("study", "plan", "--key", "x", "--threads", "2"),
                       "--key, --threads only apply to `study run`")
    for option, value in (("--max-runs", "0"), ("--threads", "-2"), ("--max-runs", "two")):
        assert_clean_error(cli("study", "run", option, value), f"argument {option}: must be a whole number of at "
                           f"least 1, got '{value}'")


def test_paper_lists_take_commas_like_make():
    spaced, commas = cli("study", "plan", "--paper", "straggler", "leasgd"), cli("study", "plan", "--paper",
                                                                                 "straggler,leasgd")
    assert spaced.returncode == commas.returncode == 0, commas.stderr
    assert commas.stdout == spaced.stdout and "straggler" in commas.stdout and "leasgd" in commas.stdout


def in_process(capsys, *args: str) -> tuple[int, str]:
    """``main(ARGS)`` in this process (argparse's exits included): (exit code, stderr)."""
    from dpdl_core.cli import main

    try:
        code = main(list(args))
    except SystemExit as exc:
        code = exc.code
    return code, capsys.readouterr().err


@pytest.fixture
def no_notebooks(monkeypatch):
    """Fail at once if a command starts executing notebooks (hours for every paper)."""
    from dpdl_core.verdicts import pipeline

    def refuse(*_, **__):
        raise AssertionError("notebooks were started")

    monkeypatch.setattr(pipeline, "execute_notebooks", refuse)


@pytest.mark.parametrize("args, phrase", [
    (("figures", "--paper", ""), "--paper '' names no paper"),
    (("figures", "--paper", ","), "--paper ',' names no paper"),
    (("plan", "--paper", " , "), "names no paper"),
    (("study", "plan", "--paper", ""), "names no paper"),
    (("figures", "--paper", "dpdl", "--only"), "argument --only: expected at least one argument"),
    (("figures", "--only", ""), "--only names no notebook"),
    (("figures", "--committed", "--profile", "cpu"), "--committed renders the committed paper-scale studies"),
    (("figures", "--committed", "--only", "fig01_mnist_bipartite"), "drop --only and --profile"),
    (("study", "plan", "--paper"), "argument --paper: expected at least one argument"),
    (("run", "--print-config", ""), "argument config: must not be empty"),
    (("run", "--print-config", "--set", "epsilon="), "override 'epsilon=' has no value"),
    (("results", "list", "--results", ""), "argument --results: must not be empty"),
    (("plan", "--benchmark", ""), "argument --benchmark: must not be empty"),
])
def test_an_empty_name_or_path_is_an_error_not_every_paper_or_the_default(capsys, no_notebooks, args, phrase):
    # What an unset shell variable gives (`--paper "$P"`): before, figures ran every notebook,
    # run trained the default config, and epsilon= trained without DP.
    code, err = in_process(capsys, *args)
    assert code == 2 and phrase in err, (code, err)


def test_a_hash_or_config_after_the_options_is_read_as_such(capsys):
    from dpdl_core.runs.studies import load_study

    store = load_study("leasgd").store()
    prefix = sorted(store.hashes())[0][:8]
    from dpdl_core.cli import main

    for args in (("results", "show", "--results", str(store.root), prefix),  # argparse alone: "unrecognized"
                 ("results", "show", prefix, "--results", str(store.root))):
        assert main(list(args)) == 0
        assert json.loads(capsys.readouterr().out)["hash"].startswith(prefix)
    code, err = in_process(capsys, "run", "--print-config", "--set", "epsilon=1", "no_such.yaml")
    assert code == 2 and "config file no_such.yaml does not exist" in err


def test_options_a_command_does_not_read_are_refused(capsys, tmp_path):
    from dpdl_core.runs.studies import load_study

    root = str(load_study("leasgd").store().root)
    for args, phrase in (
            (("results", "list", "--results", root, "--out", str(tmp_path / "x.csv")),
             "--out only applies to `results export`"),
            (("results", "show", "--format", "csv", "abc", "--results", root), "--format only applies to"),
            (("results", "list", "--results", root, "abc"), "results list takes no hash (got 'abc')"),
            (("plan", "--study", "--profile", "paper", "--executor", "ray"),
             "--profile, --executor only apply to `plan` without --study")):
        code, err = in_process(capsys, *args)
        assert code == 2 and phrase in err, (args, code, err)
    assert not (tmp_path / "x.csv").exists()


def test_an_export_file_that_cannot_be_written_is_refused_before_the_export(capsys, tmp_path):
    root = str(ROOT / "results" / "leasgd")
    for out, phrase in ((tmp_path / "absent" / "x.csv", f"the folder {tmp_path / 'absent'} does not exist"),
                        (tmp_path, "is a folder; pass a file name in it")):
        code, err = in_process(capsys, "results", "export", "--results", root, "--out", str(out))
        assert code == 2 and phrase in err and "internal error" not in err, err


def test_an_unknown_option_before_the_command_is_named(capsys):
    code, err = in_process(capsys, "--debug", "--nope")
    assert code == 2 and "unrecognized arguments: --nope; a command comes first: run, figures" in err


def test_a_studies_root_that_is_no_folder_is_an_error(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("DPDL_STUDIES_DIR", str(tmp_path / "typo"))
    code, err = in_process(capsys, "answer", "--check")  # it would have compared with empty stores
    assert code == 2 and f"$DPDL_STUDIES_DIR={tmp_path / 'typo'} is not a folder" in err


@needs_kernel
def test_figures_checks_the_environment_and_every_only_name_before_the_first_notebook(capsys, monkeypatch,
                                                                                       tmp_path):
    import papermill

    def refuse(*_, **__):
        raise AssertionError("a notebook was started")

    monkeypatch.setattr(papermill, "execute_notebook", refuse)
    for var, value, phrase in (("DPDL_DATA_MIRROR", str(tmp_path / "typo"), "$DPDL_DATA_MIRROR="),
                               ("DPDL_EXECUTOR", "rayy", "$DPDL_EXECUTOR='rayy' is not known"),
                               ("DPDL_WORKERS", "two", "$DPDL_WORKERS='two'")):
        with monkeypatch.context() as env:
            env.setenv(var, value)
            code, err = in_process(capsys, "figures", "--profile", "smoke", "--paper", "overview")
        assert code == 2 and phrase in err, (var, code, err)
    code, err = in_process(capsys, "figures", "--profile", "smoke", "--paper", "overview", "--only",
                           "00_data_and_topologies", "typo")
    assert code == 2 and "--only typo matches no notebook" in err


def test_every_phony_make_target_has_a_rule():
    text = (ROOT / "Makefile").read_text()
    phony = [t for line in re.findall(r"^\.PHONY: (.+)$", text, re.M) for t in line.split()]
    missing = [t for t in phony if not re.search(rf"^{re.escape(t)}:", text, re.M)]
    assert not missing, f"make {missing} would do nothing and exit 0"


def test_a_reader_that_stops_early_is_not_an_error():
    proc = subprocess.Popen([sys.executable, "-m", "dpdl_core", "list", "fields"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT, env={**os.environ, "DPDL_PROGRESS": "0"})
    proc.stdout.close()  # as `| head` does, before the command writes
    err = proc.stderr.read()
    assert proc.wait(timeout=60) == 141 and err == "", err


def test_results_folder_that_is_a_file_or_read_only(tmp_path):
    afile = tmp_path / "results.txt"
    afile.write_text("not a folder")
    assert_clean_error(cli("run", "--results", str(afile)), "is a file, not a folder", "--results")
    assert_clean_error(cli("run", env={"DPDL_RESULTS_DIR": str(afile)}), "is a file, not a folder",
                       "$DPDL_RESULTS_DIR")
    readonly = Path("/proc/sys")  # read-only even for root, unlike a chmod-ed folder
    if not readonly.is_dir():
        pytest.skip("no /proc/sys here")
    assert_clean_error(cli("run", "--results", str(readonly)), "is read-only")


def test_cuda_without_a_gpu():
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    assert_clean_error(cli("run", "--set", "device=cuda"), "device=cuda", "device=cpu")


def test_run_with_a_dict_says_to_build_a_config():
    from dpdl_core import run

    with pytest.raises(TypeError, match=r"ExperimentConfig\.from_dict"):
        run({"rounds": 1})


@needs_kernel
def test_figures_refuses_an_unknown_kernel_and_an_only_that_matches_nothing():
    assert_clean_error(cli("figures", "--profile", "smoke", "--paper", "overview", "--kernel", "no-such-kernel"),
                       "Jupyter kernel 'no-such-kernel' is not installed", "make setup")
    assert_clean_error(cli("figures", "--profile", "smoke", "--paper", "overview", "--only", "no_such_notebook"),
                       "matches no notebook", "00_data_and_topologies")


def test_report_of_a_profile_never_run_or_a_missing_figures_folder(tmp_path, monkeypatch, capsys):
    assert_clean_error(cli("report", "--profile", "paper", "--figures", str(tmp_path / "absent"),
                           "--out", str(tmp_path / "site")), "is not a folder", "make figures PROFILE=paper")
    from dpdl_core.cli import main
    from dpdl_core.verdicts import pipeline

    (tmp_path / "figures" / "cpu").mkdir(parents=True)  # another profile ran, this one never did
    monkeypatch.setattr(pipeline, "ROOT", tmp_path)
    assert main(["report", "--profile", "paper", "--figures", str(tmp_path / "figures"),
                 "--out", str(tmp_path / "site")]) == 2
    err = capsys.readouterr().err
    assert "nothing has been executed at profile paper" in err and "Traceback" not in err
    assert not (tmp_path / "site").exists()


def test_summary_with_nothing_stored_writes_nothing(tmp_path):
    figures = tmp_path / "figures"
    proc = cli("summary", "--profile", "paper",
               env={"DPDL_RESULTS_DIR": str(tmp_path / "results"), "DPDL_FIGURES_DIR": str(figures)})
    assert_clean_error(proc, "paper")
    assert not [p for p in figures.rglob("*") if p.is_file()]


# -- runs: divergence, Ctrl-C, resume, result file ---------------------------------------
def test_an_exploding_run_is_marked_diverged_and_stops_early():
    from dpdl_core import ExperimentConfig, run
    from dpdl_core.runs.runner import EXPLOSION_FACTOR

    result = run(ExperimentConfig.from_dict({**TINY, "rounds": 20, "lr": 1e6}), save=False)
    curves = result.curves()
    assert result.meta["diverged"] is True
    assert curves.index.max() < 20
    assert curves["train_loss_mean"].iloc[-1] > EXPLOSION_FACTOR * curves["train_loss_mean"].iloc[0]


def test_a_run_told_not_to_stop_on_divergence_runs_every_round_and_says_when_it_diverged(tmp_path):
    """``stop_on_divergence: false`` (the PDSL study's runs of PDSL): the same history as the
    stopped run up to its stop, then on to the last round; meta says diverged and when, and
    the figures' check of the stored runs says which curve stops and which ran on."""
    from dpdl_core import ExperimentConfig, run
    from dpdl_core.runs.results import ResultStore
    from dpdl_core.verdicts.reporting import check_stored

    base = {**TINY, "rounds": 20, "lr": 1e6}
    store = ResultStore(tmp_path)
    stopped = run(ExperimentConfig.from_dict(base), store=store)
    going = run(ExperimentConfig.from_dict({**base, "stop_on_divergence": False}), store=store)
    assert check_stored([stopped.config, going.config], store) == [
        "dp_dpsgd epsilon=0.5 N=6 diverged at round 2 (curve stops)",
        "dp_dpsgd epsilon=0.5 N=6 diverged at round 2, ran on to round 20"]
    assert going.curves().index.max() == 20 and stopped.curves().index.max() < 20
    assert going.meta["diverged"] is True and going.meta["diverged_at"] == stopped.meta["diverged_at"] == 2
    def losses(result):  # the stopped run also evaluates at its stop; the losses are what must agree
        h = result.history
        return h[h["metric"].str.startswith("train_loss") & (h["round"] <= 2)].reset_index(drop=True)

    pd.testing.assert_frame_equal(losses(going), losses(stopped))
    assert ExperimentConfig.from_dict(base).hash == ExperimentConfig.from_dict(
        {**base, "stop_on_divergence": True}).hash != going.config.hash


def test_ctrl_c_stops_after_the_round_and_the_rerun_says_where_it_resumed(tmp_path):
    args = [sys.executable, "-m", "dpdl_core", "run", "--results", str(tmp_path), *_sets({**TINY, "rounds": 40})]
    env = {**os.environ, "DPDL_PROGRESS": "log"}
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT,
                            start_new_session=True)
    seen = []
    for line in proc.stderr:  # the first progress line: training has started
        seen.append(line)
        if " round " in line:
            break
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=300)
    err = "".join(seen) + err
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    match = re.search(r"interrupted at round (\d+); run the same command again to resume", err)
    assert match, err
    stopped = int(match.group(1))

    again = subprocess.run(args, capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
    assert again.returncode == 0, again.stderr
    assert f"resuming at round {stopped + 1}/40 from its checkpoint" in again.stderr
    summary = json.loads(again.stdout)
    assert summary["rounds"] == 40 and Path(summary["result_file"]).is_file()


# -- progress off a terminal -------------------------------------------------------------
PROGRESS_SCRIPT = """
from dpdl_core.sim.progress import Progress
bar = Progress(20, "run abcdef12", "round")
for k in range(20):
    bar.update(1, loss=f"{0.5:.3g}")
bar.close()
"""


def test_progress_is_log_lines_off_a_terminal_and_silenced_by_dpdl_progress_0():
    env = {k: v for k, v in os.environ.items() if k != "DPDL_PROGRESS"}
    proc = subprocess.run([sys.executable, "-c", PROGRESS_SCRIPT], capture_output=True, text=True, env=env)
    lines = proc.stderr.splitlines()
    assert proc.returncode == 0 and 5 <= len(lines) <= 11, lines  # every tenth of the work, and the end
    assert re.fullmatch(r"run abcdef12 round 2/20, loss 0\.5, elapsed \d+s, ETA \d+s", lines[0]), lines[0]
    assert lines[-1].startswith("run abcdef12 round 20/20, loss 0.5, elapsed ")
    quiet = subprocess.run([sys.executable, "-c", PROGRESS_SCRIPT], capture_output=True, text=True,
                           env={**env, "DPDL_PROGRESS": "0"})
    assert quiet.returncode == 0 and quiet.stderr == ""


def test_a_progress_mode_that_is_no_mode_is_warned_about(monkeypatch):
    from dpdl_core.sim.progress import progress_mode

    monkeypatch.delenv("DPDL_PROGRESS", raising=False)
    default = progress_mode()  # where stderr goes decides
    for value, mode in (("1", default), ("auto", default), ("bar", "bar"), ("OFF", "off")):
        monkeypatch.setenv("DPDL_PROGRESS", value)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a value it takes: no warning
            assert progress_mode() == mode
    monkeypatch.setenv("DPDL_PROGRESS", "lgo")
    with pytest.warns(UserWarning, match=r"\$DPDL_PROGRESS='lgo' is not a progress mode; allowed values: 0/off, log"):
        assert progress_mode() == default


def test_progress_eta_follows_the_recent_pace(monkeypatch, capsys):
    """Ten slow steps (10 s) then fast ones (1 s), as a LEASGD run that tests often early:
    the ETA reads the latest half of the elapsed time, not the whole run's mean pace."""
    from dpdl_core.sim import progress as P

    clock = [0.0]
    monkeypatch.setattr(P.time, "perf_counter", lambda: clock[0])
    monkeypatch.setenv("DPDL_PROGRESS", "log")
    bar = P.Progress(100, "run abcdef12", "round")
    for k in range(50):
        clock[0] += 10.0 if k < 10 else 1.0
        bar.update(1)
    # 140 s for 50 steps: the mean pace says 2.8 s a step; the last 70 s made 43 steps.
    assert bar.seconds_per_step() == pytest.approx(70 / 43)
    assert bar.line().endswith("ETA 1m21s")  # 50 steps left: truly 50 s; the mean pace's 2m20s
    for _ in range(40):
        clock[0] += 1.0
        bar.update(1)
    assert bar.seconds_per_step() == pytest.approx(90 / 81)
    capsys.readouterr()


SWEEP_SCRIPT = """
from dpdl_core.runs.config import ExperimentConfig
from dpdl_core.runs.executors import Executor
from dpdl_core.runs.results import ResultStore
from dpdl_core.runs.sweep import run_sweep

class Instant(Executor):
    name = "instant"

    def run(self, configs, store, done):
        for cfg in configs:
            done(cfg)

configs = [ExperimentConfig.from_dict({"seed": s}) for s in range(4)]
run_sweep(configs, store=ResultStore(sys.argv[1]), executor=Instant())
"""


def test_a_sweep_reports_runs_done_off_a_terminal(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "DPDL_PROGRESS"}
    proc = subprocess.run([sys.executable, "-c", "import sys\n" + SWEEP_SCRIPT, str(tmp_path)], capture_output=True,
                          text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert lines[0].startswith("sweep (instant, 0 of 4 stored before) run 1/4, elapsed "), lines
    assert lines[-1].startswith("sweep (instant, 0 of 4 stored before) run 4/4, elapsed ")


def test_a_paper_value_the_paper_lacks_is_a_dash_not_nan():
    from dpdl_core.papers.leasgd.figures import _cell

    assert _cell(float("nan"), ".2f") == "–" and _cell(91.234, ".2f") == "91.23"


# -- results back from the command line ------------------------------------------------
@pytest.fixture
def stored(tmp_path):
    """A results store holding one synthetic run (its metadata with an infinite ε)."""
    from dpdl_core import ExperimentConfig
    from dpdl_core.runs.results import ResultStore

    cfg = ExperimentConfig.from_dict({**TINY, "rounds": 2})
    history = pd.DataFrame([(1, -1, "train_loss_mean", 2.3), (2, -1, "train_loss_mean", 2.1),
                            (2, -1, "avg_test_acc", 0.4)], columns=["round", "agent", "metric", "value"])
    ResultStore(tmp_path / "results").save(cfg.hash, cfg.to_dict(), history,
                                           {"diverged": False, "epsilon_rdp_max": float("inf")})
    return tmp_path / "results", cfg.hash


def test_results_list_show_export(stored, tmp_path):
    folder, run_hash = stored
    listing = cli("results", "list", "--results", str(folder))
    assert listing.returncode == 0 and run_hash in listing.stdout and "dp_dpsgd" in listing.stdout
    show = cli("results", "show", run_hash[:6], "--results", str(folder))
    assert show.returncode == 0 and "Infinity" not in show.stdout
    shown = json.loads(show.stdout)
    assert shown["meta"]["epsilon_rdp_max"] is None and shown["final"]["avg_test_acc"] == 0.4
    assert Path(shown["file"]).is_file()
    out = tmp_path / "runs.csv"
    assert cli("results", "export", "--format", "csv", "--out", str(out), "--results", str(folder)).returncode == 0
    table = pd.read_csv(out)
    assert len(table) == 1 and table.loc[0, "algorithm"] == "dp_dpsgd" and table.loc[0, "final.avg_test_acc"] == 0.4
    parquet = cli("results", "export", "--format", "parquet", "--out", str(tmp_path / "r.parquet"),
                  "--results", str(folder))
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        assert_clean_error(parquet, "needs pyarrow")
    else:
        assert parquet.returncode == 0 and len(pd.read_parquet(tmp_path / "r.parquet")) == 1


def test_results_of_an_empty_store_or_an_unknown_hash(stored, tmp_path):
    (tmp_path / "empty").mkdir()
    assert_clean_error(cli("results", "list", "--results", str(tmp_path / "empty")), "no runs are stored")
    assert_clean_error(cli("results", "show", "ffffffff", "--results", str(stored[0])), "no stored run",
                       f"`python -m dpdl_core results list --results {stored[0]}` shows the hashes")


def test_results_show_of_an_unfinished_run_says_how_far_its_checkpoint_got(stored):
    import torch

    from dpdl_core import __version__
    from dpdl_core.runs.results import ResultStore

    store, run_hash = ResultStore(stored[0]), "abcdef0123456789"
    store.checkpoint_dir.mkdir()
    torch.save({"version": __version__, "config_hash": run_hash, "rng_device": "cpu", "round": 60},
               store.checkpoint_path(run_hash))
    assert_clean_error(cli("results", "show", "abcdef", "--results", str(stored[0])),
                       f"run {run_hash} is not finished", "has rounds 1-60", "python -m dpdl_core study run")


# -- figures per profile, failures short and stale outputs set aside ----------------------
@needs_kernel
def test_smoke_and_cpu_outputs_of_one_notebook_live_side_by_side(tmp_path, monkeypatch, capfd):
    from dpdl_core.verdicts.pipeline import execute_notebooks

    monkeypatch.setenv("DPDL_FIGURES_DIR", str(tmp_path / "figures"))
    for profile in ("smoke", "cpu"):
        report = execute_notebooks(profile, KERNEL, papers=["overview"], out_dir=tmp_path / "executed" / profile)
        assert not report.failed
    out = capfd.readouterr()  # the kernels' own stderr included
    assert "[1/1] overview/00_data_and_topologies.ipynb (profile cpu), elapsed" in out.out
    assert "without encryption" not in out.err
    smoke, cpu = (sorted(p.name for p in (tmp_path / "figures" / f).glob("*.png")) for f in ("smoke", "cpu"))
    assert smoke and smoke == cpu
    for profile in ("smoke", "cpu"):
        meta = json.loads((tmp_path / "figures" / profile / smoke[0].replace(".png", ".json")).read_text())
        assert meta["profile"] == profile


@needs_kernel
def test_a_failing_notebook_is_a_short_message_and_its_old_outputs_are_set_aside(tmp_path, monkeypatch, capsys):
    from dpdl_core.verdicts.pipeline import execute_notebooks

    sources = tmp_path / "notebooks" / "demo"
    sources.mkdir(parents=True)
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell('profile = "smoke"', metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell("import sys\n"
                                  "print('sweep (local, 0 of 2 stored before) run 1/2, elapsed 1s, ETA 1s', "
                                  "file=sys.stderr)\nprint('a warning', file=sys.stderr)"),
        nbformat.v4.new_code_cell("def deep():\n"
                                  "    raise ValueError('n_agents=1 is too few; to fix: --set n_agents=4')\n"
                                  "deep()"),
    ], metadata={"kernelspec": {"name": KERNEL, "language": "python", "display_name": KERNEL},
                 "language_info": {"name": "python"}})
    nbformat.write(nb, sources / "fig01_demo.ipynb")
    figures = tmp_path / "figures" / "smoke"
    figures.mkdir(parents=True)
    old = figures / "demo_fig01_demo.png"
    old.write_bytes(b"an earlier run's figure")
    os.utime(old, (time.time() - 60, time.time() - 60))
    monkeypatch.setenv("DPDL_FIGURES_DIR", str(tmp_path / "figures"))

    report = execute_notebooks("smoke", KERNEL, notebook_dir=tmp_path / "notebooks", out_dir=tmp_path / "executed")
    printed = capsys.readouterr().out
    assert report.failed == ["demo/fig01_demo.ipynb"]
    assert "    sweep (local, 0 of 2 stored before) run 1/2, elapsed 1s, ETA 1s" in printed  # relayed
    assert "a warning" not in printed  # stays in the executed notebook
    assert "FAILED" in printed and "to fix: --set n_agents=4" in printed
    assert str(tmp_path / "executed" / "demo" / "fig01_demo.ipynb") in printed
    assert "Traceback" not in printed and len(printed.splitlines()) <= 8
    assert not old.exists() and (figures / "stale" / old.name).exists()


def test_make_figures_eta_starts_from_plans_estimate():
    from dpdl_core.verdicts.pipeline import _planned_seconds

    assert _planned_seconds("smoke", ["leasgd"]) > 0  # the paper's notebooks sweep runs the store lacks
    assert _planned_seconds("smoke", ["straggler"]) is None  # no run to plan: the ETA comes from the notebooks
    assert _planned_seconds("smoke", ["demo"]) is None  # not a paper


# -- the README --------------------------------------------------------------------------
README = (ROOT / "README.md").read_text()


def test_readme_fits_on_a_screen_and_links_its_docs():
    """The answer comes first: its tally starts within the first 25 lines. The hand-written
    README around the generated answer block fits on a screen; the block itself grows with
    the papers' claims, one short row each (tests/test_studies.py bounds the row length)."""
    from dpdl_core.verdicts.answer import BEGIN, END

    head, rest = README.split(BEGIN, 1)
    block, tail = rest.split(END, 1)
    assert len(head.splitlines()) + 1 <= 25 and block.lstrip().startswith("| paper | claims |")
    assert len(head.splitlines()) + len(tail.splitlines()) <= 90
    assert "docs/answer.md" in README and "make figures" in README and "make test" in README
    for link in re.findall(r"\]\((docs/[^)#]+)", README):
        if link != "docs/answer.md":  # written by the evidence work, linked before it exists
            assert (ROOT / link).exists(), link


def quick_commands() -> list[str]:
    """The README's commands that answer at once: ``make help`` and the ``--help`` and
    ``list`` calls of its shell blocks."""
    blocks = re.findall(r"```(?:bash|sh)\n(.*?)```", README, re.S)
    lines = [ln.split("#")[0].strip() for b in blocks for ln in b.splitlines()]
    programs = (".venv/bin/python -m dpdl_core", ".venv/bin/dpdl ")
    return [ln for ln in lines if ln == "make help" or (ln.startswith(programs)
                                                          and (ln.endswith("--help") or " list " in ln + " "))]


def test_the_readme_quick_commands_run_as_written():
    commands = quick_commands()
    assert "make help" in commands and any(c.endswith("--help") for c in commands)
    assert any(" list " in c + " " for c in commands) and any(c.startswith(".venv/bin/dpdl ") for c in commands)
    if not (ROOT / ".venv" / "bin" / "python").exists():  # tests run from another environment
        commands = [c.replace(".venv/bin/", str(Path(sys.executable).parent) + "/") for c in commands]
    env = {**os.environ, "DPDL_PROGRESS": "0"}
    for command in commands:
        proc = subprocess.run(command, shell=True, capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)
        assert proc.returncode == 0, (command, proc.stderr[-1000:])
        assert "Traceback" not in proc.stderr


def test_the_design_map_names_every_module_of_the_core():
    """docs/design.md's map is where a newcomer learns what each module holds: a module added
    without a line there fails here."""
    design = (ROOT / "docs" / "design.md").read_text()
    mapped = set(re.findall(r"[\w/]+\.py", design.split("## The map", 1)[1].split("\n## ", 1)[0]))
    package = ROOT / "dpdl_core"
    core = {p.name for p in package.rglob("*.py")
            if p.relative_to(package).parts[0] != "papers" and p.name not in ("__init__.py", "__main__.py")}
    assert "engine.py" in core and core - mapped == set()
