"""How a campaign's arguments resolve into inputs: each form, each once, and one error
naming the argument that names nothing."""

from pathlib import Path

import pytest

from rocflow.errors import UserError
from rocflow.inputs import Input, resolve


@pytest.fixture
def job(tmp_path: Path) -> Path:
    """A job's outputs: two run folders, databases of two ranks, a stray file."""
    for run in ["runs/rank-0", "runs/rank-1"]:
        (tmp_path / run).mkdir(parents=True)
        (tmp_path / run / "last.rfraw").write_bytes(b"")
        (tmp_path / run / "node-1.db").write_bytes(b"")
    (tmp_path / "dbs").mkdir()
    for name in ["rank-0.db", "rank-1.db", "notes.txt"]:
        (tmp_path / "dbs" / name).write_bytes(b"")
    (tmp_path / "one.rfraw").write_bytes(b"")
    return tmp_path


def test_each_form_resolves_to_its_inputs_each_once(job: Path):
    (job / "list.txt").write_text("# ranks\n\ndbs/rank-1.db\nruns/rank-*\n")
    got = resolve(["one.rfraw", "dbs", "@list.txt", "runs/rank-0"], cwd=job)
    assert got == [
        Input(job / "one.rfraw", "spool"),
        Input(job / "dbs/rank-0.db", "rocpd"),
        Input(job / "dbs/rank-1.db", "rocpd"),
        Input(job / "runs/rank-0", "run"),
        Input(job / "runs/rank-1", "run"),
    ]


def test_a_folder_of_run_folders_is_its_runs(job: Path):
    assert resolve(["runs"], cwd=job) == [Input(job / "runs/rank-0", "run"), Input(job / "runs/rank-1", "run")]


def test_list_lines_are_relative_to_the_list(job: Path):
    (job / "dbs/list.txt").write_text("rank-0.db\n")
    assert resolve(["@dbs/list.txt"], cwd=job) == [Input(job / "dbs/rank-0.db", "rocpd")]


@pytest.mark.parametrize(
    "argument, says",
    [
        ("missing.db", "`missing.db`: no such file or folder"),
        ("dbs/*.rfraw", "`dbs/*.rfraw` matches no file"),
        ("dbs/notes.txt", "is neither a rocpd database (.db), a spool (.rfraw) nor a run folder"),
        ("@nowhere.txt", "cannot read the input list"),
        ("empty", "is a folder holding no rocpd database, spool or run folder"),
    ],
)
def test_an_argument_naming_nothing_is_one_error(job: Path, argument: str, says: str):
    (job / "empty").mkdir()
    with pytest.raises(UserError, match=".*") as error:
        resolve(["one.rfraw", argument], cwd=job)
    assert says in str(error.value)


def test_a_listed_argument_says_which_list(job: Path):
    (job / "list.txt").write_text("gone.db\n")
    with pytest.raises(UserError) as error:
        resolve(["@list.txt"], cwd=job)
    assert str(error.value) == f"`gone.db` (listed in {job / 'list.txt'}): no such file or folder"
