"""``answer`` and ``results`` read the committed study stores without changing them.

``answer --check`` and ``results list`` on a store with a damaged run file leave every file
byte-identical and in place, and name the file with the command that restores it; the
writing ``answer`` refuses an empty or incomplete set of stores unless ``--allow-incomplete``
is given. Each case works on a copy of a committed store in ``tmp_path`` (pointed at by
``$DPDL_STUDIES_DIR``), never on ``results/`` itself.
"""
import hashlib
import shutil
import subprocess
from pathlib import Path

import pytest

from dpdl_core.cli import main
from dpdl_core.runs.results import ResultStore
from dpdl_core.verdicts import answer

ROOT = Path(__file__).resolve().parents[1]
# The smallest committed store: every other study's store is absent from the copies, so
# they count as empty.
PAPER = "straggler"


def snapshot(folder: Path) -> dict[str, str]:
    """Every path under ``folder`` with the SHA-256 of its bytes ("dir" for a folder)."""
    return {str(p.relative_to(folder)): "dir" if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*"))}


@pytest.fixture
def studies(tmp_path, monkeypatch) -> Path:
    """A copy of the committed straggler store as the studies' root."""
    root = tmp_path / "studies"
    shutil.copytree(ROOT / "results" / PAPER, root / PAPER)
    monkeypatch.setenv("DPDL_STUDIES_DIR", str(root))
    return root


@pytest.fixture
def damaged(studies) -> Path:
    """The first run file of the copy, cut short as an interrupted copy leaves it."""
    path = sorted((studies / PAPER).glob("*.csv.gz"))[0]
    path.write_bytes(path.read_bytes()[:1000])
    return path


@pytest.fixture
def repo(tmp_path, monkeypatch) -> Path:
    """A copy of the README and docs/answer.md for the writing ``answer`` to write."""
    root = tmp_path / "repo"
    (root / "docs").mkdir(parents=True)
    shutil.copy(ROOT / "README.md", root / "README.md")
    shutil.copy(ROOT / "docs" / "answer.md", root / "docs" / "answer.md")
    monkeypatch.setattr(answer, "ROOT", root)
    return root


def run_cli(capsys, *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().err


def assert_one_error_line(err: str, *phrases: str) -> None:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err
    for phrase in phrases:
        assert phrase in lines[0], (phrase, err)


def test_check_leaves_a_damaged_store_as_it_is_and_says_how_to_restore_the_file(studies, damaged, capsys):
    before = snapshot(studies)
    code, err = run_cli(capsys, "answer", "--check")
    assert snapshot(studies) == before  # nothing moved aside, no lock or journal written
    assert code == 2
    assert_one_error_line(err, str(damaged), "unreadable gzip", f"git checkout -- {damaged}")


def test_results_list_leaves_a_damaged_file_in_place_and_names_it(studies, damaged, capsys):
    before = snapshot(studies)
    code, err = run_cli(capsys, "results", "list", "--results", str(studies / PAPER))
    assert snapshot(studies) == before
    assert code == 0 and f"note: {damaged} is damaged" in err and "Traceback" not in err


def test_a_committed_run_file_that_is_deleted_is_named_with_the_git_command(tmp_path):
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    store_root = tmp_path / PAPER
    shutil.copytree(ROOT / "results" / PAPER, store_root)
    git = ["git", "-C", str(tmp_path), "-c", "user.name=test", "-c", "user.email=test@example.org"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "store"], check=True)
    gone = sorted(store_root.glob("*.csv.gz"))[0]
    gone.unlink()
    with pytest.raises(answer.StoreError, match="deleted") as caught:
        answer.check_stores([ResultStore(store_root, read_only=True)])
    assert f"git checkout -- {gone}" in str(caught.value)


def test_answer_refuses_to_write_from_an_empty_studies_folder(tmp_path, monkeypatch, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("DPDL_STUDIES_DIR", str(empty))
    readme = tmp_path / "README.md"
    shutil.copy(ROOT / "README.md", readme)
    with pytest.raises(answer.StoreError, match="no run at all"):
        answer.write_answer(readme=readme, doc=tmp_path / "answer.md")
    assert readme.read_bytes() == (ROOT / "README.md").read_bytes() and not (tmp_path / "answer.md").exists()
    code, err = run_cli(capsys, "answer")
    assert code == 2
    assert_one_error_line(err, f"{empty / PAPER} holds 0 of the", "--allow-incomplete")
    assert sorted(empty.iterdir()) == []


def test_answer_writes_from_an_incomplete_store_only_when_allowed_and_says_what_is_missing(studies, repo, capsys):
    before = snapshot(repo)
    code, err = run_cli(capsys, "answer")
    assert code == 2 and snapshot(repo) == before
    assert_one_error_line(err, "fewer runs than the studies declare", f"{studies / 'dpdl'} holds 0 of the",
                          "--allow-incomplete")
    code, err = run_cli(capsys, "answer", "--allow-incomplete")
    assert code == 0 and snapshot(repo) != before
    assert f"{studies / 'pdsl'} holds 0 of the" in err and f"{studies / PAPER} holds" not in err
