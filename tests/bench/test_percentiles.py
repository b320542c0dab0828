"""The benches' three percentile ranks: each keeps the figures recorded with it comparable
run to run, so where they differ is pinned here."""

import math

from bench.percentiles import nearest_index_percentile, percentile, rounded_rank_percentile

SIX = [6.0, 1.0, 5.0, 2.0, 4.0, 3.0]
TWENTY = [float(v) for v in range(20, 0, -1)]


def test_nearest_rank() -> None:
    assert percentile(SIX, 50) == 3.0
    assert percentile(TWENTY, 95) == 19.0
    assert percentile(TWENTY, 100) == 20.0
    assert percentile(TWENTY, 0) == 1.0


def test_rounded_rank_takes_the_next_value_where_the_rank_is_an_odd_whole_number() -> None:
    assert rounded_rank_percentile(SIX, 50) == 4.0
    assert rounded_rank_percentile(TWENTY, 95) == 20.0
    assert rounded_rank_percentile([1.0, 2.0, 3.0, 4.0], 50) == percentile([1.0, 2.0, 3.0, 4.0], 50)


def test_nearest_index() -> None:
    assert nearest_index_percentile(TWENTY, 95) == 19.0  # index round(18.05) = 18
    assert nearest_index_percentile(SIX, 50) == 3.0  # index round(2.5) = 2: halves to even
    assert nearest_index_percentile([7.0], 95) == 7.0


def test_no_values_give_nan() -> None:
    for rank in (percentile, rounded_rank_percentile, nearest_index_percentile):
        assert math.isnan(rank([], 50))
