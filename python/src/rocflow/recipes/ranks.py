"""A dataset's tables read as partitions of whole ranks.

The dataset holds one small file per rank and table. Read as it lies (a Dask partition a
file) a job of thousands of ranks makes thousands of tasks per step, and every per-rank
computation (a groupby-apply by rank) shuffles them all. Here each partition is a group of
rank folders, a few partitions per worker, so a rank's records are always together: a
recipe's per-rank work runs inside its partition, and only its small per-rank results
cross partitions. The ranks are grouped the same way for every table, in the dataset's
path order (the order in which Dask read one file a partition), so the i-th partitions of
two tables hold the same ranks.
"""

from __future__ import annotations

import os
import re
import urllib.parse
from collections.abc import Callable
from functools import partial
from pathlib import Path

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

#: Partitions per worker: enough to balance uneven ranks, few enough to keep tasks large.
PER_WORKER = 4


def per_rank(
    dataset: Path,
    key: str,
    tables: dict[str, list[str]],
    work: Callable[..., pd.DataFrame],
    meta: pd.DataFrame,
) -> dd.DataFrame:
    """`work` over groups of whole ranks: called once a partition with one frame per table
    of `tables` (name: columns to read), each holding the group's records of that table
    with the rank's ``host`` (string) and `key` (int64) first, then the columns; its
    results (shaped as `meta`) make the partitions of the frame returned."""
    folders = {table: _folders(dataset / table, key) for table in tables}
    paths = {place: f"{f.parent.name}/{f.name}" for found in folders.values() for place, f in found.items()}
    places = sorted(paths, key=paths.get)
    count = max(1, min(len(places), PER_WORKER * _workers()))
    groups = [places[i * len(places) // count : (i + 1) * len(places) // count] for i in range(count)]
    # Each task carries its own ranks' folders, a list per table (None where a rank has none).
    parts = [(group, [[folders[table].get(place) for place in group] for table in tables]) for group in groups]
    schemas = [_schema(dataset / table, columns) for table, columns in tables.items()]
    return dd.from_map(partial(_group, key=key, schemas=schemas, work=work), parts, meta=meta, enforce_metadata=False)


def _group(part, key: str, schemas: list[pa.Schema | None], work) -> pd.DataFrame:
    """`work` over the records of a group of ranks, a frame per table."""
    places, folders = part
    return work(*(_read(found, places, key, schema) for found, schema in zip(folders, schemas)))


def _folders(table: Path, key: str) -> dict[tuple[str, int], Path]:
    """The rank folders of `table` by host and key."""
    if not table.is_dir():
        return {}
    found = {}
    for folder in table.glob(f"host=*/{key}=*"):
        host = urllib.parse.unquote(folder.parent.name.removeprefix("host="))
        found[host, int(folder.name.removeprefix(f"{key}="))] = folder
    return found


def _schema(table: Path, columns: list[str]) -> pa.Schema | None:
    """The fields `columns` of `table` (where it has a file), for ranks without records."""
    first = next(table.glob("host=*/*/*.parquet"), None) if table.is_dir() else None
    if first is None:
        return None
    schema = pq.read_schema(first)
    return pa.schema([schema.field(c) for c in columns])


def _read(
    folders: list[Path | None], places: list[tuple[str, int]], key: str, schema: pa.Schema | None
) -> pd.DataFrame:
    """The records of the ranks at `places` (read from `folders`, None where a rank has
    none), in order, with their host and `key`."""
    columns = [] if schema is None else schema.names
    tables, hosts, ranks = [], [], []
    for folder, (host, rank) in zip(folders, places):
        if folder is None:
            continue
        for file in sorted(folder.glob("*.parquet"), key=_natural):
            table = pq.read_table(file, columns=columns)
            tables.append(table)
            hosts.append(np.full(table.num_rows, host, dtype=object))
            ranks.append(np.full(table.num_rows, rank, dtype=np.int64))
    records = pa.concat_tables(tables) if tables else (schema or pa.schema([])).empty_table()
    frame = records.to_pandas()
    frame.insert(0, "host", pd.array(np.concatenate(hosts) if hosts else [], dtype="string"))
    frame.insert(1, key, np.concatenate(ranks) if ranks else np.array([], dtype=np.int64))
    return frame


def _natural(path: Path) -> list:
    """A file name's sort key, its numbers as numbers (part-2 before part-10)."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", path.name)]


def _workers() -> int:
    """The workers of the client in use, or the cores where there is none."""
    try:
        from distributed import get_client

        return len(get_client().scheduler_info()["workers"]) or 1
    except (ImportError, ValueError):
        return os.cpu_count() or 1
