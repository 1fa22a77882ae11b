"""One input's conversion, the task a campaign's workers run: rocflow's own reader
(``rocflow replay INPUT campaign.toml``) writes the input's tables into a temporary folder
on the worker, which is then moved beside the campaign's dataset.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import pyarrow.parquet as pq

from .inputs import Input

#: The environment variable naming the rocflow the driver hands its tasks (`rocflow
#: campaign` sets it to itself); else they run `rocflow` on their worker's PATH.
EXECUTABLE = "ROCFLOW"


def executable() -> str:
    """The rocflow tasks run, as the driver names it."""
    return os.environ.get(EXECUTABLE, "rocflow")


@dataclass(frozen=True)
class Process:
    """A process an input holds, as its `processes` table says, and where its tables are."""

    #: As the partition folder names it (percent-escaped, as the Parquet sink writes it).
    host: str
    pid: int
    rank: int | None
    #: The number of ranks of its job, where the launcher said (older inputs keep none).
    world_size: int | None
    ppid: int
    start_ns: int
    start_unix_ns: int | None
    command: list[str]
    #: The partition folder the replay wrote its tables under: `host=H/pid=P`.
    folder: str


@dataclass(frozen=True)
class Converted:
    """An input converted: its tables under `tables` (`<table>/host=H/pid=P/…`)."""

    input: Input
    tables: Path
    processes: list[Process]


class ConversionFailed(Exception):
    """rocflow could not read an input: its own words. (Its arguments are all it holds,
    so it crosses from worker to driver as it is.)"""

    def __init__(self, input: Input, message: str):
        super().__init__(input, message)

    def __str__(self) -> str:
        input, message = self.args
        return f"`{input.path}`: {message}"


def convert(input: Input, into: Path, rocflow: str) -> Converted:
    """Replays `input` with `rocflow` on this worker and moves its tables to `into`
    (created here)."""
    pipeline = resources.files("rocflow").joinpath("campaign.toml")
    with tempfile.TemporaryDirectory(prefix="rocflow-campaign-") as scratch, resources.as_file(
        pipeline
    ) as pipeline_file:
        command = [rocflow, "replay", str(input.path), str(pipeline_file), "-d", scratch, "-q"]
        try:
            done = subprocess.run(command, capture_output=True, text=True)
        except OSError as e:
            raise ConversionFailed(input, f"cannot run {rocflow}: {e.strerror}") from None
        if done.returncode != 0:
            said = done.stderr.strip().removeprefix("error: ") or f"exit code {done.returncode}"
            raise ConversionFailed(input, said)
        dataset = Path(scratch) / "dataset"
        if not dataset.is_dir():
            raise ConversionFailed(input, "holds no records")
        processes = _processes(dataset / "processes")
        shutil.move(dataset, into)
    return Converted(input, into, processes)


def _processes(table: Path) -> list[Process]:
    """Each process of the replay's `processes` table, with the partition folder its rows
    lie in (the partition columns are in the folder names, not the files)."""
    found = []
    for part in sorted(table.glob("host=*/pid=*/*.parquet")):
        folder = part.parent.relative_to(table).as_posix()
        host = part.parent.parent.name.removeprefix("host=")
        for row in pq.read_table(part).to_pylist():
            found.append(
                Process(
                    host=host,
                    pid=int(part.parent.name.removeprefix("pid=")),
                    rank=row["rank"],
                    world_size=row.get("world_size"),
                    ppid=row["ppid"],
                    start_ns=_ns(row["start_ns"]),
                    start_unix_ns=_ns(row.get("start_unix_ns")),
                    command=row["command"],
                    folder=folder,
                )
            )
    return found


def _ns(time) -> int | None:
    """Nanoseconds of a Parquet timestamp read back (pandas' Timestamp), or None."""
    return None if time is None else int(time.value)
