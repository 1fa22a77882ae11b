"""``rocflow campaign diff A B``: two campaigns' kernel summaries side by side, over all
ranks (the overall rows of each ``kernels.parquet``), with the metrics ``rocflow diff``
gates two runs with, written to ``--metrics FILE`` as JSON for ``rocflow campaign diff
--fail-if``, which gates on them in rocflow's own expression language. Exit code 2 when a
folder is no campaign.

The metrics, as ``rocflow diff`` defines them (``worst_counter_ratio`` has no campaign
counterpart: a campaign summarises no counters):

- ``kernel_time_ratio``: the kernels' total time, B over A;
- ``api_time_ratio``: the API calls' total time, B over A;
- ``worst_kernel_ratio``: the largest per-kernel total time ratio, of kernels in both;
- ``kernels_added``, ``kernels_removed``: kernels only in B, only in A.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pandas as pd

from .errors import UserError

#: The statistics compared per kernel.
STATISTICS = ["calls", "total_ns", "mean_ns", "p95_ns"]


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="rocflow campaign diff", description=__doc__.split("\n\n")[0])
    p.add_argument("a", metavar="A", help="the baseline campaign's folder")
    p.add_argument("b", metavar="B", help="the campaign compared with it")
    p.add_argument("--metrics", metavar="FILE", help="also write the metrics, by name, as a JSON object to FILE")
    p.add_argument("--format", choices=["text", "json"], default="text")
    p.add_argument("--top", type=int, default=15, metavar="N", help="kernels shown (default 15)")
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    try:
        a, b = overall(Path(args.a), "kernels"), overall(Path(args.b), "kernels")
        table = side_by_side(a, b)
        names = metrics(table, overall(Path(args.a), "api"), overall(Path(args.b), "api"))
    except UserError as e:
        print(f"error: {e}", file=sys.stderr)
        if e.hint:
            print(f"  = help: {e.hint}", file=sys.stderr)
        return 2
    print(text(table, names, args.top) if args.format == "text" else _json(table, names))
    if args.metrics is not None:
        Path(args.metrics).write_text(json.dumps(names))
    return 0


def overall(campaign: Path, recipe: str) -> pd.DataFrame:
    """A campaign's overall rows of a summary recipe's table."""
    path = campaign / f"{recipe}.parquet"
    if not path.is_file():
        raise UserError(
            f"`{campaign}` is no campaign: it has no {recipe}.parquet", hint="name folders `rocflow campaign -o` wrote"
        )
    table = pd.read_parquet(path)
    return table[table["host"].isna()].drop(columns=["host", table.columns[1]])


def side_by_side(a: pd.DataFrame, b: pd.DataFrame) -> pd.DataFrame:
    """One row per kernel of either campaign: each statistic in A and in B, the change of
    the total time and its ratio (empty where a campaign lacks the kernel), the largest
    change first."""
    table = pd.merge(
        a[["kernel", *STATISTICS]], b[["kernel", *STATISTICS]], on="kernel", how="outer", suffixes=("_a", "_b")
    )
    table["delta_ns"] = table["total_ns_b"].fillna(0) - table["total_ns_a"].fillna(0)
    both = table["total_ns_a"].gt(0) & table["total_ns_b"].notna()
    table["ratio"] = (table["total_ns_b"] / table["total_ns_a"]).where(both)
    order = table["delta_ns"].abs().sort_values(ascending=False, kind="stable").index
    columns = ["kernel", *[f"{s}_{side}" for s in STATISTICS for side in "ab"], "delta_ns", "ratio"]
    return table.loc[order, columns].reset_index(drop=True)


def metrics(kernels: pd.DataFrame, api_a: pd.DataFrame, api_b: pd.DataFrame) -> dict[str, float]:
    """The names `rocflow campaign diff --fail-if` knows, with their values."""
    return {
        "kernel_time_ratio": float(kernels["total_ns_b"].sum() / max(kernels["total_ns_a"].sum(), 1.0)),
        "api_time_ratio": float(api_b["total_ns"].sum() / max(api_a["total_ns"].sum(), 1.0)),
        "worst_kernel_ratio": float(kernels["ratio"].max()) if kernels["ratio"].notna().any() else 0.0,
        "kernels_added": float(kernels["total_ns_a"].isna().sum()),
        "kernels_removed": float(kernels["total_ns_b"].isna().sum()),
    }


def text(table: pd.DataFrame, names: dict[str, float], top: int) -> str:
    """The kernels for people, `top` of them, then the metrics."""
    header = ["kernel", *[f"{side} {s}" for s in STATISTICS for side in "AB"], "delta", "ratio"]
    rows = [
        [_cell(row.kernel, 60), *[_number(v) for v in row[1:-2]], f"{row.delta_ns:+.0f}", _ratio(row)]
        for row in table.head(top).itertuples(index=False)
    ]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in [header, *rows]]
    return "\n".join(["kernels", *lines, "", *[f"{name} = {value:.4f}" for name, value in names.items()]])


def _cell(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _number(value) -> str:
    return "-" if pd.isna(value) else f"{value:.0f}"


def _ratio(row) -> str:
    if pd.isna(row.total_ns_a):
        return "new"
    if pd.isna(row.total_ns_b):
        return "gone"
    return "-" if pd.isna(row.ratio) else f"{row.ratio:.3f}x"


def _json(table: pd.DataFrame, names: dict[str, float]) -> str:
    rows = table.astype(object).where(table.notna(), None).to_dict("records")
    return json.dumps({"kernels": rows, "metrics": names}, indent=2)
