"""`rocflow campaign diff`: two campaigns' kernels side by side from their summaries, the
metrics rocflow diff gates with, written for `--fail-if` (which rocflow evaluates), exit
code 2 for a folder that is no campaign."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import Job
from rocflow.recipes import api, kernels


def campaign(root: Path, gemm_ns: int, with_fft: bool, hip_ns: int) -> Path:
    """A campaign of 2 ranks, each with 10 `gemm` of `gemm_ns` and 5 `reduce` of 1 µs
    (and 4 `fft` of 3 µs), and 10 hipLaunchKernel of `hip_ns`, summarised by the recipes."""
    job = Job(root)
    for rank in range(2):
        job.rank("node", rank)
        for i in range(10):
            job.kernel("node", rank, "gemm", i * 100_000, gemm_ns)
            job.hip("node", rank, "hipLaunchKernel", i * 100_000, hip_ns)
        for i in range(5):
            job.kernel("node", rank, "reduce", i * 100_000 + 50_000, 1_000)
        for i in range(4 if with_fft else 0):
            job.kernel("node", rank, "fft", i * 100_000 + 70_000, 3_000)
    dataset = job.write()
    kernels.run(dataset, "rank", root)
    api.run(dataset, "rank", root)
    return root


@pytest.fixture
def campaigns(tmp_path: Path) -> tuple[Path, Path]:
    a = campaign(tmp_path / "a", gemm_ns=10_000, with_fft=True, hip_ns=2_000)
    b = campaign(tmp_path / "b", gemm_ns=15_000, with_fft=False, hip_ns=3_000)
    return a, b


def diff(*args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "rocflow.campaign", "diff", *args]
    return subprocess.run(command, capture_output=True, text=True)


def test_kernels_side_by_side_and_the_metrics(campaigns):
    a, b = campaigns
    done = diff(str(a), str(b), "--format", "json")
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    kernels = {row["kernel"]: row for row in got["kernels"]}
    assert [row["kernel"] for row in got["kernels"]] == ["gemm", "fft", "reduce"]
    gemm = kernels["gemm"]
    assert (gemm["calls_a"], gemm["calls_b"], gemm["total_ns_a"], gemm["total_ns_b"]) == (20, 20, 200_000, 300_000)
    assert (gemm["mean_ns_a"], gemm["mean_ns_b"], gemm["delta_ns"], gemm["ratio"]) == (10_000, 15_000, 100_000, 1.5)
    assert abs(gemm["p95_ns_a"] - 10_000) <= 100 and abs(gemm["p95_ns_b"] - 15_000) <= 150
    assert (kernels["fft"]["total_ns_b"], kernels["fft"]["ratio"], kernels["fft"]["delta_ns"]) == (None, None, -24_000)
    assert kernels["reduce"]["ratio"] == 1.0
    assert got["metrics"] == {
        "kernel_time_ratio": (300_000 + 10_000) / (200_000 + 24_000 + 10_000),
        "api_time_ratio": 1.5,
        "worst_kernel_ratio": 1.5,
        "kernels_added": 0,
        "kernels_removed": 1,
    }
    text = diff(str(a), str(b)).stdout
    assert "gemm" in text.splitlines()[2] and "1.500x" in text and "gone" in text
    assert "kernels_removed = 1.0000" in text


def test_the_metrics_are_written_for_the_gate(campaigns, tmp_path: Path):
    a, b = campaigns
    written = tmp_path / "metrics.json"
    done = diff(str(a), str(b), "--metrics", str(written))
    assert done.returncode == 0, done.stderr
    # The comparison is printed too.
    assert done.stdout.startswith("kernels")
    assert json.loads(written.read_text()) == {
        "kernel_time_ratio": (300_000 + 10_000) / (200_000 + 24_000 + 10_000),
        "api_time_ratio": 1.5,
        "worst_kernel_ratio": 1.5,
        "kernels_added": 0,
        "kernels_removed": 1,
    }


def test_a_folder_that_is_no_campaign_is_exit_2(campaigns, tmp_path: Path):
    a, _ = campaigns
    done = diff(str(a), str(tmp_path / "nowhere"))
    assert done.returncode == 2 and done.stdout == ""
    assert f"`{tmp_path / 'nowhere'}` is no campaign: it has no kernels.parquet" in done.stderr
