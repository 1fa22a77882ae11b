"""Times on one clock: each process's records are on its host's boot clock; its
``clock_offset_ns`` (in ``processes.parquet``) puts them on the Unix epoch, where the
hosts of a job meet. Where the offset is unknown (a rocpd database's) it is taken as 0.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq


def offsets(processes: Path, key: str) -> dict[tuple[str, int], int]:
    """Each process's clock offset (0 where unknown), by host and `key`."""
    table = pq.read_table(processes, columns=["host", key, "clock_offset_ns"]).to_pylist()
    return {(row["host"], row[key]): row["clock_offset_ns"] or 0 for row in table}


def ns(times: pd.Series) -> np.ndarray:
    """Nanoseconds of a timestamp column."""
    return times.to_numpy().astype("datetime64[ns]").astype(np.int64)


def of_rows(hosts: pd.Series, ranks: pd.Series, offsets: dict[tuple[str, int], int]) -> np.ndarray:
    """The offset of each row's process."""
    return np.array([offsets.get((h, r), 0) for h, r in zip(hosts, ranks)], dtype=np.int64)
