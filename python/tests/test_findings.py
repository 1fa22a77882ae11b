"""The findings recipe on jobs `rocflow generate --ranks` simulates: the rules run rank by
rank on the workers and across ranks in a task of their own give exactly the findings
`rocflow analyze` gives on the job's folder, thresholds included; an input rocflow cannot
read is named. Runs the rocflow that ``ROCFLOW`` names, as a campaign's tasks do (the
integration test that runs this suite names the one it built)."""

from __future__ import annotations

import json
import logging
import subprocess
from pathlib import Path

import pytest

from rocflow.convert import executable
from rocflow.errors import UserError
from rocflow.inputs import Input, resolve
from rocflow.recipes import findings


@pytest.fixture(scope="module")
def client():
    from dask.distributed import Client, LocalCluster

    cluster = LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0", silence_logs=logging.ERROR)
    with cluster, Client(cluster) as client:
        yield client


def generate(folder: Path, *faults: str) -> Path:
    """A job of 8 ranks on 2 nodes whose clocks are 5 ms apart, with `faults`."""
    shape = ["--ranks", "8", "--nodes", "2", "--steps", "6", "--clock-offset", "1:5000000"]
    subprocess.run([executable(), "generate", str(folder), *shape, *faults], check=True, capture_output=True)
    return folder


def analyze(folder: Path, *args: str) -> list[dict]:
    """`rocflow analyze FOLDER --format json ARGS…`'s findings."""
    command = [executable(), "analyze", str(folder), "--format", "json", *args]
    done = subprocess.run(command, check=True, capture_output=True, text=True)
    return json.loads(done.stdout)["findings"]


def test_the_recipe_finds_what_rocflow_analyze_finds_on_the_folder(tmp_path: Path, client):
    job = generate(tmp_path / "job", "--straggler", "3:2:800000", "--slow-rank", "6:0:2")
    inputs = resolve([str(job)])
    assert len(inputs) == 8
    found = findings.findings(client, inputs, executable())
    assert found == analyze(job)
    rules = {f["rule"] for f in found}
    assert {"collective-straggler", "rank-imbalance"} <= rules
    late = [f for f in found if f["rule"] == "collective-straggler"]
    assert len(late) == 1
    assert late[0]["statement"].startswith("rank 3 came last to ncclAllReduce #1,")
    # A threshold above the delay: the straggler is no longer one, on both sides alike.
    above = ["collective-straggler.min_late_ns=1ms"]
    raised = findings.findings(client, inputs, executable(), above)
    assert raised == analyze(job, "--set", above[0])
    assert [f for f in raised if f["rule"] == "collective-straggler"] == []


def test_a_job_without_faults_has_no_straggler_and_no_imbalance(tmp_path: Path, client):
    job = generate(tmp_path / "clean")
    found = findings.findings(client, resolve([str(job)]), executable())
    assert found == analyze(job)
    assert {f["rule"] for f in found} & {"collective-straggler", "rank-imbalance"} == set()


def test_an_input_rocflow_cannot_read_is_named(tmp_path: Path, client):
    junk = tmp_path / "rank-0.rfraw"
    junk.write_text("not a spool")
    with pytest.raises(UserError, match="rank-0.rfraw"):
        findings.findings(client, [Input(junk, "spool")], executable())
