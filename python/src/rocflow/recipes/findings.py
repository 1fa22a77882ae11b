"""Findings: ``findings.json``, the rules of ``rocflow analyze`` over a campaign's inputs,
the same findings ``rocflow analyze INPUTS… --format json`` gives for the same inputs (a
campaign's folder included), in its shape: ``{"findings": [...]}``.

The work is split as the rules allow. The rules that look at each process alone run rank
by rank, one Dask task an input, on the worker the input lies by
(``rocflow analyze INPUT --scope process``); the rules that compare ranks
(``rank-imbalance``, ``collective-straggler``) run once over every input together, in a
task of their own (``--scope ranks``), which reads each rank's records into one trace.
The findings are then merged in rocflow's order: the most time at stake first, the most
severe first among equals, then by rule and statement.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from ..errors import UserError
from ..inputs import Input

#: Severities, least first, as rocflow orders them.
SEVERITIES = ("info", "warning", "error")


class AnalysisFailed(Exception):
    """rocflow could not analyse some inputs: its own words. (Its arguments are all it
    holds, so it crosses from worker to driver as it is.)"""

    def __str__(self) -> str:
        paths, message = self.args
        return f"{', '.join(f'`{p}`' for p in paths)}: {message}"


def run(client, inputs: list[Input], into: Path, rocflow: str, sets: list[str] = ()) -> list[dict]:
    """Writes `into`/findings.json from `inputs`; returns the findings."""
    found = findings(client, inputs, rocflow, sets)
    (into / "findings.json").write_text(json.dumps({"findings": found}, indent=2) + "\n")
    return found


def findings(client, inputs: list[Input], rocflow: str, sets: list[str] = ()) -> list[dict]:
    """The findings of every rule over `inputs`, analysed with `rocflow` on `client`'s
    workers; `sets` change rules' thresholds (``collective-straggler.min_late_ns=50us``)."""
    from dask.distributed import wait

    paths = [str(i.path) for i in inputs]
    tasks = client.map(analyse, [[p] for p in paths], scope="process", rocflow=rocflow, sets=list(sets), pure=False)
    tasks.append(client.submit(analyse, paths, scope="ranks", rocflow=rocflow, sets=list(sets), pure=False))
    wait(tasks)
    failures = [t.exception() for t in tasks if t.status == "error"]
    for failure in failures:
        if not isinstance(failure, AnalysisFailed):
            raise failure
    if failures:
        raise UserError("; ".join(str(f) for f in failures))
    found = [finding for part in client.gather(tasks) for finding in part]
    return sorted(found, key=order)


def order(finding: dict) -> tuple:
    """rocflow's order of findings (see the module's documentation)."""
    severity = SEVERITIES.index(finding["severity"])
    return (-finding["at_stake_ns"], -severity, finding["rule"], finding["statement"])


def analyse(paths: list[str], scope: str, rocflow: str, sets: list[str]) -> list[dict]:
    """The findings of the rules of `scope` over `paths` together, by `rocflow analyze`
    on this worker."""
    settings = [arg for s in sets for arg in ("--set", s)]
    command = [rocflow, "analyze", *paths, "--scope", scope, "--format", "json", *settings]
    try:
        done = subprocess.run(command, capture_output=True, text=True)
    except OSError as e:
        raise AnalysisFailed(paths, f"cannot run {rocflow}: {e.strerror}") from None
    if done.returncode != 0:
        said = done.stderr.strip().removeprefix("error: ") or f"exit code {done.returncode}"
        raise AnalysisFailed(paths, said)
    return json.loads(done.stdout)["findings"]
