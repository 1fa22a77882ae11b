"""Kernel summary across ranks: ``kernels.csv`` and ``kernels.parquet``.

One row per rank and kernel, then one row per kernel over all ranks (the overall rows,
whose ``host`` and rank are empty), each rank's rows and the overall rows with the most
time first. Columns:

=========== ======= ==========================================================
host        string  the rank's host (empty on the overall rows)
rank        integer the MPI rank (``pid`` instead, in a campaign whose processes
                    have no rank; empty on the overall rows)
kernel      string  the kernel's name, as rocflow writes it everywhere
calls       integer dispatches of the kernel
total_ns    integer their summed duration
mean_ns     float   total_ns / calls
min_ns      integer the shortest dispatch
max_ns      integer the longest dispatch
p50_ns      float   median duration (as ``rocflow summary``: within 1%, see
                    :mod:`rocflow.histogram`)
p95_ns      float   95th percentile
p99_ns      float   99th percentile
=========== ======= ==========================================================

The durations never leave the workers: each partition is reduced to counts per rank,
kernel and histogram bucket, which Dask adds up; percentiles come from the buckets.
"""

from __future__ import annotations

from pathlib import Path

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd

from .. import histogram

QUANTILES = {"p50_ns": 0.50, "p95_ns": 0.95, "p99_ns": 0.99}
AGGREGATES = {"calls": "sum", "total_ns": "sum", "min_ns": "min", "max_ns": "max"}
QUANTILE_META = {name: "f8" for name in QUANTILES}
COLUMNS = ["calls", "total_ns", "mean_ns", "min_ns", "max_ns", *QUANTILES]


def run(dataset: Path, key: str, into: Path) -> pd.DataFrame:
    """Writes `into`/kernels.csv and kernels.parquet from the `dataset`, whose processes
    are partitioned by host and `key` ("rank" or "pid"); returns the table."""
    table = summary(dataset, key)
    table.to_parquet(into / "kernels.parquet", index=False)
    table.to_csv(into / "kernels.csv", index=False)
    return table


def summary(dataset: Path, key: str) -> pd.DataFrame:
    """The kernel summary of `dataset` (see the module's documentation)."""
    dispatches = dataset / "kernel_dispatch"
    if not dispatches.is_dir():
        return pd.DataFrame(columns=["host", key, "kernel", *COLUMNS])
    frame = dd.read_parquet(
        dispatches, columns=["host", key, "kernel_name", "duration_ns"], dataset={"partitioning": "hive"}
    )
    counted = frame.map_partitions(_bucketed, key, meta=_bucketed(frame._meta, key))
    per_bucket = (
        counted.groupby(["host", key, "kernel", "bucket"])
        .agg(AGGREGATES)
        .reset_index()
    )
    rank_keys = ["host", key, "kernel"]
    extremes, quantiles, overall_buckets = dask.compute(
        per_bucket.groupby(rank_keys).agg(AGGREGATES),
        per_bucket.groupby(rank_keys).apply(_quantiles, meta=QUANTILE_META),
        per_bucket.groupby(["kernel", "bucket"]).agg(AGGREGATES),
    )
    ranks = _statistics(extremes, quantiles)
    overall_buckets = overall_buckets.reset_index()
    overall = _statistics(
        overall_buckets.groupby("kernel").agg(AGGREGATES),
        overall_buckets.groupby("kernel")[["bucket", *AGGREGATES]].apply(_quantiles),
    )
    ranks = ranks.sort_values([key, "host", "total_ns", "kernel"], ascending=[True, True, False, True])
    overall = overall.sort_values(["total_ns", "kernel"], ascending=[False, True])
    overall.insert(0, "host", pd.NA)
    overall.insert(1, key, pd.NA)
    table = pd.concat([ranks, overall], ignore_index=True)
    table[key] = table[key].astype("Int64")
    table["host"] = table["host"].astype("string")
    return table[["host", key, "kernel", *COLUMNS]]


def _bucketed(part: pd.DataFrame, key: str) -> pd.DataFrame:
    """A partition's dispatches reduced to calls, total, extremes per rank, kernel and
    histogram bucket."""
    durations = part["duration_ns"].to_numpy(dtype=np.int64)
    frame = pd.DataFrame(
        {
            "host": part["host"].astype("string").to_numpy(),
            key: part[key].astype(np.int64).to_numpy(),
            "kernel": part["kernel_name"].astype("string").to_numpy(),
            "bucket": histogram.buckets(durations),
            "duration_ns": durations,
        }
    )
    grouped = frame.groupby(["host", key, "kernel", "bucket"], sort=False)["duration_ns"]
    return grouped.agg(calls="count", total_ns="sum", min_ns="min", max_ns="max").reset_index()


def _quantiles(buckets: pd.DataFrame) -> pd.Series:
    """One rank's (or all ranks') percentiles of a kernel, from its buckets."""
    buckets = buckets.sort_values("bucket")
    bucket, count = buckets["bucket"].to_numpy(), buckets["calls"].to_numpy()
    low, high = float(buckets["min_ns"].min()), float(buckets["max_ns"].max())
    return pd.Series({name: histogram.quantile(bucket, count, q, low, high) for name, q in QUANTILES.items()})


def _statistics(extremes: pd.DataFrame, quantiles: pd.DataFrame) -> pd.DataFrame:
    """Calls, total and extremes beside the mean and percentiles, a row per group."""
    table = extremes.join(quantiles)
    table["mean_ns"] = table["total_ns"] / table["calls"]
    return table.reset_index()
