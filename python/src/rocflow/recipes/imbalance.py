"""Rank imbalance: ``imbalance.csv`` and ``imbalance.parquet``.

Per kernel, the rank that spent the most time in it against the median rank: a kernel is
reported where the slowest rank's total is at least ``RATIO`` (``--imbalance-ratio``)
times the median of the ranks' totals, the most time at stake first. Only the ranks that
ran the kernel count, and a kernel only one rank ran is never reported. The numbers come
from the kernel summary's per-rank rows (:mod:`.kernels`), already reduced on the
workers. Columns:

================ ======= ===============================================================
kernel           string  the kernel's name
ranks            integer the ranks that ran it
host             string  the slowest rank's host
rank             integer the slowest rank (``pid`` in a campaign filed by pid)
total_ns         integer the slowest rank's time in the kernel
median_total_ns  float   the median of the ranks' times (the mean of the middle two for an
                         even number of ranks)
ratio            float   total_ns over median_total_ns
excess_ns        float   total_ns - median_total_ns: the time at stake
calls            integer the slowest rank's dispatches of the kernel
mean_ns          float   its mean dispatch
median_mean_ns   float   the median of the ranks' mean dispatches
mean_ratio       float   mean_ns over median_mean_ns (above 1: longer dispatches, not more)
================ ======= ===============================================================
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from . import durations

#: The default threshold: the slowest rank at least this many times the median.
RATIO = 1.2

COLUMNS = [
    "kernel",
    "ranks",
    "host",
    "rank",
    "total_ns",
    "median_total_ns",
    "ratio",
    "excess_ns",
    "calls",
    "mean_ns",
    "median_mean_ns",
    "mean_ratio",
]


def run(kernels: pd.DataFrame, key: str, into: Path, ratio: float = RATIO) -> pd.DataFrame:
    """Writes `into`/imbalance.csv and imbalance.parquet from the kernel summary `kernels`
    of a campaign filed by host and `key`; returns the table."""
    return durations.write(imbalance(kernels, key, ratio), into, "imbalance")


def imbalance(kernels: pd.DataFrame, key: str, ratio: float = RATIO) -> pd.DataFrame:
    """The kernels whose slowest rank spent at least `ratio` times the median rank's time
    (see the module's documentation)."""
    ranks = kernels[kernels["host"].notna()]
    rows = [_slowest(kernel, group, key) for kernel, group in ranks.groupby("kernel", sort=True)]
    table = pd.DataFrame([row for row in rows if row is not None], columns=COLUMNS)
    table = table[table["ratio"] >= ratio].sort_values(["excess_ns", "kernel"], ascending=[False, True])
    table = table.astype({"ranks": "int64", "total_ns": "int64", "calls": "int64", "rank": "int64"})
    table["host"] = table["host"].astype("string")
    return table.rename(columns={"rank": key}).reset_index(drop=True)


def _slowest(kernel: str, group: pd.DataFrame, key: str) -> dict | None:
    if len(group) < 2:
        return None
    slowest = group.loc[group["total_ns"].idxmax()]
    median_total = float(np.median(group["total_ns"].to_numpy(dtype=np.float64)))
    median_mean = float(np.median(group["mean_ns"].to_numpy(dtype=np.float64)))
    return {
        "kernel": kernel,
        "ranks": len(group),
        "host": slowest["host"],
        "rank": int(slowest[key]),
        "total_ns": int(slowest["total_ns"]),
        "median_total_ns": median_total,
        "ratio": slowest["total_ns"] / median_total if median_total > 0 else np.inf,
        "excess_ns": slowest["total_ns"] - median_total,
        "calls": int(slowest["calls"]),
        "mean_ns": float(slowest["mean_ns"]),
        "median_mean_ns": median_mean,
        "mean_ratio": slowest["mean_ns"] / median_mean if median_mean > 0 else np.inf,
    }
