"""Spend reads: tokens and cost grouped by one dimension over a time window.

Aggregates `turn_step` directly (every step carries its tenant, session, user, agent and
time, so no join is needed). Rollup tables will replace this for large tenants; the
result shape stays.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from django.db.models import Count, F, Q, QuerySet, Sum, Value
from django.db.models.functions import Coalesce, TruncDate

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


@dataclass(frozen=True)
class UsageReport:
    group_by: str
    start: datetime
    end: datetime
    rows: list[dict[str, Any]]
    totals: dict[str, Any]
    truncated: bool


def _sums() -> dict[str, Any]:
    zero = Value(0)
    return {
        "input_tokens": Coalesce(Sum("input_tokens"), zero),
        "output_tokens": Coalesce(Sum("output_tokens"), zero),
        "cached_tokens": Coalesce(Sum("cached_tokens"), zero),
        "cache_write_tokens": Coalesce(Sum("cache_write_tokens"), zero),
        "reasoning_tokens": Coalesce(Sum("reasoning_tokens"), zero),
        "cost_usd": Coalesce(Sum("cost_usd"), Value(Decimal(0))),
        "calls": Count("id"),
        "errors": Count("id", filter=Q(success=False)),
        "unpriced_calls": Count("id", filter=Q(price_missing=True)),
    }


def _steps(*, tenant: Tenant, start: datetime, end: datetime) -> QuerySet[TurnStep]:
    return TurnStep.objects.filter(tenant=tenant, created_at__gte=start, created_at__lt=end)


def usage_report(*, tenant: Tenant, group_by: str, start: datetime, end: datetime) -> UsageReport:
    """Sums per group in [start, end), days in UTC; days in order, other groups by cost
    then calls, at most MAX_GROUPS (`truncated` says when more exist; totals cover all)."""
    if group_by not in GROUPS:
        raise ValueError(f"unknown group_by {group_by!r}")
    steps = _steps(tenant=tenant, start=start, end=end)
    grouped = steps.annotate(key=GROUPS[group_by]).values("key").annotate(**_sums())
    ordering = ["key"] if group_by == "day" else ["-cost_usd", "-calls", "key"]
    rows = list(grouped.order_by(*ordering)[: MAX_GROUPS + 1])
    for row in rows:
        row["key"] = str(row["key"])
        row["total_tokens"] = row["input_tokens"] + row["output_tokens"]
    totals = steps.aggregate(**_sums())
    totals["total_tokens"] = totals["input_tokens"] + totals["output_tokens"]
    return UsageReport(
        group_by=group_by,
        start=start,
        end=end,
        rows=rows[:MAX_GROUPS],
        totals=totals,
        truncated=len(rows) > MAX_GROUPS,
    )
