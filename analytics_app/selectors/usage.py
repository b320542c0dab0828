"""Spend reads: tokens and cost grouped by one dimension over a time window.

Grouped by day, model, agent, user or step type, the answer comes from the rollups
(`analytics_app.selectors.usage_rollups`) for every step they have counted, plus a direct
aggregation of the few steps recorded since their last fill (the "live tail"), so it is
both fast at millions of steps and exact to the last recorded turn. Grouped by session,
it aggregates `turn_step` directly: sessions are too many to key a count table on. So
does a filter the rollups do not key (`user_id` beside any grouping but user,
`agent_id` beside user, any `session_id`): those steps are read from `turn_step` (by
tenant and time, or by the session's index), exact to the second.

An erased user's steps stay counted (the spend happened) without their user or session:
grouped by user or session, they add up in one row whose key is None.

Steps count in the window (and in a day) by when they were recorded, not by the turn's
`occurred_at`: spend happens when the call is reported, period budgets count it then,
and the rollups are filled in recording order, so a backfilled turn of last month is
spend of today, as on the provider's invoice of the day it was reported.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from django.db.models import Count, F, Q, QuerySet, Sum, Value
from django.db.models.functions import Coalesce, TruncDate

from analytics_app.selectors.usage_rollups import (
    COUNTERS,
    RollupPart,
    rollup_answers,
    rollup_parts,
)
from sessions_app.hooks import ERASED_USER_ID
from sessions_app.selectors.turns import step_list

if TYPE_CHECKING:
    from sessions_app.models import Tenant, TurnStep

GROUPS: dict[str, Any] = {
    "day": TruncDate("created_at", tzinfo=UTC),
    "model": F("model"),
    "agent": F("agent_id"),
    "user": F("user_id"),
    "step_type": F("step_type"),
    "session": F("session_id"),
}
MAX_GROUPS = 1000
# The groupings whose key an erasure takes from the steps: their erased spend is one
# row, key None (the steps' user id is ERASED_USER_ID, their session null).
ERASED_GROUPINGS = frozenset({"user", "session"})


@dataclass(frozen=True)
class UsageReport:
    group_by: str
    start: datetime
    end: datetime
    rows: list[dict[str, Any]]
    totals: dict[str, Any]
    truncated: bool


def step_sums() -> dict[str, Any]:
    """The counters of a group of steps. The anomaly counts come first: they filter on
    step columns that the later aggregates are named after (and would shadow)."""
    zero = Value(0)
    return {
        "unpriced_calls": Count("id", filter=Q(cost_usd__isnull=True) | Q(price_missing=True)),
        "zero_cost_calls": Count(
            "id", filter=Q(cost_usd=0) & (Q(input_tokens__gt=0) | Q(output_tokens__gt=0))
        ),
        "negative_cost_calls": Count("id", filter=Q(cost_usd__lt=0)),
        "errors": Count("id", filter=Q(success=False)),
        "calls": Count("id"),
        "input_tokens": Coalesce(Sum("input_tokens"), zero),
        "output_tokens": Coalesce(Sum("output_tokens"), zero),
        "cached_tokens": Coalesce(Sum("cached_tokens"), zero),
        "cache_write_tokens": Coalesce(Sum("cache_write_tokens"), zero),
        "reasoning_tokens": Coalesce(Sum("reasoning_tokens"), zero),
        "cost_usd": Coalesce(Sum("cost_usd"), Value(Decimal(0))),
    }


def _steps(
    *, tenant: Tenant, start: datetime, end: datetime, filters: dict[str, str]
) -> QuerySet[TurnStep]:
    return step_list(tenant=tenant, start=start, end=end).filter(**filters)


def _key(value: Any, group_by: str) -> str | None:
    """The row's key; None for the spend of erased users, grouped by user or session."""
    if isinstance(value, datetime):
        return value.astimezone(UTC).date().isoformat()
    if isinstance(value, date):
        return value.isoformat()
    if group_by in ERASED_GROUPINGS and value in (None, ERASED_USER_ID):
        return None
    return str(value)


def _grouped_sums(
    tenant: Tenant, group_by: str, parts: list[RollupPart], filters: dict[str, str]
) -> dict[str | None, dict]:
    """Rollup rows of each part plus the steps of that part its fill has not reached."""
    totals: dict[str | None, dict[str, Any]] = defaultdict(lambda: dict.fromkeys(COUNTERS, 0))
    for part in parts:
        for row in part.rows:
            bucket = totals[_key(row["key"], group_by)]
            for name in COUNTERS:
                bucket[name] += row[name] or 0
        tail = (
            _steps(tenant=tenant, start=part.start, end=part.end, filters=filters)
            .filter(id__gt=part.last_step_id)
            .annotate(key=GROUPS[group_by])
            .values("key")
            .annotate(**step_sums())
        )
        for tail_row in tail:
            values: dict[str, Any] = dict(tail_row)
            bucket = totals[_key(values["key"], group_by)]
            for name in COUNTERS:
                bucket[name] += values[name] or 0
    return totals


def _direct_sums(
    tenant: Tenant, group_by: str, start: datetime, end: datetime, filters: dict[str, str]
) -> dict[str | None, dict]:
    grouped = (
        _steps(tenant=tenant, start=start, end=end, filters=filters)
        .annotate(key=GROUPS[group_by])
        .values("key")
        .annotate(**step_sums())
    )
    rows: list[dict[str, Any]] = [dict(row) for row in grouped]
    return {_key(row["key"], group_by): {name: row[name] for name in COUNTERS} for row in rows}


def usage_report(
    *,
    tenant: Tenant,
    group_by: str,
    start: datetime,
    end: datetime,
    filters: dict[str, str] | None = None,
) -> UsageReport:
    """Sums per group in [start, end), days in UTC; days in order, other groups by cost
    then calls, at most MAX_GROUPS (`truncated` says when more exist; totals cover all).
    `filters` (user_id, agent_id, session_id: value) keep only those steps.
    Rollup-backed answers widen a bound inside an hour (a day, for users) to the whole
    hour (day): see `usage_rollups`."""
    if group_by not in GROUPS:
        raise ValueError(f"unknown group_by {group_by!r}")
    filters = filters or {}
    if rollup_answers(group_by, filters):
        parts = rollup_parts(tenant, group_by, start, end, filters)
        by_key = _grouped_sums(tenant, group_by, parts, filters)
    else:
        by_key = _direct_sums(tenant, group_by, start, end, filters)
    rows = [{"key": key, **sums} for key, sums in by_key.items()]
    if group_by == "day":
        rows.sort(key=lambda row: row["key"])
    else:
        rows.sort(key=lambda row: (-row["cost_usd"], -row["calls"], row["key"] or ""))
    totals: dict[str, Any] = dict.fromkeys(COUNTERS, 0)
    for row in rows:
        row["total_tokens"] = row["input_tokens"] + row["output_tokens"]
        for name in COUNTERS:
            totals[name] += row[name]
    totals["total_tokens"] = totals["input_tokens"] + totals["output_tokens"]
    return UsageReport(
        group_by=group_by,
        start=start,
        end=end,
        rows=rows[:MAX_GROUPS],
        totals=totals,
        truncated=len(rows) > MAX_GROUPS,
    )
