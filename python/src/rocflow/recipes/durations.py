"""Statistics of durations across ranks, the body of the kernel and API summaries: per
rank and name (a kernel's, an API function's) and per name over all ranks, calls, total,
mean, extremes and percentiles, as ``rocflow summary`` computes them.

The durations never leave the workers: each partition is reduced to calls, total and
extremes per rank, name and histogram bucket (:mod:`rocflow.histogram`), which Dask adds
up across partitions; percentiles come from the buckets, within 1% of the exact value.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import dask
import numpy as np
import pandas as pd

from .. import histogram
from .ranks import per_rank

QUANTILES = {"p50_ns": 0.50, "p95_ns": 0.95, "p99_ns": 0.99}
AGGREGATES = {"calls": "sum", "total_ns": "sum", "min_ns": "min", "max_ns": "max"}
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
    meta = _bucketed_meta(key, names)
    read = {table.name: [*names.values(), "duration_ns"]}
    counted = per_rank(table.parent, key, read, partial(_bucketed, key=key, names=names), meta)
    # Each rank's buckets lie in one partition: its statistics are computed there, and
    # only the buckets of all ranks together cross partitions (a tree reduction).
    ranks, overall = dask.compute(
        counted.map_partitions(_statistics, columns, meta=_statistics(meta, columns)),
        counted.groupby([*names, "bucket"]).agg(AGGREGATES).reset_index(),
    )
    overall = _statistics(overall, list(names))
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


def _bucketed_meta(key: str, names: dict[str, str]) -> pd.DataFrame:
    """The (empty) shape of `_bucketed`'s results."""
    columns = {"host": "string", key: "i8", **{c: "string" for c in names.values()}, "duration_ns": "i8"}
    return _bucketed(pd.DataFrame({c: pd.Series(dtype=t) for c, t in columns.items()}), key, names)


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


def _statistics(buckets: pd.DataFrame, groups: list[str]) -> pd.DataFrame:
    """Calls, total, extremes, mean and percentiles of each group of `buckets`, a row each."""
    buckets = buckets.sort_values([*groups, "bucket"], kind="stable")
    grouped = buckets.groupby(groups, sort=True)
    table = grouped.agg(AGGREGATES)
    # The percentiles of every group at once: the rows are sorted by group and bucket.
    bucket, count, totals = buckets["bucket"].to_numpy(), buckets["calls"].to_numpy(), table["calls"].to_numpy()
    for name, q in QUANTILES.items():
        table[name] = histogram.quantiles(bucket, count, totals, q, table["min_ns"], table["max_ns"])
    table["mean_ns"] = table["total_ns"] / table["calls"]
    return table.reset_index()
