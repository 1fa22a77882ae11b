"""``campaign.html``: a campaign's page, one self-contained file (inline SVG and CSS, no
script, nothing fetched) that any browser opens offline:

- a rank x time heatmap of GPU busy time (:mod:`.recipes.gpu_busy`): a row per rank and
  GPU, a column per bin, darker where busier; beyond ``MAX_ROWS`` rows, consecutive rows
  are merged into bands (their mean), so the page stays small for thousands of ranks;
- straggler bars (:mod:`.recipes.stragglers`): the ``MAX_BARS`` collectives with the most
  waiting, each bar the others' summed wait, labelled with who arrived last and how late;
- the imbalance table (:mod:`.recipes.imbalance`).
"""

from __future__ import annotations

from html import escape
from pathlib import Path

import numpy as np
import pandas as pd

MAX_ROWS = 256
MAX_BARS = 30
#: Sizes of the heatmap's cells and of the bars, in pixels.
CELL_W, LABEL_W, BAR_W, BAR_H = 4, 220, 500, 16
#: Rows this high, each labelled, up to LABELLED rows; beyond, thinner, every third labelled.
CELL_H, THIN_H, LABELLED = 12, 4, 48

STYLE = """
body { font: 14px sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; }
td, th { border: 1px solid #ccc; padding: 2px 8px; text-align: right; }
td:first-child, th:first-child { text-align: left; }
text { font: 10px sans-serif; }
"""


def write(into: Path, key: str, busy: pd.DataFrame, stragglers: pd.DataFrame, imbalance: pd.DataFrame) -> Path:
    """Writes `into`/campaign.html from the recipes' tables; returns its path."""
    page = into / "campaign.html"
    sections = [
        "<h1>Campaign</h1>",
        "<h2>GPU busy time per rank</h2>",
        heatmap(busy, key),
        "<h2>Collective stragglers</h2>",
        bars(stragglers, key),
        "<h2>Rank imbalance</h2>",
        table(imbalance, key),
    ]
    body = "\n".join(sections)
    page.write_text(
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>rocflow campaign</title>'
        f"<style>{STYLE}</style></head><body>\n{body}\n</body></html>\n",
        encoding="utf-8",
    )
    return page


def heatmap(busy: pd.DataFrame, key: str) -> str:
    if busy.empty:
        return "<p>No kernel ran.</p>"
    grid = busy.pivot_table(index=[key, "host", "agent"], columns="bin", values="busy_fraction", fill_value=0.0)
    labels = [f"{host} {key} {rank} GPU {agent}" for rank, host, agent in grid.index]
    values = grid.to_numpy()
    if len(values) > MAX_ROWS:
        bands = np.array_split(np.arange(len(values)), MAX_ROWS)
        values = np.array([values[band].mean(axis=0) for band in bands])
        labels = [labels[b[0]] if len(b) == 1 else f"{labels[b[0]]} … {labels[b[-1]]}" for b in bands]
    rows, columns = values.shape
    high = CELL_H if rows <= LABELLED else THIN_H
    # Labels CELL_H apart at least, so that they never overlap.
    every = -(-CELL_H // high)
    cells = []
    for r, row in enumerate(values):
        # Below a label's height at the top, so that the first label shows whole.
        y = CELL_H + r * high
        if r % every == 0:
            label = escape(labels[r])
            cells.append(f'<text x="{LABEL_W - 4}" y="{y + high - 2}" text-anchor="end">{label}</text>')
        for c, fraction in enumerate(row):
            shade = round(255 * (1 - fraction))
            cells.append(
                f'<rect x="{LABEL_W + c * CELL_W}" y="{y}" width="{CELL_W}" height="{high}" '
                f'fill="rgb({shade},{shade},255)"/>'
            )
    first = int(busy["start_ns"].min())
    span = (int(busy["start_ns"].max()) - first) * columns / max(columns - 1, 1)
    bottom = CELL_H + rows * high + 12
    axis = f'<text x="{LABEL_W}" y="{bottom}">0 ms ({first} ns)</text>'
    axis += f'<text x="{LABEL_W + columns * CELL_W}" y="{bottom}" text-anchor="end">{span / 1e6:.3f} ms</text>'
    width, height = LABEL_W + columns * CELL_W, bottom + 4
    return (
        f'<svg id="heatmap" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}">{"".join(cells)}{axis}</svg>'
        "<p>White: idle; blue: busy the whole bin.</p>"
    )


def bars(stragglers: pd.DataFrame, key: str) -> str:
    if stragglers.empty:
        return "<p>No collective had a rank arrive late beyond the threshold.</p>"
    shown = stragglers.head(MAX_BARS)
    longest = max(int(shown["wait_ns"].max()), 1)
    items = []
    for i, row in enumerate(shown.itertuples(index=False)):
        y = i * (BAR_H + 4)
        width = max(1, round(BAR_W * row.wait_ns / longest))
        where = "" if pd.isna(row.communicator) else f" comm {row.communicator}"
        label = (
            f"{row.name}{where} #{row.occurrence}: {key} {getattr(row, key)} on {row.host} "
            f"{row.late_ns / 1000:.1f} µs late, others waited {row.wait_ns / 1000:.1f} µs"
        )
        items.append(f'<rect x="0" y="{y}" width="{width}" height="{BAR_H}" fill="#d9534f"/>')
        items.append(f'<text x="{width + 4}" y="{y + BAR_H - 4}">{escape(label)}</text>')
    height = len(shown) * (BAR_H + 4)
    width = BAR_W + 400
    return (
        f'<svg id="stragglers" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}">{"".join(items)}</svg>'
    )


def table(imbalance: pd.DataFrame, key: str) -> str:
    if imbalance.empty:
        return "<p>No kernel's slowest rank was far above the median rank.</p>"
    columns = ["kernel", "ranks", "host", key, "total_ns", "median_total_ns", "ratio", "excess_ns", "mean_ratio"]
    head = "".join(f"<th>{escape(c)}</th>" for c in columns)
    rows = []
    for row in imbalance[columns].itertuples(index=False):
        cells = [escape(str(v)) if not isinstance(v, float) else f"{v:.3f}" if v < 100 else f"{v:.0f}" for v in row]
        rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    return f'<table id="imbalance"><tr>{head}</tr>{"".join(rows)}</table>'
