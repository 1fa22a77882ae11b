"""campaign.html, rendered in real headless Chromium: the heatmap's cells, the straggler
bars and the imbalance table are laid out, idle and busy cells shaded as the ranks were,
nothing is fetched; a clean campaign's page says there is nothing to report; thousands of
ranks make bands, not thousands of rows."""

import json
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rocflow import page
from rocflow.recipes import gpu_busy, imbalance, kernels, stragglers

CHROMIUM = "/usr/bin/chromium"
#: Appended to a copy of the page: what Chromium laid out, written into the DOM it dumps.
MEASURE = """<script>
const out = {};
for (const svg of document.querySelectorAll('svg')) {
  const rects = [...svg.querySelectorAll('rect')];
  out[svg.id] = {
    width: svg.getBoundingClientRect().width,
    rects: rects.length,
    drawn: rects.filter(r => { const b = r.getBBox(); return b.width > 0 && b.height > 0; }).length,
    fills: rects.map(r => getComputedStyle(r).fill),
    texts: [...svg.querySelectorAll('text')].map(t => t.textContent),
  };
}
out.imbalance = [...document.querySelectorAll('#imbalance tr')].map(tr => [...tr.cells].map(c => c.textContent));
out.paragraphs = [...document.querySelectorAll('p')].map(p => p.textContent);
document.body.setAttribute('data-measured', JSON.stringify(out));
</script>"""


class Measured(HTMLParser):
    def handle_starttag(self, tag, attrs):
        if tag == "body":
            self.measured = json.loads(dict(attrs)["data-measured"])


def rendered(html: Path, tmp_path: Path) -> dict:
    """What Chromium laid out of the page."""
    probe = tmp_path / "probe.html"
    probe.write_text(html.read_text(encoding="utf-8").replace("</body>", MEASURE + "</body>"), encoding="utf-8")
    command = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", probe.as_uri()]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    parser = Measured()
    parser.feed(done.stdout)
    return parser.measured


def campaign(job, into: Path, late: bool) -> Path:
    """3 ranks: ranks 0 and 1 busy all along with `gemm`, rank 2 idle the first half then
    busy; where `late`, rank 2 also arrives 1 ms late at an all-reduce and runs 3 times
    the others' `gemm`."""
    for rank in range(3):
        job.rank("node", rank)
        for i in range(100):
            if rank == 2 and i < 50:
                continue
            job.kernel("node", rank, "gemm", i * 10_000, 10_000)
        extra = 100 if late and rank == 2 else 0
        for i in range(extra):
            job.kernel("node", rank, "gemm", 1_000_000 + i * 10_000, 10_000)
        job.rccl("node", rank, "ncclAllReduce", 2_000_000 + (1_000_000 if late and rank == 2 else 0), 5_000, "0x1")
    dataset = job.write()
    busy, _ = gpu_busy.run(dataset, "rank", into)
    page.write(
        into,
        "rank",
        busy,
        stragglers.run(dataset, "rank", into),
        imbalance.run(kernels.run(dataset, "rank", into), "rank", into),
    )
    return into / "campaign.html"


@pytest.fixture(autouse=True)
def chromium():
    if shutil.which(CHROMIUM) is None:
        pytest.fail(f"{CHROMIUM} is needed to render the page (apt install chromium)")


def test_the_page_draws_the_heatmap_the_stragglers_and_the_imbalance(job, tmp_path: Path):
    html = campaign(job, tmp_path, late=True)
    text = html.read_text(encoding="utf-8")
    assert not any(fetch in text for fetch in ["<script", "src=", "href=", "url(", "@import"])
    got = rendered(html, tmp_path)

    heat = got["heatmap"]
    assert heat["width"] > 0 and heat["rects"] == heat["drawn"] == 3 * gpu_busy.BINS
    fills = np.array(heat["fills"]).reshape(3, gpu_busy.BINS)
    white, blue = "rgb(255, 255, 255)", "rgb(0, 0, 255)"
    # The span runs to the last kernel's end (rank 2's extra kernels, at 2 ms).
    assert fills[0, 0] == fills[1, 0] == blue and fills[2, 0] == white
    assert fills[2, 60] == blue and fills[0, 199] == white and fills[2, 199] == blue
    assert heat["texts"][:3] == ["node rank 0 GPU 0", "node rank 1 GPU 0", "node rank 2 GPU 0"]

    bars = got["stragglers"]
    assert bars["rects"] == bars["drawn"] == 1
    assert bars["texts"] == ["ncclAllReduce comm 0 #0: rank 2 on node 1000.0 µs late, others waited 2000.0 µs"]

    header, *rows = got["imbalance"]
    assert header[:4] == ["kernel", "ranks", "host", "rank"]
    assert [row[:4] for row in rows] == [["gemm", "3", "node", "2"]]


def test_a_clean_campaigns_page_reports_nothing(job, tmp_path: Path):
    got = rendered(campaign(job, tmp_path, late=False), tmp_path)
    assert set(got) == {"heatmap", "imbalance", "paragraphs"} and got["imbalance"] == []
    assert "No collective had a rank arrive late beyond the threshold." in got["paragraphs"]
    assert "No kernel's slowest rank was far above the median rank." in got["paragraphs"]


def test_thousands_of_ranks_make_bands():
    ranks = 1000
    busy = pd.DataFrame(
        {
            "host": "node",
            "rank": np.repeat(np.arange(ranks), 2),
            "agent": 0,
            "bin": np.tile([0, 1], ranks),
            "start_ns": np.tile([0, 50], ranks),
            "busy_fraction": np.repeat(np.arange(ranks) % 2, 2).astype(float),
        }
    )
    svg = page.heatmap(busy, "rank")
    assert svg.count("<rect") == page.MAX_ROWS * 2
    # Bands of about 4 ranks, half of them busy: about half blue.
    assert "rgb(128,128,255)" in svg or "rgb(127,127,255)" in svg
    assert "node rank 0 GPU 0 … node rank 3 GPU 0" in svg
