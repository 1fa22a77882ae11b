"""API summary across ranks: ``api.csv`` and ``api.parquet``.

One row per rank and API function (HIP, HSA, ROCTx, RCCL, … calls), each rank's with the
most time first, then one row per function over all ranks (the overall rows, whose
``host`` and rank are empty), the most time first. The numbers are ``rocflow summary``'s
API table's (:mod:`.durations`). Columns:

=========== ======= ==========================================================
host        string  the rank's host
rank        integer the MPI rank (``pid`` instead, in a campaign filed by pid)
domain      string  the API's tracing domain (``hip_runtime_api``, …)
function    string  the function (``hipLaunchKernel``, …)
calls       integer calls of the function
total_ns    integer their summed duration
mean_ns     float   total_ns / calls
min_ns      integer the shortest call
max_ns      integer the longest call
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
    """Writes `into`/api.csv and api.parquet from the `dataset`, whose processes are filed
    by host and `key` ("rank" or "pid"); returns the table."""
    table = durations.summary(dataset / "api", key, {"domain": "domain", "function": "operation"})
    return durations.write(table, into, "api")
