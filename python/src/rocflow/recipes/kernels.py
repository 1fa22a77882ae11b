"""Kernel summary across ranks: ``kernels.csv`` and ``kernels.parquet``.

One row per rank and kernel, each rank's with the most time first, then one row per
kernel over all ranks (the overall rows, whose ``host`` and rank are empty), the most
time first. The numbers are ``rocflow summary``'s (:mod:`.durations`). Columns:

=========== ======= ==========================================================
host        string  the rank's host
rank        integer the MPI rank (``pid`` instead, in a campaign filed by pid)
kernel      string  the kernel's name, as rocflow writes it everywhere
calls       integer dispatches of the kernel
total_ns    integer their summed duration
mean_ns     float   total_ns / calls
min_ns      integer the shortest dispatch
max_ns      integer the longest dispatch
p50_ns      float   median duration (within 1%, as ``rocflow summary``)
p95_ns      float   95th percentile
p99_ns      float   99th percentile
=========== ======= ==========================================================
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from . import durations


def run(dataset: Path, key: str, into: Path) -> pd.DataFrame:
    """Writes `into`/kernels.csv and kernels.parquet from the `dataset`, whose processes
    are filed by host and `key` ("rank" or "pid"); returns the table."""
    table = durations.summary(dataset / "kernel_dispatch", key, {"kernel": "kernel_name"})
    return durations.write(table, into, "kernels")
