"""A campaign at scale against AMD's rocpd summary, on the same databases.

Generates a simulated MPI job (``rocflow generate DIR --ranks N --nodes 8 --rocpd``: a spool
and a rocpd database per rank, with stragglers and slow ranks injected), then times, each
as a separate process:

- ``rocflow campaign DIR/*.db`` on a LocalCluster of 1, 2 and as many workers as the
  machine has cores (``--workers``), every recipe included;
- AMD's ``rocpd summary --summary-by-rank`` of the same databases, 8 to a call (``-i`` attaches them all
  to one SQLite connection, whose limit is 10), the calls one after another as a user
  runs them.

and prints ranks/s and records/s of each, with the ratios, in one table. It needs only
the Python standard library: the campaign runs in the Python ``--python`` names (the
rocflow package installed), AMD's tool in the one ``--rocpd-python`` names (3.11, with
the kit's requirements)::

    python3 python/benches/campaign_scale.py --rocflow target/release/rocflow \\
        --python VENV/bin/python --rocpd ../shared/rocpd-peer/bin/rocpd \\
        --rocpd-python ROCPD_VENV/bin/python --ranks 1024 --work /tmp/campscale
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

#: Databases per `rocpd summary` call (SQLite attaches at most 10 to a connection).
AMD_BATCH = 8


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rocflow", required=True, help="a release rocflow")
    p.add_argument("--python", required=True, help="a Python with the rocflow package (and Dask)")
    p.add_argument("--rocpd", help="AMD's rocpd (rocpd-peer/bin/rocpd); left out: not compared")
    p.add_argument("--rocpd-python", help="the Python AMD's rocpd runs in (ROCPD_PYTHON)")
    p.add_argument("--ranks", type=int, default=1024)
    p.add_argument("--nodes", type=int, default=8)
    p.add_argument("--steps", type=int, default=50, help="steps per rank (about 9 records each)")
    p.add_argument(
        "--workers",
        default=f"1,2,{os.cpu_count()}",
        help="LocalCluster sizes, comma-separated (default: 1, 2 and the machine's cores)",
    )
    p.add_argument("--work", required=True, help="a folder to write the job and campaigns in")
    args = p.parse_args()

    work = Path(args.work)
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    job = work / "job"
    rocflow = str(Path(args.rocflow).resolve())

    faults = ["--straggler", "17:5:2000000", "--slow-rank", f"{args.ranks // 2}:0:2"]
    generate = [rocflow, "generate", str(job), "--ranks", str(args.ranks), "--nodes", str(args.nodes)]
    generate += ["--steps", str(args.steps), "--rocpd", *faults]
    wall, out = timed(generate)
    records = int(re.search(r"generated (\d+) records", out).group(1))
    databases = sorted(glob.glob(str(job / "*.db")), key=_rank)
    size = sum(os.path.getsize(db) for db in databases)
    print(
        f"job: {args.ranks} ranks on {args.nodes} nodes, {records} records, "
        f"{len(databases)} rocpd databases ({size / 2**20:.1f} MiB); generated in {wall:.1f} s"
    )

    rows = []
    env = {**os.environ, "ROCFLOW_PYTHON": args.python}
    for workers in [int(w) for w in args.workers.split(",")]:
        camp = work / f"campaign-{workers}"
        command = [rocflow, "campaign", str(job / "*.db"), "-o", str(camp), "--workers", str(workers)]
        wall, _ = timed(command, env)
        found = _found(camp)
        rows.append((f"rocflow campaign, {workers} worker{'s' if workers > 1 else ''}", wall, found))

    if args.rocpd:
        env = dict(os.environ)
        if args.rocpd_python:
            env["ROCPD_PYTHON"] = args.rocpd_python
        summaries = work / "rocpd-summary"
        summaries.mkdir()
        started = time.perf_counter()
        for at in range(0, len(databases), AMD_BATCH):
            batch = databases[at : at + AMD_BATCH]
            out = summaries / f"batch-{at // AMD_BATCH}"
            command = [args.rocpd, "summary", "-i", *batch, "--summary-by-rank", "-f", "csv", "-d", str(out)]
            run(command, env)
        wall = time.perf_counter() - started
        calls = -(-len(databases) // AMD_BATCH)
        rows.append((f"AMD rocpd summary, {AMD_BATCH} a call ({calls} calls)", wall, "per batch"))

    print()
    print(f"{'':44} {'wall s':>8} {'ranks/s':>9} {'records/s':>11} {'vs first':>9}  found")
    first = rows[0][1]
    for name, wall, found in rows:
        print(
            f"{name:44} {wall:8.2f} {args.ranks / wall:9.1f} {records / wall:11.0f} "
            f"{first / wall:8.2f}x  {found}"
        )
    if args.rocpd:
        best = min(wall for name, wall, _ in rows[:-1])
        print(f"\nthe fastest campaign against AMD's rocpd summary: {rows[-1][1] / best:.2f}x as fast")
    return 0


def _rank(path: str) -> int:
    return int(re.search(r"rank-(\d+)\.db$", path).group(1))


def _found(camp: Path) -> str:
    """What the campaign found: its stragglers and imbalances, by the CSV's rows."""

    def rows(name: str) -> int:
        with open(camp / f"{name}.csv") as f:
            return sum(1 for _ in f) - 1

    return f"{rows('stragglers')} stragglers, {rows('imbalance')} imbalanced kernels"


def timed(command: list[str], env: dict | None = None) -> tuple[float, str]:
    started = time.perf_counter()
    out = run(command, env)
    return time.perf_counter() - started, out


def run(command: list[str], env: dict | None = None) -> str:
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        sys.exit(f"{' '.join(command[:6])} … failed ({done.returncode}):\n{done.stderr}")
    return done.stdout


if __name__ == "__main__":
    sys.exit(main())
