"""Statistics of durations across ranks, the body of the kernel and API summaries: per
rank and name (a kernel's, an API function's) and per name over all ranks, calls, total,
mean, extremes and percentiles, as ``rocflow summary`` computes them.

The durations never leave the workers: each partition is reduced to calls, total and
extremes per rank, name and histogram bucket (:mod:`rocflow.histogram`), which Dask adds
up across partitions; percentiles come from the buckets, within 1% of the exact value.
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
#: The statistics' columns, after the host, the rank and the name columns.
COLUMNS = ["calls", "total_ns", "mean_ns", "min_ns", "max_ns", *QUANTILES]


def summary(table: Path, key: str, names: dict[str, str]) -> pd.DataFrame:
    """The statistics of the durations in `table` (a dataset's table folder filed by host
    and `key`, "rank" or "pid"), grouped by `names` (output column: the table's column):
    one row per rank and name, each rank's with the most time first, then the overall
    rows (host and `key` empty), the most time first."""
    columns = ["host", key, *names]
    if not table.is_dir():
        return pd.DataFrame(columns=[*columns, *COLUMNS])
    read = ["host", key, *names.values(), "duration_ns"]
    frame = dd.read_parquet(table, columns=read, dataset={"partitioning": "hive"})
    counted = frame.map_partitions(_bucketed, key, names, meta=_bucketed(frame._meta, key, names))
    per_bucket = counted.groupby([*columns, "bucket"]).agg(AGGREGATES).reset_index()
    extremes, quantiles, overall_buckets = dask.compute(
        per_bucket.groupby(columns).agg(AGGREGATES),
        per_bucket.groupby(columns).apply(_quantiles, meta=QUANTILE_META),
        per_bucket.groupby([*names, "bucket"]).agg(AGGREGATES),
    )
    ranks = _statistics(extremes, quantiles)
    overall_buckets = overall_buckets.reset_index()
    by_name = overall_buckets.groupby(list(names))
    overall = _statistics(by_name.agg(AGGREGATES), by_name[["bucket", *AGGREGATES]].apply(_quantiles))
    ranks = ranks.sort_values(
        [key, "host", "total_ns", *names], ascending=[True, True, False, *[True] * len(names)]
    )
    overall = overall.sort_values(["total_ns", *names], ascending=[False, *[True] * len(names)])
    overall.insert(0, "host", pd.NA)
    overall.insert(1, key, pd.NA)
    result = pd.concat([ranks, overall], ignore_index=True)
    result[key] = result[key].astype("Int64")
    result["host"] = result["host"].astype("string")
    return result[[*columns, *COLUMNS]]


def write(table: pd.DataFrame, into: Path, name: str) -> pd.DataFrame:
    """Writes `table` as `into`/NAME.parquet and NAME.csv; returns it."""
    table.to_parquet(into / f"{name}.parquet", index=False)
    table.to_csv(into / f"{name}.csv", index=False)
    return table


def _bucketed(part: pd.DataFrame, key: str, names: dict[str, str]) -> pd.DataFrame:
    """A partition's durations reduced to calls, total and extremes per rank, name and
    histogram bucket."""
    durations = part["duration_ns"].to_numpy(dtype=np.int64)
    frame = pd.DataFrame(
        {
            "host": part["host"].astype("string").to_numpy(),
            key: part[key].astype(np.int64).to_numpy(),
            **{name: part[column].astype("string").to_numpy() for name, column in names.items()},
            "bucket": histogram.buckets(durations),
            "duration_ns": durations,
        }
    )
    grouped = frame.groupby(["host", key, *names, "bucket"], sort=False)["duration_ns"]
    return grouped.agg(calls="count", total_ns="sum", min_ns="min", max_ns="max").reset_index()


def _quantiles(buckets: pd.DataFrame) -> pd.Series:
    """One group's percentiles, from its buckets."""
    buckets = buckets.sort_values("bucket")
    bucket, count = buckets["bucket"].to_numpy(), buckets["calls"].to_numpy()
    low, high = float(buckets["min_ns"].min()), float(buckets["max_ns"].max())
    return pd.Series({name: histogram.quantile(bucket, count, q, low, high) for name, q in QUANTILES.items()})


def _statistics(extremes: pd.DataFrame, quantiles: pd.DataFrame) -> pd.DataFrame:
    """Calls, total and extremes beside the mean and percentiles, a row per group."""
    table = extremes.join(quantiles)
    table["mean_ns"] = table["total_ns"] / table["calls"]
    return table.reset_index()
