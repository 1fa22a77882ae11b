"""Percentiles as ``rocflow summary`` computes them: values counted in log-spaced buckets
(each 1% wider than the one before), so that the buckets of many ranks add up without
their values ever meeting, and a percentile is the middle of the bucket holding its
nearest rank, clamped to the exact minimum and maximum: within 1% of the true value.
"""

from __future__ import annotations

import math

import numpy as np

GROWTH = 1.01
#: The bucket of values of zero or less.
NON_POSITIVE = np.iinfo(np.int32).min


def buckets(values: np.ndarray) -> np.ndarray:
    """The bucket of each value."""
    values = np.asarray(values, dtype=np.float64)
    positive = values > 0
    logs = np.log(np.where(positive, values, 1.0)) / math.log(GROWTH)
    return np.where(positive, np.floor(logs), NON_POSITIVE).astype(np.int32)


def quantiles(bucket: np.ndarray, count: np.ndarray, totals: np.ndarray, q: float, low, high) -> np.ndarray:
    """The `q` quantile of each of several groups of values, counted `count` times in
    bucket `bucket`: the rows hold the groups one after another (each sorted by bucket),
    whose counts add up to `totals`; `low` and `high` are each group's exact extremes."""
    totals = np.asarray(totals, dtype=np.int64)
    ends = np.cumsum(np.asarray(count, dtype=np.int64))
    # The row holding each group's nearest rank: the running count reaches it there.
    nearest = np.cumsum(totals) - totals + np.maximum(np.ceil(q * totals), 1).astype(np.int64)
    at = np.asarray(bucket)[np.searchsorted(ends, nearest)]
    return np.array([value(int(b), float(lo), float(hi)) for b, lo, hi in zip(at, low, high)], dtype=np.float64)


def value(bucket: int, low: float, high: float) -> float:
    """The value a percentile in `bucket` is given: the bucket's middle, clamped to the
    exact extremes `low` and `high`."""
    if bucket == NON_POSITIVE:
        return min(low, 0.0)
    return min(max(GROWTH ** (float(bucket) + 0.5), low), high)
