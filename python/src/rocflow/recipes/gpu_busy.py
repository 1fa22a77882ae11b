"""GPU busy and idle time per rank: ``gpu_busy.csv``/``.parquet``, a rank × time map, and
``gpu_gaps.csv``/``.parquet``, the idle gaps.

A GPU is busy while any kernel of the rank runs on it (kernels on several queues overlap
and count once, as ``rocflow summary``'s timeline counts them). Times are put on the Unix
epoch with each process's clock offset where it is known (``processes.parquet``), so the
hosts' rows line up; where it is not, they stay on the host's clock.

``gpu_busy``: the campaign's span (first kernel start to last kernel end, over all ranks)
cut into ``BINS`` bins of equal width, one row per rank, GPU and bin:

============= ======= ====================================================
host          string  the rank's host
rank          integer the MPI rank (``pid`` in a campaign filed by pid)
agent         integer the GPU (the agent index, as in ``agents``)
bin           integer the bin, 0 to BINS - 1
start_ns      integer the bin's start (Unix epoch where the offset is known)
busy_ns       integer the time of the bin the GPU was busy
busy_fraction float   busy_ns over the bin's width
============= ======= ====================================================

``gpu_gaps``: one row per rank and GPU, over the time from its first kernel's start to its
last kernel's end:

============== ======= ===================================================
host, rank,    ...     as above
agent
first_ns       integer the first kernel's start
last_ns        integer the last kernel's end
busy_ns        integer time the GPU was busy
idle_ns        integer the rest: the gaps' sum
gaps           integer idle gaps between kernels
longest_gap_ns integer the longest of them (0 without gaps)
busy_fraction  float   busy_ns over (last_ns - first_ns)
============== ======= ===================================================

Each rank's GPU's kernels are read together into one partition (:mod:`.ranks`):
one rank's dispatches must fit in a worker's memory, the campaign's never meet.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd

from . import clock, durations
from .ranks import per_rank

#: The bins of the busy map.
BINS = 200

BUSY = {"bin": "i8", "start_ns": "i8", "busy_ns": "i8", "busy_fraction": "f8"}
GAPS = {
    "first_ns": "i8",
    "last_ns": "i8",
    "busy_ns": "i8",
    "idle_ns": "i8",
    "gaps": "i8",
    "longest_gap_ns": "i8",
    "busy_fraction": "f8",
}


def run(dataset: Path, key: str, into: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Writes `into`/gpu_busy and gpu_gaps (.csv, .parquet) from `dataset`, whose processes
    are filed by host and `key` ("rank" or "pid"); returns the two tables."""
    busy, gaps = maps(dataset, key)
    return durations.write(busy, into, "gpu_busy"), durations.write(gaps, into, "gpu_gaps")


def maps(dataset: Path, key: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The busy map and the gaps of `dataset` (see the module's documentation)."""
    groups = ["host", key, "agent"]
    table = dataset / "kernel_dispatch"
    if not table.is_dir():
        empty = pd.DataFrame(columns=groups)
        return empty.assign(**{c: [] for c in BUSY}), empty.assign(**{c: [] for c in GAPS})
    offsets = clock.offsets(dataset / "processes.parquet", key)
    read = {table.name: ["agent", "start_ns", "end_ns"]}

    def each_gpu(work, columns: dict[str, str]):
        """`work` over each rank's GPU, in the partition that holds the rank."""
        shape = {"host": "string", key: "i8", "agent": "i8", **columns}
        meta = pd.DataFrame({c: pd.Series(dtype=t) for c, t in shape.items()})
        return per_rank(dataset, key, read, partial(_each_gpu, key=key, offsets=offsets, work=work), meta)

    # The gaps first: their extremes are the campaign's span, which the busy map needs.
    gaps = each_gpu(_gaps, GAPS).compute()
    edges = bin_edges(int(gaps["first_ns"].min()), int(gaps["last_ns"].max()))
    busy = each_gpu(partial(_binned, edges=edges), BUSY).compute()
    gaps = gaps.sort_values(groups, kind="stable")
    busy = busy.sort_values([key, "host", "agent", "bin"])
    return busy[[*groups, *BUSY]].reset_index(drop=True), gaps[[*groups, *GAPS]].reset_index(drop=True)


def _each_gpu(part: pd.DataFrame, key: str, offsets: dict, work) -> pd.DataFrame:
    """`work`'s result for each rank's GPU of `part`, beside its host, rank and agent."""
    groups = ["host", key, "agent"]
    done = _aligned(part, key, offsets).groupby(groups)[["start_ns", "end_ns"]].apply(work)
    return done.reset_index(level=groups).reset_index(drop=True)


def _aligned(part: pd.DataFrame, key: str, offsets: dict[tuple[str, int], int]) -> pd.DataFrame:
    """A partition's dispatches with plain columns, their times on the Unix epoch."""
    hosts = part["host"].astype("string")
    ranks = part[key].astype(np.int64)
    offset = clock.of_rows(hosts, ranks, offsets)
    return pd.DataFrame(
        {
            "host": part["host"].astype("string").to_numpy(),
            key: ranks.to_numpy(),
            "agent": part["agent"].astype(np.int64).to_numpy(),
            "start_ns": clock.ns(part["start_ns"]) + offset,
            "end_ns": clock.ns(part["end_ns"]) + offset,
        }
    )


def bin_edges(first: int, last: int) -> np.ndarray:
    """The edges of the map's bins from `first` to `last`, both included, in integers:
    Unix-epoch nanoseconds (about 1.8e18) are not exact in a float64, whose edges would
    cut off the first or last kernel's nanoseconds."""
    # floor(span * i / BINS) without the product, which overflows an int64 for a span of
    # years (a process whose offset is unknown stays on its boot clock, near 0).
    i = np.arange(BINS + 1, dtype=np.int64)
    span = last - first
    return first + (span // BINS) * i + (span % BINS) * i // BINS


def busy_segments(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The union of the intervals [start, end): its disjoint segments, in order."""
    order = np.lexsort((ends, starts))
    starts, ends = starts[order], ends[order]
    reach = np.maximum.accumulate(ends)
    # A segment begins where a kernel starts after every kernel before it ended.
    begins = np.concatenate(([True], starts[1:] > reach[:-1]))
    first = np.flatnonzero(begins)
    last = np.concatenate((first[1:], [len(starts)])) - 1
    return starts[first], reach[last]


def busy_before(points: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Busy time before each of `points`, of the disjoint segments in order."""
    done = np.concatenate(([0], np.cumsum(ends - starts)))
    begun = np.searchsorted(starts, points, side="right")
    last = np.maximum(begun - 1, 0)
    partial = np.minimum(points, ends[last]) - starts[last]
    return np.where(begun > 0, done[last] + partial, 0)


def _binned(dispatches: pd.DataFrame, edges: np.ndarray) -> pd.DataFrame:
    starts, ends = busy_segments(dispatches["start_ns"].to_numpy(), dispatches["end_ns"].to_numpy())
    busy = np.diff(busy_before(edges, starts, ends))
    widths = np.diff(edges)
    return pd.DataFrame(
        {
            "bin": np.arange(len(busy), dtype=np.int64),
            "start_ns": edges[:-1],
            "busy_ns": busy.astype(np.int64),
            "busy_fraction": np.divide(busy, widths, out=np.zeros(len(busy)), where=widths > 0),
        }
    )


def _gaps(dispatches: pd.DataFrame) -> pd.DataFrame:
    starts, ends = busy_segments(dispatches["start_ns"].to_numpy(), dispatches["end_ns"].to_numpy())
    gaps = starts[1:] - ends[:-1]
    busy = int((ends - starts).sum())
    span = int(ends[-1] - starts[0])
    row = {
        "first_ns": int(starts[0]),
        "last_ns": int(ends[-1]),
        "busy_ns": busy,
        "idle_ns": span - busy,
        "gaps": len(gaps),
        "longest_gap_ns": int(gaps.max()) if len(gaps) else 0,
        "busy_fraction": busy / span if span else 1.0,
    }
    return pd.DataFrame([row]).astype(GAPS)
