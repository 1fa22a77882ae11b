"""Tables read as partitions of whole ranks: a few partitions per worker, each rank's
records of every table in one of them, the same for every table."""

import dask
import pandas as pd

from rocflow.recipes import ranks


def test_each_partition_holds_whole_ranks_of_every_table(job, monkeypatch):
    for rank in range(20):
        host = f"node-{rank // 10}"
        job.rank(host, rank)
        for step in range(rank % 3 + 1):
            job.hip(host, rank, "hipMemcpy", 1000 * step, 10)
        if rank % 4 == 0:  # the others have no marker records
            job.range(host, rank, "step", 0, 10)
    dataset = job.write()
    monkeypatch.setattr(ranks, "_workers", lambda: 2)

    def counts(api: pd.DataFrame, marker: pd.DataFrame) -> pd.DataFrame:
        rows = {name: t.groupby(["host", "rank"]).size() for name, t in (("api", api), ("marker", marker))}
        return pd.DataFrame(rows).fillna(0).astype("i8").reset_index()

    meta = pd.DataFrame({"host": pd.Series(dtype="string"), "rank": pd.Series(dtype="i8"), "api": [], "marker": []})
    read = ranks.per_rank(dataset, "rank", {"api": ["operation"], "marker": ["message"]}, counts, meta)
    parts = dask.compute(*read.to_delayed())

    assert len(parts) == 2 * ranks.PER_WORKER
    seen = pd.concat(parts)
    # Each rank once, with all its rows of both tables, those without markers included.
    assert list(seen["rank"]) == [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19]
    assert list(seen["api"]) == [r % 3 + 1 for r in range(20)]
    assert list(seen["marker"]) == [int(r % 4 == 0) for r in range(20)]
    assert list(seen["host"]) == [f"node-{r // 10}" for r in range(20)]
