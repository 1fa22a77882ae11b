"""The inputs a campaign names, resolved into the files rocflow reads.

An argument is a rocpd database (``*.db``), a raw spool (``*.rfraw``), a run folder (one
holding ``last.rfraw``, as ``rocflow run`` leaves it), a folder of those (each database,
spool and run folder directly in it), a glob of any of them, or ``@LIST``: a text file
naming one argument a line (relative to the list's folder; blank lines and lines starting
with ``#`` are skipped).
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass
from pathlib import Path

from .errors import UserError

KINDS = {".db": "rocpd", ".rfraw": "spool"}


@dataclass(frozen=True)
class Input:
    """One input, converted by one task: a database, a spool or a run folder."""

    path: Path
    kind: str  # "rocpd", "spool" or "run"


def resolve(arguments: list[str], cwd: Path | None = None) -> list[Input]:
    """The inputs `arguments` name, each once, in the order first named.

    Raises a :class:`UserError` naming the first argument that names nothing readable.
    """
    cwd = cwd or Path.cwd()
    found: dict[Path, Input] = {}
    for argument in arguments:
        for item in _expand(argument, cwd, listed_in=None):
            found.setdefault(item.path, item)
    if not found:
        raise UserError("no inputs given")
    return list(found.values())


def _expand(argument: str, cwd: Path, listed_in: Path | None) -> list[Input]:
    where = f" (listed in {listed_in})" if listed_in else ""
    if argument.startswith("@"):
        return _listed(cwd / argument[1:], where)
    if glob.has_magic(argument):
        matches = sorted(glob.glob(str(cwd / argument)))
        if not matches:
            raise UserError(f"`{argument}`{where} matches no file")
        return [item for match in matches for item in _one(Path(match), argument, where)]
    return _one(cwd / argument, argument, where)


def _listed(path: Path, where: str) -> list[Input]:
    try:
        text = path.read_text()
    except OSError as e:
        raise UserError(f"cannot read the input list `{path}`{where}: {e.strerror}") from None
    lines = (line.strip() for line in text.splitlines())
    return [
        item
        for line in lines
        if line and not line.startswith("#")
        for item in _expand(line, path.parent, listed_in=path)
    ]


def _one(path: Path, argument: str, where: str) -> list[Input]:
    path = Path(os.path.normpath(path))
    if path.is_dir():
        if (path / "last.rfraw").exists():
            return [Input(path, "run")]
        inside = _in_folder(path)
        if not inside:
            raise UserError(
                f"`{argument}`{where} is a folder holding no rocpd database, spool or run folder",
                hint="a run folder is the one `rocflow run` writes, with `last.rfraw` in it",
            )
        return inside
    if not path.exists():
        raise UserError(f"`{argument}`{where}: no such file or folder")
    kind = KINDS.get(path.suffix)
    if kind is None:
        raise UserError(
            f"`{argument}`{where} is neither a rocpd database (.db), a spool (.rfraw) nor a run folder",
            hint="a list of inputs is named with @: `@ranks.txt`",
        )
    return [Input(path, kind)]


def _in_folder(folder: Path) -> list[Input]:
    items = []
    for entry in folder.iterdir():
        if entry.is_dir() and (entry / "last.rfraw").exists():
            items.append(Input(entry, "run"))
        elif entry.is_file() and entry.suffix in KINDS:
            items.append(Input(entry, KINDS[entry.suffix]))
    return sorted(items, key=lambda item: item.path)
