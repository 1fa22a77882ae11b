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

Each rank's calls are brought together on one worker to be numbered (one rank's
collectives must fit in a worker's memory), then each collective's arrivals on one worker.
"""

from __future__ import annotations

from pathlib import Path

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from . import clock, durations

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
    entries = [
        frame
        for frame in (
            _entries(dataset / "api", key, offsets, ["operation", "domain", "args"], _rccl),
            _entries(dataset / "marker", key, offsets, ["operation", "message"], _ranges),
        )
        if frame is not None
    ]
    if not entries:
        return _typed(pd.DataFrame(columns=columns), key)
    meta = {"host": "string", key: "i8", **ARRIVAL}
    arrivals = dd.concat(entries).groupby(["host", key]).apply(_numbered, key, meta=meta).reset_index(drop=True)
    per_collective = arrivals.groupby(MATCH).apply(_last, key, meta=STRAGGLER)
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


def _entries(table: Path, key: str, offsets: dict, columns: list[str], select):
    """The collectives' entries of a table, reduced on each worker to what matching needs:
    host, rank, start on the Unix epoch, kind, name, communicator pointer."""
    if not table.is_dir():
        return None
    frame = dd.read_parquet(table, columns=["host", key, "start_ns", *columns], dataset={"partitioning": "hive"})
    return frame.map_partitions(select, key, offsets, meta=_entry_meta(key))


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


def _numbered(entries: pd.DataFrame, key: str) -> pd.DataFrame:
    """One rank's entries numbered: its communicators by first use, each collective by
    its occurrence. (The rank's host and `key` are the group's name, pandas' apply
    leaves the grouping columns out.)"""
    host, rank = entries.name
    entries = entries.sort_values("start_ns", kind="stable")
    pointers = entries["pointer"].to_numpy()
    kinds = entries["kind"].to_numpy()
    first_use: dict[tuple[str, str], int] = {}
    used: dict[str, int] = {}
    for kind, pointer in zip(kinds, pointers):
        if (kind, pointer) not in first_use:
            first_use[kind, pointer] = used.get(kind, 0)
            used[kind] = first_use[kind, pointer] + 1
    numbered = pd.DataFrame(
        {
            "host": host,
            key: rank,
            "kind": entries["kind"].to_numpy(),
            "name": entries["name"].to_numpy(),
            "communicator": np.array([first_use[k, p] for k, p in zip(kinds, pointers)], dtype=np.int64),
            "arrival_ns": entries["start_ns"].to_numpy(),
        }
    )
    numbered.insert(5, "occurrence", numbered.groupby(["kind", "name", "communicator"]).cumcount().astype(np.int64))
    return numbered.astype({"host": "string", key: "i8", **ARRIVAL})


def _last(arrivals: pd.DataFrame, key: str) -> pd.Series:
    """Who of one collective's ranks arrived last, and the others' waits."""
    times = arrivals["arrival_ns"].to_numpy()
    last = int(np.argmax(times))
    # Relative to the first: epoch nanoseconds lose their last digits as floats.
    since_first = times - times.min()
    return pd.Series(
        {
            "ranks": len(times),
            "host": arrivals["host"].iloc[last],
            "rank": int(arrivals[key].iloc[last]),
            "arrival_ns": int(times[last]),
            "first_arrival_ns": int(times.min()),
            "late_ns": float(since_first[last] - np.median(since_first)),
            "spread_ns": int(since_first[last]),
            "wait_ns": int((times[last] - times).sum()),
        }
    )
