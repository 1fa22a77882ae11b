"""Collective stragglers: ``stragglers.csv`` and ``stragglers.parquet``.

A collective is entered by several ranks; the last to arrive makes the others wait. Two
kinds are matched across ranks:

- **RCCL collectives**: the ``api`` table's calls of the ``rccl_api`` domain that are
  collectives (``ncclAllReduce``, ``ncclAllGather``, ``ncclBroadcast``, ``ncclReduce``,
  ``ncclReduceScatter``, ``ncclAllToAll``, ``ncclAllToAllv``, ``ncclGather``,
  ``ncclScatter``; not ``ncclSend``/``ncclRecv``). A communicator is a pointer, worth
  nothing on another rank, so each rank numbers its communicators in the order it first
  calls a collective on them (0, 1, …; all its calls are on communicator 0 where the
  calls' arguments were not traced), and the k-th call of an operation on a rank's
  communicator n meets the k-th call of that operation on every other rank's
  communicator n. A collective two or more ranks entered counts.
- **ROCTx ranges** (``marker`` table, pushed or started ranges): the k-th range of a
  message on a rank meets the k-th of that message on every other rank; only a range
  every rank of the campaign entered counts.

Arrival is the call's (range's) start, on the Unix epoch by each process's
``clock_offset_ns`` (on the host's clock where it is unknown). A collective is reported
where the last rank arrives at least ``THRESHOLD_NS`` (``--straggler-ns``) after the
median rank, the most waiting first. Columns:

================ ======= ==============================================================
kind             string  ``rccl`` or ``roctx``
name             string  the operation (``ncclAllReduce``) or the range's message
communicator     integer the communicator's number (empty for a range)
occurrence       integer k: 0 for the first such collective on each rank
ranks            integer the ranks that entered it
host             string  the last rank's host
rank             integer the last rank to arrive (``pid`` in a campaign filed by pid)
arrival_ns       integer when it arrived
first_arrival_ns integer when the first rank arrived
late_ns          float   arrival_ns - the median rank's arrival
spread_ns        integer arrival_ns - first_arrival_ns: the longest wait
wait_ns          integer the others' waits summed: the time at stake
================ ======= ==============================================================

Each rank's calls are read together into one partition (:mod:`.ranks`) to be numbered
(one rank's collectives must fit in a worker's memory), then each collective's arrivals
(a row per rank) are brought together on one worker.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from . import clock, durations
from .ranks import per_rank

#: The default threshold: the last rank this long after the median one, or more.
THRESHOLD_NS = 100_000

COLLECTIVES = frozenset(
    {
        "ncclAllGather",
        "ncclAllReduce",
        "ncclAllToAll",
        "ncclAllToAllv",
        "ncclBroadcast",
        "ncclGather",
        "ncclReduce",
        "ncclReduceScatter",
        "ncclScatter",
    }
)
#: The marker operations that open a range.
RANGES = frozenset({"roctxRangePushA", "roctxRangeStartA"})

MATCH = ["kind", "name", "communicator", "occurrence"]
ARRIVAL = {"kind": "string", "name": "string", "communicator": "i8", "occurrence": "i8", "arrival_ns": "i8"}
STRAGGLER = {
    "ranks": "i8",
    "host": "string",
    "rank": "i8",
    "arrival_ns": "i8",
    "first_arrival_ns": "i8",
    "late_ns": "f8",
    "spread_ns": "i8",
    "wait_ns": "i8",
}


def run(dataset: Path, key: str, into: Path, threshold_ns: int = THRESHOLD_NS) -> pd.DataFrame:
    """Writes `into`/stragglers.csv and stragglers.parquet from `dataset`, whose processes
    are filed by host and `key`; returns the table."""
    return durations.write(stragglers(dataset, key, threshold_ns), into, "stragglers")


def stragglers(dataset: Path, key: str, threshold_ns: int = THRESHOLD_NS) -> pd.DataFrame:
    """The collectives whose last rank arrived `threshold_ns` or more after the median
    rank (see the module's documentation)."""
    columns = [*MATCH, *STRAGGLER]
    world = pq.read_metadata(dataset / "processes.parquet").num_rows
    offsets = clock.offsets(dataset / "processes.parquet", key)
    selects = {"api": (["operation", "domain", "args"], _rccl), "marker": (["operation", "message"], _ranges)}
    selects = {table: select for table, select in selects.items() if (dataset / table).is_dir()}
    if not selects:
        return _typed(pd.DataFrame(columns=columns), key)
    read = {table: ["start_ns", *read] for table, (read, _) in selects.items()}
    chosen = [select for _, select in selects.values()]
    meta = _numbered(_entry_meta(key), key)
    # Each rank's entries lie in one partition, numbered there; then each collective's
    # arrivals (a row per rank) are brought together to find its last rank.
    arrivals = per_rank(dataset, key, read, partial(_arrivals, key=key, offsets=offsets, selects=chosen), meta)
    per_collective = arrivals.shuffle(MATCH).map_partitions(_last, key, meta=_last(meta, key))
    counted = (per_collective["ranks"] >= 2) & (per_collective["late_ns"] >= threshold_ns)
    table = per_collective[counted].compute()
    if table.empty:
        # Dask gives an empty result without the collectives' index (their names).
        return _typed(pd.DataFrame(columns=columns), key)
    table = table.reset_index()
    table = table[(table["kind"] == "rccl") | (table["ranks"] == world)]
    table = table.sort_values(["wait_ns", *MATCH], ascending=[False, True, True, True, True])
    return _typed(table[columns].reset_index(drop=True), key)


def _typed(table: pd.DataFrame, key: str) -> pd.DataFrame:
    table = table.astype({**{c: t for c, t in ARRIVAL.items() if c in table}, **STRAGGLER})
    table["communicator"] = table["communicator"].astype("Int64").where(table["kind"] == "rccl")
    return table.rename(columns={"rank": key})


def _entry_meta(key: str) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "host": pd.Series(dtype="string"),
            key: pd.Series(dtype="i8"),
            "start_ns": pd.Series(dtype="i8"),
            "kind": pd.Series(dtype="string"),
            "name": pd.Series(dtype="string"),
            "pointer": pd.Series(dtype="string"),
        }
    )


def _rccl(part: pd.DataFrame, key: str, offsets: dict) -> pd.DataFrame:
    operation = part["operation"].astype("string")
    part = part[(part["domain"].astype("string") == "rccl_api") & operation.isin(COLLECTIVES)]
    pointers = [_comm(args) for args in part["args"]]
    return _entry(part, key, offsets, "rccl", part["operation"], pointers)


def _ranges(part: pd.DataFrame, key: str, offsets: dict) -> pd.DataFrame:
    part = part[part["operation"].astype("string").isin(RANGES)]
    return _entry(part, key, offsets, "roctx", part["message"], [""] * len(part))


def _entry(part: pd.DataFrame, key: str, offsets: dict, kind: str, names: pd.Series, pointers) -> pd.DataFrame:
    hosts, ranks = part["host"].astype("string"), part[key].astype(np.int64)
    return pd.DataFrame(
        {
            "host": hosts.to_numpy(),
            key: ranks.to_numpy(),
            "start_ns": clock.ns(part["start_ns"]) + clock.of_rows(hosts, ranks, offsets),
            "kind": pd.array([kind] * len(part), dtype="string"),
            "name": names.astype("string").to_numpy(),
            "pointer": pd.array(pointers, dtype="string"),
        }
    )


def _comm(args) -> str:
    """The `comm` argument of a call, or "" where its arguments were not traced."""
    if args is None:
        return ""
    return next((arg["value"] for arg in args if arg["name"] == "comm"), "")


def _arrivals(*tables: pd.DataFrame, key: str, offsets: dict, selects) -> pd.DataFrame:
    """The numbered entries of a group of whole ranks, from its records of each table
    (`selects` picks each table's entries)."""
    return _numbered(pd.concat([select(t, key, offsets) for t, select in zip(tables, selects)]), key)


def _numbered(entries: pd.DataFrame, key: str) -> pd.DataFrame:
    """Whole ranks' entries numbered: each rank's communicators by first use, each
    collective by its occurrence on the rank."""
    entries = entries.sort_values("start_ns", kind="stable").reset_index(drop=True)
    rank = [entries["host"], entries[key]]
    # A communicator's number: how many of the rank's communicators of its kind were
    # first used before it.
    positions = pd.Series(np.arange(len(entries)), dtype=np.int64)
    first_use = positions.groupby([*rank, entries["kind"], entries["pointer"]]).transform("min")
    communicator = first_use.groupby([*rank, entries["kind"]]).rank(method="dense").sub(1)
    numbered = pd.DataFrame(
        {
            "host": entries["host"].to_numpy(),
            key: entries[key].to_numpy(),
            "kind": entries["kind"].to_numpy(),
            "name": entries["name"].to_numpy(),
            "communicator": communicator.to_numpy(dtype=np.int64),
            "arrival_ns": entries["start_ns"].to_numpy(),
        }
    )
    occurrence = numbered.groupby(["host", key, "kind", "name", "communicator"]).cumcount()
    numbered.insert(5, "occurrence", occurrence.to_numpy(dtype=np.int64))
    return numbered.astype({"host": "string", key: "i8", **ARRIVAL})


def _last(arrivals: pd.DataFrame, key: str) -> pd.DataFrame:
    """For each collective whose arrivals (a row per rank) are all in `arrivals`: who
    arrived last (the first such row on a tie), and the others' waits."""
    arrivals = arrivals.reset_index(drop=True)
    times = arrivals["arrival_ns"]
    grouped = times.groupby([arrivals[c] for c in MATCH], sort=False)
    first, latest = grouped.transform("min"), grouped.transform("max")
    last = grouped.idxmax()
    # Relative to the first: epoch nanoseconds lose their last digits as floats.
    since_first = (times - first).groupby([arrivals[c] for c in MATCH], sort=False)
    spread = since_first.max()
    table = pd.DataFrame(
        {
            "ranks": grouped.count().astype(np.int64),
            "host": arrivals["host"].to_numpy()[last.to_numpy(dtype=np.int64)] if len(last) else [],
            "rank": arrivals[key].to_numpy()[last.to_numpy(dtype=np.int64)] if len(last) else [],
            "arrival_ns": grouped.max(),
            "first_arrival_ns": grouped.min(),
            "late_ns": spread - since_first.median(),
            "spread_ns": spread,
            "wait_ns": (latest - times).groupby([arrivals[c] for c in MATCH], sort=False).sum(),
        },
        index=last.index,
    )
    return table.astype(STRAGGLER)
