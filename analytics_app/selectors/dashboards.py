"""Reads behind the staff dashboards. Spend comes from the rollups (a few thousand rows
a day whatever the traffic) plus, as `/usage` does it, the "live tail": the steps
recorded after the rollup's fill marker, aggregated directly (a few minutes' worth), so
the dashboard is exact up to the last recorded turn, also right after `make run`, before
the first fill. Per-session views read the session totals with ORDER BY … LIMIT."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from django.db.models import (
    Case,
    DecimalField,
    ExpressionWrapper,
    F,
    FloatField,
    Min,
    Q,
    QuerySet,
    Sum,
    Value,
    When,
)
from django.db.models.functions import Greatest, TruncDay, TruncHour

from analytics_app.models import (
    Granularity,
    RollupFillState,
    SpendRollup,
    UserSpendRollup,
)
from analytics_app.selectors.usage import step_sums
from analytics_app.selectors.usage_rollups import rollup_marker
from sessions_app.selectors import sessions as sessions_selectors
from sessions_app.selectors import turns as turns_selectors

if TYPE_CHECKING:
    from sessions_app.models import ChatSession, TurnStep

# Up to this span the charts use hourly buckets; beyond, daily ones.
HOURLY_UP_TO = timedelta(days=2)

_SUMS = {
    "input_tokens": Sum("input_tokens"),
    "cached_tokens": Sum("cached_tokens"),
    "output_tokens": Sum("output_tokens"),
    "cost_usd": Sum("cost_usd"),
    "calls": Sum("calls"),
    "errors": Sum("errors"),
    "unpriced_calls": Sum("unpriced_calls"),
    "zero_cost_calls": Sum("zero_cost_calls"),
    "negative_cost_calls": Sum("negative_cost_calls"),
}


@dataclass(frozen=True)
class DashboardFilter:
    """[start, end) in UTC, optionally one tenant."""

    start: datetime
    end: datetime
    tenant_id: int | None = None

    @property
    def granularity(self) -> str:
        return Granularity.HOUR if self.end - self.start <= HOURLY_UP_TO else Granularity.DAY


def _with_totals(row: dict[str, Any]) -> dict[str, Any]:
    row["tokens"] = (row["input_tokens"] or 0) + (row["output_tokens"] or 0)
    row["error_rate"] = (row["errors"] or 0) / row["calls"] if row["calls"] else 0.0
    return row


def _spend(f: DashboardFilter, granularity: str | None = None) -> QuerySet[SpendRollup]:
    rows = SpendRollup.objects.filter(
        granularity=granularity or f.granularity, bucket_start__gte=f.start, bucket_start__lt=f.end
    )
    return rows.filter(tenant_id=f.tenant_id) if f.tenant_id else rows


def _tail(f: DashboardFilter, marker: str) -> QuerySet[TurnStep]:
    """The steps in the range that the rollup named `marker` has not counted yet."""
    return turns_selectors.steps_after(
        after_id=rollup_marker(marker), start=f.start, end=f.end, tenant_id=f.tenant_id
    )


def _step_sums() -> dict[str, Any]:
    """`/usage`'s aggregation of steps, cut to the counters the dashboards show (in its
    order: the anomaly counts must come before the sums that shadow their columns)."""
    return {name: expr for name, expr in step_sums().items() if name in _SUMS}


def _tail_sums(steps: QuerySet[Any]) -> QuerySet[Any]:
    return steps.annotate(**_step_sums())


def _merged(
    keys: tuple[str, ...], rollup_rows: QuerySet[Any], tail_rows: QuerySet[Any]
) -> list[dict[str, Any]]:
    """Rollup rows plus tail rows, added up per key."""
    out: dict[tuple[Any, ...], dict[str, Any]] = {}
    for row in [*rollup_rows, *tail_rows]:
        key = tuple(row[name] for name in keys)
        bucket = out.setdefault(key, {**dict(zip(keys, key, strict=True)), **dict.fromkeys(_SUMS)})
        for name in _SUMS:
            if row[name] is not None:
                bucket[name] = (bucket[name] or 0) + row[name]
    return list(out.values())


def _costliest(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda row: (-(row["cost_usd"] or 0), -(row["calls"] or 0)))


def spend_over_time(f: DashboardFilter) -> list[dict[str, Any]]:
    rows = _spend(f).values("bucket_start").annotate(**_SUMS)
    trunc = TruncHour if f.granularity == Granularity.HOUR else TruncDay
    tail = _tail_sums(
        _tail(f, f"spend:{f.granularity}")
        .annotate(bucket_start=trunc("created_at", tzinfo=UTC))
        .values("bucket_start")
    )
    merged = _merged(("bucket_start",), rows, tail)
    return [_with_totals(row) for row in sorted(merged, key=lambda row: row["bucket_start"])]


def spend_breakdown(f: DashboardFilter, dimension: str, limit: int = 15) -> list[dict[str, Any]]:
    """Totals by model, agent_id or step_type, costliest first."""
    if dimension not in ("model", "agent_id", "step_type"):
        raise ValueError(dimension)
    rows = _spend(f).values(dimension).annotate(**_SUMS)
    tail = _tail_sums(_tail(f, f"spend:{f.granularity}").values(dimension))
    merged = _costliest(_merged((dimension,), rows, tail))[:limit]
    return [_with_totals({**row, "key": row[dimension] or "(none)"}) for row in merged]


def spend_totals(f: DashboardFilter) -> dict[str, Any]:
    totals = _spend(f).aggregate(**_SUMS)
    tail = _tail(f, f"spend:{f.granularity}").aggregate(**_step_sums())
    return _with_totals({k: (v or 0) + (tail[k] or 0) for k, v in totals.items()})


def top_users(f: DashboardFilter, limit: int = 10) -> list[dict[str, Any]]:
    rows = UserSpendRollup.objects.filter(bucket_start__gte=f.start, bucket_start__lt=f.end)
    if f.tenant_id:
        rows = rows.filter(tenant_id=f.tenant_id)
    keys = ("tenant_id", "tenant__name", "user_id")  # tenant_id: the cockpit's user page link
    grouped = rows.values(*keys).annotate(**_SUMS)
    tail = _tail_sums(_tail(f, "user:day").values(*keys))
    merged = _costliest(_merged(keys, grouped, tail))[:limit]
    return [_with_totals(row) for row in merged]


def _sessions(f: DashboardFilter) -> QuerySet[ChatSession]:
    """Sessions active in the range (their totals are lifetime totals)."""
    return sessions_selectors.sessions_active_between(
        start=f.start, end=f.end, tenant_id=f.tenant_id
    )


def top_sessions(f: DashboardFilter, limit: int = 10) -> list[ChatSession]:
    return list(_sessions(f).order_by("-total_cost_usd")[:limit])


def runaway_sessions(f: DashboardFilter, limit: int = 20) -> list[ChatSession]:
    rows = sessions_selectors.sessions_flagged_between(
        start=f.start, end=f.end, tenant_id=f.tenant_id
    )
    return list(rows[:limit])


def budget_consumption(f: DashboardFilter, limit: int = 15) -> list[ChatSession]:
    """Sessions with a budget, the closest to (or furthest past) it first."""
    percent = DecimalField(max_digits=20, decimal_places=2)
    token_use = Case(
        When(
            budget_tokens__gt=0,
            then=ExpressionWrapper(
                (F("total_input_tokens") + F("total_output_tokens")) * 100.0 / F("budget_tokens"),
                output_field=FloatField(),
            ),
        ),
        default=Value(0.0),
    )
    usd_use = Case(
        When(
            budget_usd__gt=0,
            then=ExpressionWrapper(
                F("total_cost_usd") * 100 / F("budget_usd"), output_field=percent
            ),
        ),
        default=Value(Decimal(0)),
        output_field=percent,
    )
    return list(
        _sessions(f)
        .filter(Q(budget_tokens__isnull=False) | Q(budget_usd__isnull=False))
        .annotate(token_use=token_use, usd_use=usd_use)
        .annotate(use=Greatest(F("token_use"), F("usd_use"), output_field=FloatField()))
        .order_by("-use")[:limit]
    )


def rollups_freshness() -> datetime | None:
    """The newest step the rollups have counted: dashboards say how fresh they are."""
    return RollupFillState.objects.aggregate(at=Min("filled_through"))["at"]


def tenant_choices() -> list[tuple[int, str]]:
    return sessions_selectors.tenant_choices(limit=500)
