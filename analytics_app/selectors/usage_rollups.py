"""`GET /api/v1/usage` answered from the rollups instead of scanning turn_step.

The endpoint (built on another branch) aggregates steps directly; at merge it can call
`usage_from_rollups` for every grouping but `session`, which has no rollup (sessions are
too many to key a count table on; per-session totals live on the session itself).

Exactness: whole UTC days inside [start, end) are read from the daily rollup, the partial
days at either edge from the hourly one, so any hour-aligned range is exact. A bound
inside an hour is widened to the whole hour. `group_by=user` reads the daily per-user
rollup, so its edges are widened to whole days. Steps of the last
ENGRAM_ROLLUP_SETTLE_SECONDS plus the fill interval are not counted yet:
`filled_through` says up to when the numbers are complete.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from django.db.models import Q, QuerySet, Sum
from django.db.models.functions import TruncDay

from analytics_app.models import (
    ROLLUP_COUNTERS,
    Granularity,
    RollupFillState,
    SpendRollup,
    UserSpendRollup,
)

if TYPE_CHECKING:
    from sessions_app.models import Tenant

# group_by value → rollup column.
GROUPINGS = {
    "day": "day",
    "model": "model",
    "agent": "agent_id",
    "step_type": "step_type",
    "user": "user_id",
}
COUNTERS = ROLLUP_COUNTERS


class UnsupportedGrouping(ValueError):
    """`session` (or an unknown grouping): aggregate turn_step directly instead."""


def _floor_hour(at: datetime) -> datetime:
    return at.replace(minute=0, second=0, microsecond=0)


def _ceil(at: datetime, floor: datetime, step: timedelta) -> datetime:
    return floor if at == floor else floor + step


def _floor_day(at: datetime) -> datetime:
    return at.replace(hour=0, minute=0, second=0, microsecond=0)


def _spend_rows(tenant: Tenant, start: datetime, end: datetime) -> QuerySet[SpendRollup]:
    """Daily buckets for whole days, hourly buckets for the edges."""
    start = _floor_hour(start)
    end = _ceil(end, _floor_hour(end), timedelta(hours=1))
    first_day = _ceil(start, _floor_day(start), timedelta(days=1))
    last_day = _floor_day(end)
    rows = SpendRollup.objects.filter(tenant=tenant)
    if first_day >= last_day:  # no whole day inside: hours only
        return rows.filter(
            granularity=Granularity.HOUR, bucket_start__gte=start, bucket_start__lt=end
        )
    return rows.filter(
        Q(granularity=Granularity.DAY, bucket_start__gte=first_day, bucket_start__lt=last_day)
        | Q(granularity=Granularity.HOUR, bucket_start__gte=start, bucket_start__lt=first_day)
        | Q(granularity=Granularity.HOUR, bucket_start__gte=last_day, bucket_start__lt=end)
    )


def usage_from_rollups(
    tenant: Tenant, group_by: str, start: datetime, end: datetime
) -> list[dict[str, Any]]:
    """Rows of {group_by: key, input_tokens, output_tokens, cached_tokens, …, cost_usd
    (Decimal), calls, errors, unpriced_calls, zero_cost_calls, negative_cost_calls},
    costliest first (by day: oldest first)."""
    column = GROUPINGS.get(group_by)
    if column is None:
        raise UnsupportedGrouping(group_by)
    sums = {name: Sum(name) for name in COUNTERS}
    if group_by == "user":
        rows: QuerySet[Any] = UserSpendRollup.objects.filter(
            tenant=tenant,
            bucket_start__gte=_floor_day(start),
            bucket_start__lt=_ceil(end, _floor_day(end), timedelta(days=1)),
        )
    else:
        rows = _spend_rows(tenant, start, end)
    if group_by == "day":
        rows = rows.annotate(day=TruncDay("bucket_start"))
    grouped = rows.values(column).annotate(**sums)
    grouped = (
        grouped.order_by(column) if group_by == "day" else grouped.order_by("-cost_usd", column)
    )
    return [
        {group_by: row[column], **{name: row[name] or 0 for name in COUNTERS}} for row in grouped
    ]


def usage_rollups_filled_through() -> datetime | None:
    """Steps up to this created_at are counted; later ones are not yet."""
    return (
        RollupFillState.objects.order_by("filled_through")
        .values_list("filled_through", flat=True)
        .first()
    )


@dataclass(frozen=True)
class RollupPart:
    """One stretch of the window read from one rollup table: its rows (`key` + counters)
    and the fill marker of that table, so the caller can add the steps not yet filled."""

    start: datetime
    end: datetime
    rows: list[dict[str, Any]]
    last_step_id: int


def rollup_marker(name: str) -> int:
    return (
        RollupFillState.objects.filter(name=name).values_list("last_step_id", flat=True).first()
        or 0
    )


# The filters each rollup table can answer: its own key columns.
ROLLUP_FILTERS = {"spend": frozenset({"agent_id"}), "user": frozenset({"user_id"})}


def rollup_answers(group_by: str, filters: dict[str, str]) -> bool:
    """Whether a rollup table keys both the grouping and every filter."""
    if group_by not in GROUPINGS:
        return False
    table = "user" if group_by == "user" else "spend"
    return set(filters) <= ROLLUP_FILTERS[table]


def rollup_parts(
    tenant: Tenant,
    group_by: str,
    start: datetime,
    end: datetime,
    filters: dict[str, str] | None = None,
) -> list[RollupPart]:
    """The window as whole days from the daily table and edge hours from the hourly one
    (or whole days from the per-user table), each with its own fill marker; `filters`
    (column: value, see `rollup_answers`) narrow the rows."""
    column = GROUPINGS.get(group_by)
    if column is None:
        raise UnsupportedGrouping(group_by)
    sums = {name: Sum(name) for name in COUNTERS}

    def part(rows: QuerySet[Any], name: str, lo: datetime, hi: datetime) -> RollupPart:
        if group_by == "day":
            rows = rows.annotate(day=TruncDay("bucket_start"))
        rows = rows.filter(**(filters or {}))
        grouped = rows.filter(bucket_start__gte=lo, bucket_start__lt=hi).values(column)
        found = [
            {"key": row[column], **{name: row[name] for name in COUNTERS}}
            for row in grouped.annotate(**sums)
        ]
        return RollupPart(start=lo, end=hi, rows=found, last_step_id=rollup_marker(name))

    if group_by == "user":
        lo, hi = _floor_day(start), _ceil(end, _floor_day(end), timedelta(days=1))
        return [part(UserSpendRollup.objects.filter(tenant=tenant), "user:day", lo, hi)]
    lo = _floor_hour(start)
    hi = _ceil(end, _floor_hour(end), timedelta(hours=1))
    first_day = _ceil(lo, _floor_day(lo), timedelta(days=1))
    last_day = _floor_day(hi)
    hours = SpendRollup.objects.filter(tenant=tenant, granularity=Granularity.HOUR)
    if first_day >= last_day:
        return [part(hours, "spend:hour", lo, hi)]
    days = SpendRollup.objects.filter(tenant=tenant, granularity=Granularity.DAY)
    return [
        part(hours, "spend:hour", lo, first_day),
        part(days, "spend:day", first_day, last_day),
        part(hours, "spend:hour", last_day, hi),
    ]


@dataclass(frozen=True)
class RollupLag:
    seconds: float | None  # since the newest step every rollup has counted; None: never filled
    steps_behind: int  # steps recorded that the slowest rollup has not counted yet


def rollup_lag(now: datetime | None = None) -> RollupLag:
    """How far the rollups trail the turn log, for /metrics. Two index lookups."""
    from django.db.models import Min
    from django.utils import timezone

    from sessions_app.selectors.turns import step_newest_id

    state = RollupFillState.objects.aggregate(at=Min("filled_through"), step=Min("last_step_id"))
    newest = step_newest_id()
    at = state["at"]
    return RollupLag(
        seconds=None if at is None else ((now or timezone.now()) - at).total_seconds(),
        steps_behind=max(0, newest - (state["step"] or 0)),
    )
