"""``rocflow campaign``: the per-rank inputs of a job converted, each by one Dask task, into
one Parquet dataset, then the recipes run over it.

The campaign's folder ``DIR`` holds::

    dataset/<table>/host=H/rank=R/part-N.parquet   every table of every process
    dataset/processes.parquet                      one row per process (see PROCESSES)
    kernels.csv, kernels.parquet                   the kernel summary (recipes.kernels)
    api.csv, api.parquet                           the API summary (recipes.api)
    gpu_busy.*, gpu_gaps.*                         GPU busy time per rank over time, idle gaps (recipes.gpu_busy)
    imbalance.csv, imbalance.parquet               kernels whose slowest rank is far above the median (recipes.imbalance)
    stragglers.csv, stragglers.parquet             collectives whose last rank arrived late (recipes.stragglers)
    findings.json                                  rocflow analyze's findings over every rank (recipes.findings)
    campaign.html                                  the page: busy heatmap, straggler bars, imbalance table (page)

Processes are filed under their MPI rank, or under their pid (``pid=P``) in a campaign
where some process has no rank. Everything is written beside ``DIR`` and moved into place
once whole: a campaign that fails leaves nothing.

Run as ``python -m rocflow.campaign`` (``rocflow campaign`` runs it so);
``python -m rocflow.campaign diff A B`` compares two campaigns (:mod:`rocflow.diff`).
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import sys
import urllib.parse
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from . import diff, page
from .convert import ConversionFailed, Converted, convert, executable
from .errors import UserError
from .inputs import resolve
from .recipes import api, findings, gpu_busy, imbalance, kernels, stragglers

#: The columns of ``dataset/processes.parquet``, one row per process.
PROCESSES = pa.schema(
    [
        pa.field("host", pa.string(), nullable=False),
        pa.field("pid", pa.uint32(), nullable=False),
        # The MPI rank the launcher gave the process, where it gave one.
        pa.field("rank", pa.uint32()),
        # The number of ranks of its job, as the launcher said; else how many ranks the
        # campaign holds.
        pa.field("world_size", pa.uint32()),
        pa.field("ppid", pa.uint32(), nullable=False),
        # When the process was described, on the SDK's clock (boot time), as records' times.
        pa.field("start_ns", pa.int64(), nullable=False),
        # The same moment by the host's wall clock (Unix epoch), where the input keeps it.
        pa.field("start_unix_ns", pa.int64()),
        # start_unix_ns - start_ns: added to the process's times, it puts them on the Unix
        # epoch, where the clocks of the job's hosts meet.
        pa.field("clock_offset_ns", pa.int64()),
        pa.field("command", pa.list_(pa.string()), nullable=False),
        # The input the process was read from.
        pa.field("input", pa.string(), nullable=False),
    ]
)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="rocflow campaign", description=__doc__.split("\n\n")[0])
    p.add_argument("inputs", nargs="+", metavar="INPUT")
    p.add_argument("-o", "--output", required=True, metavar="DIR")
    cluster = p.add_mutually_exclusive_group()
    cluster.add_argument("--scheduler", metavar="ADDRESS")
    cluster.add_argument("--scheduler-file", metavar="FILE")
    cluster.add_argument("--workers", type=int, metavar="N")
    p.add_argument(
        "--imbalance-ratio",
        type=float,
        default=imbalance.RATIO,
        metavar="R",
        help="report a kernel whose slowest rank spent R times the median rank's time or more",
    )
    p.add_argument(
        "--straggler-ns",
        type=int,
        default=stragglers.THRESHOLD_NS,
        metavar="NS",
        help="report a collective whose last rank arrived NS nanoseconds or more after the median rank",
    )
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["diff"]:
        return diff.main(argv[1:])
    args = parser().parse_args(argv)
    try:
        run(args)
    except UserError as e:
        say(f"error: {e}")
        if e.hint:
            say(f"  = help: {e.hint}")
        return 2
    return 0


def say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> None:
    out = Path(args.output)
    if out.exists() and not (out.is_dir() and not any(out.iterdir())):
        raise UserError(f"`{out}` exists: a campaign writes a folder of its own", hint="name a new folder with -o")
    if args.workers is not None and args.workers < 1:
        raise UserError("--workers must be 1 or more")
    if not args.imbalance_ratio >= 1:
        raise UserError("--imbalance-ratio must be 1 or more", hint="it is the slowest rank's time over the median's")
    if args.straggler_ns < 0:
        raise UserError("--straggler-ns must be 0 or more")
    inputs = resolve(args.inputs)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = out.parent / f".{out.name}.partial-{os.getpid()}"
    staging.mkdir()
    try:
        with client_for(args) as client:
            converted = convert_all(client, inputs, staging / "converted")
            key, processes = layout(converted, staging / "dataset")
            shutil.rmtree(staging / "converted")
            pq.write_table(processes, staging / "dataset" / "processes.parquet")
            summary = kernels.run(staging / "dataset", key, staging)
            imbalanced = imbalance.run(summary, key, staging, args.imbalance_ratio)
            late = stragglers.run(staging / "dataset", key, staging, args.straggler_ns)
            api.run(staging / "dataset", key, staging)
            busy, _ = gpu_busy.run(staging / "dataset", key, staging)
            findings.run(client, inputs, staging, executable())
            page.write(staging, key, busy, late, imbalanced)
        if out.exists():
            out.rmdir()
        staging.rename(out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    say(f"campaign: {len(inputs)} inputs, {processes.num_rows} processes, into {out}")


@contextmanager
def client_for(args: argparse.Namespace):
    """A client of the scheduler the options name, or of a LocalCluster of their workers
    (one per core by default), closed at the end."""
    from dask.distributed import Client, LocalCluster

    if args.scheduler:
        with Client(args.scheduler) as client:
            yield client
    elif args.scheduler_file:
        if not Path(args.scheduler_file).is_file():
            raise UserError(f"the scheduler file `{args.scheduler_file}` does not exist")
        with Client(scheduler_file=args.scheduler_file) as client:
            yield client
    else:
        workers = args.workers or os.cpu_count() or 1
        cluster = LocalCluster(
            n_workers=workers, threads_per_worker=1, dashboard_address=":0", silence_logs=logging.ERROR
        )
        with cluster, Client(cluster) as client:
            yield client


def convert_all(client, inputs, into: Path) -> list[Converted]:
    """Each input converted by a task of its own; every input that fails is named."""
    from dask.distributed import wait

    into.mkdir()
    targets = [into / str(i) for i in range(len(inputs))]
    futures = client.map(convert, inputs, targets, rocflow=executable(), pure=False)
    wait(futures)
    failures = [f.exception() for f in futures if f.status == "error"]
    for failure in failures:
        if not isinstance(failure, ConversionFailed):
            raise failure
        say(f"error: {failure}")
    if failures:
        raise UserError(f"{len(failures)} of {len(inputs)} inputs could not be read")
    return client.gather(futures)


def layout(converted: list[Converted], dataset: Path) -> tuple[str, pa.Table]:
    """Files each process's tables under its host and rank (or pid, unless every process
    has a rank) in `dataset`; returns the key and the processes table."""
    processes = [(c, p) for c in converted for p in c.processes]
    key = "rank" if processes and all(p.rank is not None for _, p in processes) else "pid"
    seen = {}
    for c, p in processes:
        place = (p.host, getattr(p, key))
        if place in seen:
            raise UserError(f"{key} {place[1]} on {p.host} is in both `{seen[place]}` and `{c.input.path}`")
        seen[place] = c.input.path
    dataset.mkdir()
    for c, p in processes:
        for table in sorted(c.tables.iterdir()):
            source = table / p.folder
            if table.name == "processes" or not source.is_dir():
                continue
            target = dataset / table.name / source.parent.name / f"{key}={getattr(p, key)}"
            target.parent.mkdir(parents=True, exist_ok=True)
            source.rename(target)
    ranks = len({p.rank for _, p in processes if p.rank is not None}) or None
    rows = [
        {
            "host": urllib.parse.unquote(p.host),
            "pid": p.pid,
            "rank": p.rank,
            "world_size": None if p.rank is None else p.world_size or ranks,
            "ppid": p.ppid,
            "start_ns": p.start_ns,
            "start_unix_ns": p.start_unix_ns,
            "clock_offset_ns": None if p.start_unix_ns is None else p.start_unix_ns - p.start_ns,
            "command": p.command,
            "input": str(c.input.path),
        }
        for c, p in processes
    ]
    return key, pa.Table.from_pylist(rows, schema=PROCESSES)


if __name__ == "__main__":
    sys.exit(main())
