"""Percentiles of latency samples, as the benches report them.

Three ranks are in use. They agree on most sample sizes and differ by one place on some,
so each bench keeps the one its figures in RESULTS.md were taken with: a figure compared
run to run must not move because the rank moved. Every function returns NaN without
values.
"""

from __future__ import annotations

import math


def percentile(values: list[float], p: float) -> float:
    """Nearest rank: the ceil(p/100 x n)-th smallest value, p in 0..100. The evaluations'
    search and context latencies (`bench.locomo_eval` and the benches that share its
    protocols)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, math.ceil(p / 100 * len(ordered)) - 1))
    return ordered[rank]


def rounded_rank_percentile(values: list[float], p: float) -> float:
    """The round(p/100 x n + 0.5)-th smallest value, p in 0..100. Python rounds halves to
    even, so this is `percentile` except where p/100 x n is an odd whole number (p50 of 6
    values, p95 of 20 or 60), where it is the next value up. The load generator's p50 /
    p95 / p99 (B1, B2, the budget check) are this rank."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, round(p / 100 * len(ordered) + 0.5) - 1))]


def nearest_index_percentile(values: list[float], p: float) -> float:
    """The value at index round(p/100 x (n - 1)) of the sorted values, p in 0..100 (numpy's
    `method="nearest"`). `bench.gin_pending`'s p95 is this rank."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[round(p / 100 * (len(ordered) - 1))]
