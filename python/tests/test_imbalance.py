"""Rank imbalance: the kernel where one rank spends far more than the median rank is
found with that rank and the time at stake; a balanced job reports nothing."""

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from rocflow.recipes import imbalance, kernels

RANKS = 8
HOSTS = ["node-a", "node-b"]


def balanced(job, rng: np.random.Generator) -> None:
    """Each of 8 ranks on 2 hosts runs 40 `gemm` and 40 `reduce`, within 5% of each other."""
    for rank in range(RANKS):
        host = HOSTS[rank // 4]
        job.rank(host, rank)
        for i in range(40):
            job.kernel(host, rank, "gemm", i * 10_000, int(5_000 * rng.uniform(0.95, 1.05)))
            job.kernel(host, rank, "reduce", i * 10_000 + 6_000, int(2_000 * rng.uniform(0.95, 1.05)))


def test_the_slow_rank_of_an_imbalanced_kernel_is_found(job, tmp_path: Path):
    rng = np.random.default_rng(1)
    balanced(job, rng)
    # Rank 5's `reduce` dispatches take 3 times as long; rank 2 runs 20 more `gemm` (1.5x).
    job.rows[("kernel_dispatch", "node-b", 5)] = [
        {**row, "duration_ns": row["duration_ns"] * 3} if row["kernel_name"] == "reduce" else row
        for row in job.rows[("kernel_dispatch", "node-b", 5)]
    ]
    for i in range(20):
        job.kernel("node-a", 2, "gemm", 500_000 + i * 10_000, 5_000)
    dataset = job.write()
    summary = kernels.run(dataset, "rank", tmp_path)
    got = imbalance.run(summary, "rank", tmp_path)

    assert list(got["kernel"]) == ["reduce", "gemm"]
    ranks = summary[summary["host"].notna()]
    for row in got.itertuples():
        per_rank = ranks[ranks["kernel"] == row.kernel]
        slowest = per_rank.loc[per_rank["total_ns"].idxmax()]
        assert (row.host, row.rank, row.ranks) == (slowest["host"], slowest["rank"], RANKS)
        assert row.total_ns == slowest["total_ns"]
        assert row.median_total_ns == np.median(per_rank["total_ns"])
        assert row.excess_ns == row.total_ns - row.median_total_ns
    reduce, gemm = got.iloc[0], got.iloc[1]
    assert (reduce["host"], reduce["rank"]) == ("node-b", 5)
    assert 2.8 < reduce["ratio"] < 3.2 and 2.8 < reduce["mean_ratio"] < 3.2
    assert (gemm["host"], gemm["rank"], gemm["calls"]) == ("node-a", 2, 60)
    # More dispatches, not longer ones.
    assert 1.4 < gemm["ratio"] < 1.6 and 0.9 < gemm["mean_ratio"] < 1.1
    assert pd.read_csv(tmp_path / "imbalance.csv")["kernel"].tolist() == ["reduce", "gemm"]
    assert pq.read_table(tmp_path / "imbalance.parquet").column_names == [*imbalance.COLUMNS[:3], "rank", *imbalance.COLUMNS[4:]]


def test_the_threshold_decides_what_is_reported(job, tmp_path: Path):
    balanced(job, np.random.default_rng(2))
    for i in range(20):
        job.kernel("node-a", 2, "gemm", 500_000 + i * 10_000, 5_000)
    summary = kernels.run(job.write(), "rank", tmp_path)
    assert list(imbalance.imbalance(summary, "rank", 1.4)["kernel"]) == ["gemm"]
    assert imbalance.imbalance(summary, "rank", 1.6).empty


def test_a_balanced_job_reports_nothing(job, tmp_path: Path):
    balanced(job, np.random.default_rng(3))
    summary = kernels.run(job.write(), "rank", tmp_path)
    got = imbalance.run(summary, "rank", tmp_path)
    assert got.empty
    assert pd.read_csv(tmp_path / "imbalance.csv").columns.tolist() == pq.read_table(tmp_path / "imbalance.parquet").column_names
