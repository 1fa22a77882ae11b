"""Campaign datasets written directly, in the layout a campaign files its converted
tables in (``dataset/<table>/host=H/rank=R/part-0.parquet`` and ``processes.parquet``),
with only the columns the recipes read."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rocflow.campaign import PROCESSES

#: The columns of each table the recipes read, as the Parquet sink types them.
SCHEMAS = {
    "kernel_dispatch": pa.schema(
        [
            ("agent", pa.uint32()),
            ("start_ns", pa.timestamp("ns")),
            ("end_ns", pa.timestamp("ns")),
            ("duration_ns", pa.int64()),
            ("kernel_name", pa.dictionary(pa.int32(), pa.string())),
        ]
    ),
    "api": pa.schema(
        [
            ("start_ns", pa.timestamp("ns")),
            ("end_ns", pa.timestamp("ns")),
            ("duration_ns", pa.int64()),
            ("domain", pa.dictionary(pa.int32(), pa.string())),
            ("operation", pa.dictionary(pa.int32(), pa.string())),
            (
                "args",
                pa.list_(
                    pa.struct(
                        [("position", pa.uint8()), ("name", pa.string()), ("type", pa.string()), ("value", pa.string())]
                    )
                ),
            ),
        ]
    ),
    "marker": pa.schema(
        [
            ("start_ns", pa.timestamp("ns")),
            ("end_ns", pa.timestamp("ns")),
            ("duration_ns", pa.int64()),
            ("message", pa.dictionary(pa.int32(), pa.string())),
            ("operation", pa.dictionary(pa.int32(), pa.string())),
        ]
    ),
}


class Job:
    """A campaign's dataset being written: rows per table and rank, then `write`."""

    def __init__(self, root: Path):
        self.root = root
        self.rows: dict[tuple[str, str, int], list[dict]] = {}
        self.processes: dict[tuple[str, int], int] = {}

    def rank(self, host: str, rank: int, clock_offset_ns: int = 0) -> None:
        self.processes[(host, rank)] = clock_offset_ns

    def kernel(self, host: str, rank: int, name: str, start: int, duration: int, agent: int = 0) -> None:
        row = {"agent": agent, "start_ns": start, "end_ns": start + duration, "duration_ns": duration, "kernel_name": name}
        self.rows.setdefault(("kernel_dispatch", host, rank), []).append(row)

    def rccl(self, host: str, rank: int, op: str, start: int, duration: int, comm: str | None) -> None:
        args = None if comm is None else [{"position": 5, "name": "comm", "type": "ncclComm_t", "value": comm}]
        row = {
            "start_ns": start,
            "end_ns": start + duration,
            "duration_ns": duration,
            "domain": "rccl_api",
            "operation": op,
            "args": args,
        }
        self.rows.setdefault(("api", host, rank), []).append(row)

    def hip(self, host: str, rank: int, op: str, start: int, duration: int) -> None:
        row = {
            "start_ns": start,
            "end_ns": start + duration,
            "duration_ns": duration,
            "domain": "hip_runtime_api",
            "operation": op,
            "args": None,
        }
        self.rows.setdefault(("api", host, rank), []).append(row)

    def range(self, host: str, rank: int, message: str, start: int, duration: int, op: str = "roctxRangePushA") -> None:
        row = {"start_ns": start, "end_ns": start + duration, "duration_ns": duration, "message": message, "operation": op}
        self.rows.setdefault(("marker", host, rank), []).append(row)

    def write(self) -> Path:
        """Writes the dataset; returns its folder."""
        dataset = self.root / "dataset"
        for (table, host, rank), rows in self.rows.items():
            folder = dataset / table / f"host={host}" / f"rank={rank}"
            folder.mkdir(parents=True)
            pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMAS[table]), folder / "part-0.parquet")
        processes = [
            {
                "host": host,
                "pid": 1000 + rank,
                "rank": rank,
                "world_size": len(self.processes),
                "ppid": 1,
                "start_ns": 0,
                "start_unix_ns": offset,
                "clock_offset_ns": offset,
                "command": ["./app"],
                "input": f"rank-{rank}.rfraw",
            }
            for (host, rank), offset in self.processes.items()
        ]
        dataset.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pylist(processes, schema=PROCESSES), dataset / "processes.parquet")
        return dataset


@pytest.fixture
def job(tmp_path: Path) -> Job:
    return Job(tmp_path)
