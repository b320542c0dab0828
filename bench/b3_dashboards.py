"""B3 dashboards: each spend query on the rollups against the same answer computed with
a naive GROUP BY over turn_step, and the dashboard page end to end.

- Fill: `rollups_fill` from empty over the whole dataset, timed (the backfill a new
  deployment runs once; afterwards the beat task fills a few seconds' worth each time).
- Queries: the selectors in `analytics_app.selectors.dashboards` (spend over time,
  breakdowns by model / agent / step type, totals, top users, top sessions) over all
  tenants, and `usage_report` (rollups + live tail) for one tenant by day / model /
  agent / user / step type. Each is paired with a naive query giving the same rows
  straight from turn_step (for usage_report, its own `_direct_sums` path); the rows are
  compared, so a ratio is never reported for two different answers.
- Timing: in-process, server time (the ORM + PostgreSQL, no HTTP); subject and naive
  alternate over `rounds`, the median of each is compared.
- Page: `GET /dashboards/spend/` for the same window, Django's test Client logged in as a
  staff user, production settings: everything the page does (a dozen queries, charts,
  template) per render.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from bench.generate import GenerateSpec, _anchor
from bench.harness import BenchContext, BenchResult

ID = "B3"
TITLE = "Dashboards: spend queries on the rollups vs a naive GROUP BY over turn_step"
TARGET_RATIO = 50.0  # at 10M steps
WINDOW_DAYS = 30


@dataclass(frozen=True)
class B3Size:
    datasets: list[GenerateSpec]
    rounds: int
    subject_repeats: int


def _steps(sessions: int) -> GenerateSpec:
    # Seed 1 with B1's shape: B1's 99k steps are the first rows of these (shared, not redone).
    return GenerateSpec(tenants=10, sessions=sessions, turns_per_session=34, steps_per_turn=3)


SIZES = {
    "short": B3Size(datasets=[_steps(1000)], rounds=3, subject_repeats=5),
    "full": B3Size(datasets=[_steps(1000), _steps(10_000)], rounds=3, subject_repeats=5),
}


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


def _pairs(rows: list[dict[str, Any]], key: str) -> dict[str, tuple[int, Decimal]]:
    return {
        str(row[key]): (int(row.get("calls") or 0), Decimal(row.get("cost_usd") or 0))
        for row in rows
    }


def _same(
    subject: list[dict[str, Any]], naive: list[dict[str, Any]], key: str, costs_only: bool
) -> bool:
    """Same keys, calls and cost (to the cent: ranking ties may order equal costs apart)."""
    a, b = _pairs(subject, key), _pairs(naive, "key")
    if costs_only:
        a = {k: (0, v[1]) for k, v in a.items()}
        b = {k: (0, v[1]) for k, v in b.items()}
    if a.keys() != b.keys():
        return False
    return all(a[k][0] == b[k][0] and abs(a[k][1] - b[k][1]) < Decimal("0.01") for k in a)


@dataclass
class Pair:
    """A rollup-backed query and its naive twin; `key` names the subject's key field."""

    name: str
    subject: Callable[[], list[dict[str, Any]]]
    naive: Callable[[], list[dict[str, Any]]]
    key: str
    costs_only: bool = False


def _pairs_for(start: datetime, end: datetime, tenant: Any) -> list[Pair]:
    from analytics_app.selectors import dashboards as d
    from analytics_app.selectors.usage import _direct_sums, usage_report

    f = d.DashboardFilter(start=start, end=end)
    hourly = d.DashboardFilter(start=end - timedelta(days=2), end=end)

    def usage(group_by: str) -> Pair:
        def subject() -> list[dict[str, Any]]:
            report = usage_report(tenant=tenant, group_by=group_by, start=start, end=end)
            return report.rows

        def naive() -> list[dict[str, Any]]:
            rows = _direct_sums(tenant, group_by, start, end)
            return [{"key": k, **v} for k, v in rows.items()]

        return Pair(f"usage_report by {group_by} (one tenant)", subject, naive, "key")

    def top_users() -> list[dict[str, Any]]:
        return [{**r, "key": f"{r['tenant__name']}/{r['user_id']}"} for r in d.top_users(f)]

    def top_sessions() -> list[dict[str, Any]]:
        return [{"key": str(s.pk), "cost_usd": s.total_cost_usd} for s in d.top_sessions(f)]

    return [
        Pair(
            f"spend_over_time, daily, {WINDOW_DAYS} days",
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
                (lambda dim=dim: d.spend_breakdown(f, dim)),
                (lambda dim=dim: _naive_breakdown(start, end, dim)),
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
        Pair("top_users", top_users, lambda: _naive_top_users(start, end), "key"),
        Pair(
            "top_sessions (session totals)",
            top_sessions,
            lambda: _naive_top_sessions(start, end),
            "key",
            costs_only=True,
        ),
        *[usage(g) for g in ("day", "model", "agent", "user", "step_type")],
    ]


def _timed(call: Callable[[], Any]) -> tuple[float, Any]:
    began = time.perf_counter()
    value = call()
    return (time.perf_counter() - began) * 1000, value


# --- The page --------------------------------------------------------------------------


def _page_ms(start: datetime, end: datetime, repeats: int) -> tuple[float, int]:
    """Median ms of rendering the dashboard for the window, and the number of queries."""
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext, override_settings

    user_model = get_user_model()
    staff, _ = user_model.objects.get_or_create(
        username="bench-b3-staff", defaults={"is_staff": True}
    )
    client = Client(HTTP_HOST="localhost")
    client.force_login(staff)
    url = (
        f"/dashboards/spend/?start={start.date().isoformat()}"
        f"&end={(end - timedelta(days=1)).date().isoformat()}"
    )
    timings = []
    queries = 0
    # The manifest storage needs `collectstatic`, which a benchmark run does not do; the
    # plain storage renders the same page with unhashed static URLs.
    storages = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }
    for _ in range(repeats + 1):
        with override_settings(STORAGES=storages), CaptureQueriesContext(connection) as captured:
            ms, response = _timed(lambda: client.get(url))
        if response.status_code != 200:
            raise RuntimeError(f"dashboard answered {response.status_code}")
        timings.append(ms)
        queries = len(captured)
    return statistics.median(timings[1:]), queries  # the first render warms caches


# --- The run ---------------------------------------------------------------------------


def run(ctx: BenchContext) -> BenchResult:
    from django.conf import settings
    from django.db import connection
    from django.utils import timezone

    from analytics_app.services.rollups import rollups_fill
    from sessions_app.models import Tenant

    size = SIZES[ctx.size]
    anchor = _anchor()
    start, end = anchor - timedelta(days=WINDOW_DAYS), anchor
    per_size: list[dict[str, Any]] = []
    for spec in size.datasets:
        ctx.ensure_dataset(spec)
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE turn_step")
            cursor.execute("SELECT count(*) FROM turn_step")
            steps = int(cursor.fetchone()[0])
        # Nothing else writes: count every step, including those of the last seconds.
        fill_now = timezone.now() + timedelta(seconds=settings.ENGRAM_ROLLUP_SETTLE_SECONDS + 1)
        began = time.monotonic()
        reports = []
        for _ in range(100):  # bounded; each call stops after ENGRAM_ROLLUP_MAX_SECONDS
            reports = rollups_fill(now=fill_now, max_seconds=3600)
            if all(report.caught_up for report in reports):
                break
        fill_seconds = time.monotonic() - began
        filled = {report.name: report.steps for report in reports}
        ctx.log(f"[B3] {steps:,} steps: rollups_fill {fill_seconds:.1f}s ({filled})")
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE spend_rollup")
            cursor.execute("ANALYZE user_spend_rollup")
        tenant = Tenant.objects.get(name=spec.tenant_name(0))
        rows = []
        for pair in _pairs_for(start, end, tenant):
            subject_ms: list[float] = []
            naive_ms: list[float] = []
            _, subject_rows = _timed(pair.subject)  # warm-up, and the answers to compare
            _, naive_rows = _timed(pair.naive)
            same = _same(subject_rows, naive_rows, pair.key, pair.costs_only)
            for _ in range(size.rounds):
                subject_ms.extend(_timed(pair.subject)[0] for _ in range(size.subject_repeats))
                naive_ms.append(_timed(pair.naive)[0])
            s, n = statistics.median(subject_ms), statistics.median(naive_ms)
            rows.append({"query": pair.name, "rollup_ms": s, "naive_ms": n, "same": same})
            ctx.log(
                f"[B3] {steps:,} steps, {pair.name}: rollups {s:.2f} ms, naive {n:.1f} ms "
                f"= {n / s:,.0f}x{'' if same else ' (ANSWERS DIFFER)'}"
            )
        page_ms, page_queries = _page_ms(start, end, repeats=5)
        ctx.log(f"[B3] {steps:,} steps: page {page_ms:.1f} ms, {page_queries} queries")
        per_size.append(
            {
                "steps": steps,
                "fill_seconds": round(fill_seconds, 1),
                "fill_steps": filled,
                "queries": rows,
                "page_ms": round(page_ms, 1),
                "page_queries": page_queries,
            }
        )
    return _report(ctx, size, per_size, start, end)


def _report(
    ctx: BenchContext,
    size: B3Size,
    per_size: list[dict[str, Any]],
    start: datetime,
    end: datetime,
) -> BenchResult:
    head = "| query | " + " | ".join(
        f"{s['steps'] / 1e6:.1f}M: rollups ms | naive ms | ratio" for s in per_size
    )
    columns = 1 + 3 * len(per_size)
    lines = [head + " |", "|---|" + "---:|" * (columns - 1)]
    names = [row["query"] for row in per_size[0]["queries"]]
    all_same = all(row["same"] for s in per_size for row in s["queries"])
    for index, name in enumerate(names):
        cells = []
        for s in per_size:
            row = s["queries"][index]
            flag = "" if row["same"] else " ≠"
            cells.append(
                f"{row['rollup_ms']:.2f} | {row['naive_ms']:,.1f} | "
                f"**{row['naive_ms'] / row['rollup_ms']:,.0f}x**{flag}"
            )
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    largest = per_size[-1]
    ratios = [row["naive_ms"] / row["rollup_ms"] for row in largest["queries"]]
    worst = min(ratios)
    label = f"{largest['steps'] / 1e6:.1f}M"
    verdict = "meets" if worst >= TARGET_RATIO else "misses"
    scope = "" if ctx.size == "full" else " (the target is set at 10M; `--size full` runs it)"
    fills = "; ".join(
        f"{s['steps']:,} steps: {s['fill_seconds']:.1f} s "
        f"({s['steps'] / s['fill_seconds']:,.0f} steps/s, all three tables filled)"
        for s in per_size
    )
    pages = "; ".join(
        f"{s['steps'] / 1e6:.1f}M steps: {s['page_ms']:.0f} ms, {s['page_queries']} queries"
        for s in per_size
    )
    page_naive = "; ".join(
        f"{s['steps'] / 1e6:.1f}M: "
        f"{sum(r['naive_ms'] for r in s['queries'] if not r['query'].startswith('usage')):,.0f} ms"
        for s in per_size
    )
    markdown = f"""
Window: [{start:%Y-%m-%d}, {end:%Y-%m-%d}) ({WINDOW_DAYS} days, all tenants; usage_report:
tenant `{size.datasets[-1].tenant_name(0)}`, a tenth of the steps). Steps: the generator's
10 tenants x N sessions x 34 turns x 3 steps (seed 1; B1's rows included). Server time
in-process (ORM + PostgreSQL, production settings, no HTTP): median of
{size.rounds}x{size.subject_repeats} runs for the rollups, {size.rounds} for the naive
query, alternating, after one warm-up of each whose answers are compared (≠ marks a
difference; {"none" if all_same else "SEE ABOVE"}).

Rollup fill from empty (`rollups_fill`, default batch of 5,000 steps, three rollup
tables: spend by hour, spend by day, user by day): {fills}.

{chr(10).join(lines)}

**Worst ratio at {label} steps: {worst:,.0f}x — {verdict} the ≥ {TARGET_RATIO:g}x
target{scope}.**

Dashboard page end to end (`GET /dashboards/spend/` for the window, Django test Client as
a staff user, median of 5 renders after one; static files from the plain storage, since
the run does not `collectstatic`): {pages}. For comparison, the naive twins
of its spend queries alone would take {page_naive}.
"""
    data = {
        "size": ctx.size,
        "window": [start.isoformat(), end.isoformat()],
        "per_size": per_size,
        "worst_ratio_at_largest": round(worst, 1),
        "target_ratio": TARGET_RATIO,
        "answers_match": all_same,
    }
    return BenchResult(id=ID, title=TITLE, markdown=markdown, data=data)
