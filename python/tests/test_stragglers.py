"""Collective stragglers: the rank that arrives last at an RCCL collective or a ROCTx
range all ranks enter is found, its lateness measured on the Unix epoch across hosts
whose boot clocks differ; a job whose ranks arrive together reports nothing."""

from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from rocflow.recipes import stragglers

EPOCH = 1_700_000_000_000_000_000
#: node-b's boot clock runs 7 ms ahead of node-a's: its raw times are that much larger.
OFFSETS = {"node-a": EPOCH, "node-b": EPOCH - 7_000_000}
RANKS = {0: "node-a", 1: "node-a", 2: "node-b", 3: "node-b"}
STEP = 1_000_000


def job_of(job, late: dict[tuple, int]):
    """4 ranks on 2 hosts, each rank `r` arriving `r` µs after rank 0 (under the
    threshold) at: 5 ncclAllReduce on its first communicator, then 2 ncclBroadcast on a
    second one, each rank's communicators at pointers of its own; a range `step` around
    each of 3 steps; HIP calls and a range only rank 0 enters. `late` adds a delay (ns)
    to (kind, name, occurrence, rank)."""
    for rank, host in RANKS.items():
        job.rank(host, rank, OFFSETS[host])

        def at(t: int, *what) -> int:
            """Time `t` on the epoch, plus the injected delay, on `host`'s boot clock."""
            return EPOCH + t + rank * 1_000 + late.get((*what, rank), 0) - OFFSETS[host]

        world, pair = f"0x{rank + 1:x}000", f"0x{rank + 1:x}800"
        for i in range(5):
            job.rccl(host, rank, "ncclAllReduce", at(i * STEP, "rccl", "ncclAllReduce", i), 50_000, world)
            job.hip(host, rank, "hipLaunchKernel", at(i * STEP + 60_000), 4_000)
        for i in range(2):
            job.rccl(host, rank, "ncclBroadcast", at((6 + i) * STEP, "rccl", "ncclBroadcast", i), 30_000, pair)
        for i in range(3):
            job.range(host, rank, "step", at(i * 3 * STEP - 10_000, "roctx", "step", i), 2 * STEP)
            job.range(host, rank, "step", at(i * 3 * STEP + 500, "roctx", "mark", i), 0, op="roctxMarkA")
    job.range("node-a", 0, "setup", EPOCH - OFFSETS["node-a"] - 10 * STEP, STEP)
    return job.write()


def test_the_last_rank_of_each_late_collective_is_found_across_clocks(job, tmp_path: Path):
    dataset = job_of(
        job,
        {
            ("rccl", "ncclAllReduce", 2, 3): 400_000,
            ("rccl", "ncclBroadcast", 0, 1): 250_000,
            ("roctx", "step", 1, 2): 300_000,
        },
    )
    got = stragglers.run(dataset, "rank", tmp_path)
    rows = got.astype(object).where(got.notna(), None).to_dict("records")
    start = EPOCH + 2 * STEP
    assert rows == [
        {
            "kind": "rccl",
            "name": "ncclAllReduce",
            "communicator": 0,
            "occurrence": 2,
            "ranks": 4,
            "host": "node-b",
            "rank": 3,
            "arrival_ns": start + 403_000,
            "first_arrival_ns": start,
            # After the median of 1 and 2 µs.
            "late_ns": 401_500.0,
            "spread_ns": 403_000,
            "wait_ns": 403_000 + 402_000 + 401_000,
        },
        {
            "kind": "roctx",
            "name": "step",
            "communicator": None,
            "occurrence": 1,
            "ranks": 4,
            "host": "node-b",
            "rank": 2,
            "arrival_ns": EPOCH + 3 * STEP - 10_000 + 302_000,
            "first_arrival_ns": EPOCH + 3 * STEP - 10_000,
            "late_ns": 302_000 - 2_000.0,
            "spread_ns": 302_000,
            "wait_ns": 302_000 + 301_000 + 299_000,
        },
        {
            "kind": "rccl",
            "name": "ncclBroadcast",
            "communicator": 1,
            "occurrence": 0,
            "ranks": 4,
            "host": "node-a",
            "rank": 1,
            "arrival_ns": EPOCH + 6 * STEP + 251_000,
            "first_arrival_ns": EPOCH + 6 * STEP,
            "late_ns": 251_000 - 2_500.0,
            "spread_ns": 251_000,
            "wait_ns": 251_000 + 249_000 + 248_000,
        },
    ]
    assert pd.read_csv(tmp_path / "stragglers.csv")["wait_ns"].tolist() == [r["wait_ns"] for r in rows]
    assert pq.read_table(tmp_path / "stragglers.parquet").num_rows == 3


def test_a_job_whose_ranks_arrive_together_reports_nothing(job, tmp_path: Path):
    got = stragglers.run(job_of(job, {}), "rank", tmp_path)
    assert got.empty
    assert pd.read_csv(tmp_path / "stragglers.csv").columns.tolist() == [*stragglers.MATCH, *stragglers.STRAGGLER]


def test_without_the_clock_offsets_the_hosts_would_not_line_up(job, tmp_path: Path):
    dataset = job_of(job, {})
    processes = pq.read_table(dataset / "processes.parquet").to_pandas()
    processes["clock_offset_ns"] = 0
    processes.to_parquet(dataset / "processes.parquet", index=False)
    got = stragglers.stragglers(dataset, "rank")
    # node-b's ranks seem 7 ms late everywhere.
    assert len(got) == 5 + 2 + 3 and set(got["host"]) == {"node-b"}


@pytest.mark.parametrize("threshold, reported", [(300_000, 1), (200_000, 2)])
def test_the_threshold_decides_what_is_reported(job, tmp_path: Path, threshold: int, reported: int):
    dataset = job_of(job, {("rccl", "ncclAllReduce", 2, 3): 400_000, ("rccl", "ncclBroadcast", 0, 1): 250_000})
    assert len(stragglers.stragglers(dataset, "rank", threshold)) == reported


def test_calls_traced_without_arguments_are_on_one_communicator(job, tmp_path: Path):
    for rank in range(3):
        job.rank("node-a", rank)
        for i in range(3):
            job.rccl("node-a", rank, "ncclAllReduce", i * STEP + (500_000 if (i, rank) == (1, 0) else 0), 1_000, None)
    got = stragglers.stragglers(job.write(), "rank")
    assert got[["communicator", "occurrence", "rank", "spread_ns"]].values.tolist() == [[0, 1, 0, 500_000]]
