"""B3's query pairs: each rollup-backed spend query with a naive twin that computes the
same rows straight from turn_step, and the comparison of their answers (a ratio is only
reported for two equal answers).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from functools import partial
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from analytics_app.selectors.dashboards import DashboardFilter


# --- The naive side: the same answers straight from turn_step --------------------------

_NAIVE_SUMS = """
    SUM(input_tokens) AS input_tokens, SUM(cached_tokens) AS cached_tokens,
    SUM(output_tokens) AS output_tokens, COALESCE(SUM(cost_usd), 0) AS cost_usd,
    COUNT(*) AS calls, COUNT(*) FILTER (WHERE NOT success) AS errors
"""


def _naive(sql: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        names = [column.name for column in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def _naive_over_time(start: datetime, end: datetime, unit: str) -> list[dict[str, Any]]:
    return _naive(
        f"SELECT date_trunc('{unit}', created_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS key,"
        f" {_NAIVE_SUMS} FROM turn_step WHERE created_at >= %(start)s AND created_at < %(end)s"
        " GROUP BY 1 ORDER BY 1",
        {"start": start, "end": end},
    )


def _naive_breakdown(start: datetime, end: datetime, column: str) -> list[dict[str, Any]]:
    return _naive(
        f"SELECT {column} AS key, {_NAIVE_SUMS} FROM turn_step"
        " WHERE created_at >= %(start)s AND created_at < %(end)s"
        " GROUP BY 1 ORDER BY cost_usd DESC, calls DESC LIMIT 15",
        {"start": start, "end": end},
    )


def _naive_totals(start: datetime, end: datetime) -> list[dict[str, Any]]:
    return _naive(
        f"SELECT 'all' AS key, {_NAIVE_SUMS} FROM turn_step"
        " WHERE created_at >= %(start)s AND created_at < %(end)s",
        {"start": start, "end": end},
    )


def _naive_top_users(start: datetime, end: datetime) -> list[dict[str, Any]]:
    return _naive(
        f"SELECT t.name || '/' || s.user_id AS key, {_NAIVE_SUMS} FROM turn_step s"
        " JOIN tenant t ON t.id = s.tenant_id"
        " WHERE s.created_at >= %(start)s AND s.created_at < %(end)s"
        " GROUP BY t.name, s.user_id ORDER BY cost_usd DESC LIMIT 10",
        {"start": start, "end": end},
    )


def _naive_top_sessions(start: datetime, end: datetime) -> list[dict[str, Any]]:
    """Sessions active in the window, ranked by the lifetime cost of their steps."""
    return _naive(
        "SELECT s.session_id::text AS key, COALESCE(SUM(s.cost_usd), 0) AS cost_usd"
        " FROM turn_step s WHERE s.session_id IN (SELECT id FROM chat_session"
        " WHERE last_active_at >= %(start)s AND created_at < %(end)s)"
        " GROUP BY s.session_id ORDER BY cost_usd DESC, s.session_id LIMIT 10",
        {"start": start, "end": end},
    )


# --- Comparing answers -------------------------------------------------------------------


def _calls_and_cost(rows: list[dict[str, Any]], key: str) -> dict[str, tuple[int, Decimal]]:
    return {
        str(row[key]): (int(row.get("calls") or 0), Decimal(row.get("cost_usd") or 0))
        for row in rows
    }


def same_answers(
    subject: list[dict[str, Any]], naive: list[dict[str, Any]], key: str, costs_only: bool
) -> bool:
    """Same keys, calls and cost (to the cent: ranking ties may order equal costs apart)."""
    a, b = _calls_and_cost(subject, key), _calls_and_cost(naive, "key")
    if costs_only:
        a = {k: (0, v[1]) for k, v in a.items()}
        b = {k: (0, v[1]) for k, v in b.items()}
    if a.keys() != b.keys():
        return False
    return all(a[k][0] == b[k][0] and abs(a[k][1] - b[k][1]) < Decimal("0.01") for k in a)


# --- The pairs ---------------------------------------------------------------------------


@dataclass
class Pair:
    """A rollup-backed query and its naive twin; `key` names the subject's key field."""

    name: str
    subject: Callable[[], list[dict[str, Any]]]
    naive: Callable[[], list[dict[str, Any]]]
    key: str
    costs_only: bool = False


def pairs_for(start: datetime, end: datetime, tenant: Any) -> list[Pair]:
    """Every pair B3 times over [start, end): the dashboard selectors over all tenants,
    then `usage_report` for `tenant` by each of its groupings."""
    from analytics_app.selectors import dashboards as d

    window = d.DashboardFilter(start=start, end=end)
    return [
        *_spend_pairs(window),
        *_ranking_pairs(window),
        *[
            _usage_pair(tenant, g, start, end)
            for g in ("day", "model", "agent", "user", "step_type")
        ],
    ]


def _spend_pairs(f: DashboardFilter) -> list[Pair]:
    """Spend over time (the window by day, its last two days by hour), the breakdowns and
    the totals."""
    from analytics_app.selectors import dashboards as d

    start, end = f.start, f.end
    hourly = d.DashboardFilter(start=end - timedelta(days=2), end=end)
    return [
        Pair(
            f"spend_over_time, daily, {(end - start).days} days",
            lambda: d.spend_over_time(f),
            lambda: _naive_over_time(start, end, "day"),
            "bucket_start",
        ),
        Pair(
            "spend_over_time, hourly, 2 days",
            lambda: d.spend_over_time(hourly),
            lambda: _naive_over_time(hourly.start, hourly.end, "hour"),
            "bucket_start",
        ),
        *[
            Pair(
                f"spend_breakdown by {dim}",
                partial(d.spend_breakdown, f, dim),
                partial(_naive_breakdown, start, end, dim),
                "key",
            )
            for dim in ("model", "agent_id", "step_type")
        ],
        Pair(
            "spend_totals",
            lambda: [{**d.spend_totals(f), "key": "all"}],
            lambda: _naive_totals(start, end),
            "key",
        ),
    ]


def _ranking_pairs(f: DashboardFilter) -> list[Pair]:
    """The top users and the top sessions, keyed as their naive twins key them."""
    from analytics_app.selectors import dashboards as d

    def top_users() -> list[dict[str, Any]]:
        return [{**r, "key": f"{r['tenant__name']}/{r['user_id']}"} for r in d.top_users(f)]

    def top_sessions() -> list[dict[str, Any]]:
        return [{"key": str(s.pk), "cost_usd": s.total_cost_usd} for s in d.top_sessions(f)]

    return [
        Pair("top_users", top_users, lambda: _naive_top_users(f.start, f.end), "key"),
        Pair(
            "top_sessions (session totals)",
            top_sessions,
            lambda: _naive_top_sessions(f.start, f.end),
            "key",
            costs_only=True,
        ),
    ]


def _usage_pair(tenant: Any, group_by: str, start: datetime, end: datetime) -> Pair:
    """`usage_report` (rollups + live tail) against its own `_direct_sums` path."""
    from analytics_app.selectors.usage import _direct_sums, usage_report

    def subject() -> list[dict[str, Any]]:
        report = usage_report(tenant=tenant, group_by=group_by, start=start, end=end)
        return report.rows

    def naive() -> list[dict[str, Any]]:
        rows = _direct_sums(tenant, group_by, start, end)
        return [{"key": k, **v} for k, v in rows.items()]

    return Pair(f"usage_report by {group_by} (one tenant)", subject, naive, "key")
