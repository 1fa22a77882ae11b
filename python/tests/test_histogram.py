"""Percentiles from histogram buckets: within 1% of the exact nearest-rank value, the
same whether the values are bucketed together or apart and the buckets added."""

import math

import numpy as np

from rocflow import histogram


def exact(values: np.ndarray, q: float) -> float:
    ordered = np.sort(values)
    return float(ordered[max(math.ceil(q * len(ordered)), 1) - 1])


def quantile(bucket: np.ndarray, count: np.ndarray, q: float, low: float, high: float) -> float:
    """The `q` quantile of one group."""
    return histogram.quantiles(bucket, count, [count.sum()], q, [low], [high])[0]


def counted(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return np.unique(histogram.buckets(values), return_counts=True)


def test_percentiles_are_within_one_percent_and_clamped_to_the_extremes():
    values = np.random.default_rng(3).lognormal(mean=11, sigma=1.5, size=20_000).round()
    bucket, count = counted(values)
    for q in [0.01, 0.5, 0.95, 0.99, 1.0]:
        got = quantile(bucket, count, q, values.min(), values.max())
        assert abs(got - exact(values, q)) <= 0.01 * exact(values, q), q
        assert values.min() <= got <= values.max()


def test_buckets_of_parts_add_up_to_the_buckets_of_the_whole():
    values = np.random.default_rng(5).integers(1, 10**7, size=5_000)
    whole = dict(zip(*counted(values)))
    parts: dict[int, int] = {}
    for part in np.array_split(values, 7):
        for bucket, count in zip(*counted(part)):
            parts[bucket] = parts.get(bucket, 0) + count
    assert parts == whole


def test_values_of_zero_or_less_have_a_bucket_of_their_own():
    values = np.array([0, -5, 0, 100])
    bucket, count = counted(values)
    assert list(bucket) == [histogram.NON_POSITIVE, histogram.buckets(np.array([100]))[0]]
    assert quantile(bucket, count, 0.5, -5.0, 100.0) == -5.0
    assert abs(quantile(bucket, count, 1.0, -5.0, 100.0) - 100.0) <= 1.0


def test_groups_side_by_side_get_the_percentiles_each_gets_alone():
    rng = np.random.default_rng(7)
    groups = [rng.integers(1, 10**s, size=n) for s, n in [(3, 1), (6, 500), (4, 37)]]
    bucket, count = (np.concatenate(c) for c in zip(*map(counted, groups)))
    totals = [len(g) for g in groups]
    lows, highs = [g.min() for g in groups], [g.max() for g in groups]
    for q in [0.01, 0.5, 0.99, 1.0]:
        together = histogram.quantiles(bucket, count, totals, q, lows, highs)
        alone = [quantile(*counted(g), q, g.min(), g.max()) for g in groups]
        assert list(together) == alone, q
