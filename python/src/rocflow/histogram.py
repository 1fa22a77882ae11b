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


def quantile(bucket: np.ndarray, count: np.ndarray, q: float, low: float, high: float) -> float:
    """The `q` quantile of values counted `count` times in bucket `bucket` (sorted by
    bucket), whose exact extremes are `low` and `high`."""
    total = int(count.sum())
    if total == 0:
        return 0.0
    rank = max(math.ceil(q * total), 1)
    at = int(np.searchsorted(np.cumsum(count), rank))
    return value(int(bucket[at]), low, high)


def value(bucket: int, low: float, high: float) -> float:
    """The value a percentile in `bucket` is given: the bucket's middle, clamped to the
    exact extremes `low` and `high`."""
    if bucket == NON_POSITIVE:
        return min(low, 0.0)
    return min(max(GROWTH ** (float(bucket) + 0.5), low), high)
