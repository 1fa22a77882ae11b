"""A GPU's busy time: overlapping kernels count once, and busy time lands in the bins it
falls in, none lost."""

import numpy as np

from rocflow.recipes import gpu_busy
from rocflow.recipes.gpu_busy import busy_before, busy_segments


def test_overlapping_kernels_make_one_segment():
    # Out of order; the second and third overlap the first on other queues.
    starts = np.array([1000, 0, 200, 300])
    ends = np.array([1500, 600, 800, 500])
    got = busy_segments(starts, ends)
    assert [list(a) for a in got] == [[0, 1000], [800, 1500]]


def test_busy_time_before_each_point():
    starts, ends = np.array([0, 1000]), np.array([800, 1500])
    points = np.array([-5, 0, 400, 900, 1000, 1200, 2000])
    assert list(busy_before(points, starts, ends)) == [0, 0, 400, 800, 800, 1000, 1300]


def test_bins_add_up_to_the_busy_time():
    rng = np.random.default_rng(11)
    starts = rng.integers(0, 10**6, size=500)
    ends = starts + rng.integers(1, 10**4, size=500)
    segment_starts, segment_ends = busy_segments(starts, ends)
    edges = np.linspace(starts.min(), ends.max(), 37).round().astype(np.int64)
    bins = np.diff(busy_before(edges, segment_starts, segment_ends))
    assert (bins >= 0).all() and (bins <= np.diff(edges)).all()
    covered = np.zeros(ends.max() + 1, dtype=bool)
    for start, end in zip(starts, ends):
        covered[start:end] = True
    assert bins.sum() == covered.sum()


def test_bin_edges_hold_the_whole_span_on_the_unix_epoch():
    first, last = 1_764_454_000_123_456_789, 1_764_454_000_123_456_789 + 25_000_123
    edges = gpu_busy.bin_edges(first, last)
    assert len(edges) == gpu_busy.BINS + 1
    assert int(edges[0]) == first and int(edges[-1]) == last
    assert (np.diff(edges) > 0).all()


def test_bin_edges_span_a_boot_clock_and_the_unix_epoch_without_overflow():
    # A process of unknown offset stays near 0 beside another on the Unix epoch.
    first, last = 5_000_000_123, 1_764_454_000_123_456_789
    edges = gpu_busy.bin_edges(first, last)
    assert int(edges[0]) == first and int(edges[-1]) == last
    assert (np.diff(edges) > 0).all()
