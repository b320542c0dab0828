"""B3 dashboards: each spend query on the rollups against the same answer computed with
a naive GROUP BY over turn_step, and the dashboard page end to end.

- Fill: `rollups_fill` from empty over the whole dataset, timed (the backfill a new
  deployment runs once; afterwards the beat task fills a few seconds' worth each time).
- Queries: the selectors in `analytics_app.selectors.dashboards` (spend over time,
  breakdowns by model / agent / step type, totals, top users, top sessions) over all
  tenants, and `usage_report` (rollups + live tail) for one tenant by day / model /
  agent / user / step type. Each is paired with a naive query giving the same rows
  straight from turn_step (for usage_report, its own `_direct_sums` path; the pairs are in
  bench/b3_query_pairs.py); the rows are compared, so a ratio is never reported for two
  different answers.
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
from typing import Any

from bench.b3_query_pairs import Pair, pairs_for, same_answers
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
    size = SIZES[ctx.size]
    anchor = _anchor()
    start, end = anchor - timedelta(days=WINDOW_DAYS), anchor
    per_size = [_measure_dataset(ctx, size, spec, start, end) for spec in size.datasets]
    return _report(ctx, size, per_size, start, end)


def _measure_dataset(
    ctx: BenchContext, size: B3Size, spec: GenerateSpec, start: datetime, end: datetime
) -> dict[str, Any]:
    """One dataset: the rollups filled from empty, every pair timed, the page rendered."""
    from sessions_app.models import Tenant

    ctx.ensure_dataset(spec)
    steps = _analyzed_step_count()
    fill_seconds, filled = _fill_rollups(ctx, steps)
    tenant = Tenant.objects.get(name=spec.tenant_name(0))
    rows = [_measure_pair(ctx, size, steps, pair) for pair in pairs_for(start, end, tenant)]
    page_ms, page_queries = _page_ms(start, end, repeats=5)
    ctx.log(f"[B3] {steps:,} steps: page {page_ms:.1f} ms, {page_queries} queries")
    return {
        "steps": steps,
        "fill_seconds": round(fill_seconds, 1),
        "fill_steps": filled,
        "queries": rows,
        "page_ms": round(page_ms, 1),
        "page_queries": page_queries,
    }


def _analyzed_step_count() -> int:
    """turn_step analysed, and its row count."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE turn_step")
        cursor.execute("SELECT count(*) FROM turn_step")
        return int(cursor.fetchone()[0])


def _fill_rollups(ctx: BenchContext, steps: int) -> tuple[float, dict[str, int]]:
    """`rollups_fill` until caught up, then the rollup tables analysed: the seconds it
    took and the steps each rollup counted."""
    from django.conf import settings
    from django.db import connection
    from django.utils import timezone

    from analytics_app.services.rollups import rollups_fill

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
    return fill_seconds, filled


def _measure_pair(ctx: BenchContext, size: B3Size, steps: int, pair: Pair) -> dict[str, Any]:
    """The pair's answers compared after one warm-up call of each, then both timed in
    alternating rounds: the median ms of each side."""
    subject_ms: list[float] = []
    naive_ms: list[float] = []
    _, subject_rows = _timed(pair.subject)  # warm-up, and the answers to compare
    _, naive_rows = _timed(pair.naive)
    same = same_answers(subject_rows, naive_rows, pair.key, pair.costs_only)
    for _ in range(size.rounds):
        subject_ms.extend(_timed(pair.subject)[0] for _ in range(size.subject_repeats))
        naive_ms.append(_timed(pair.naive)[0])
    s, n = statistics.median(subject_ms), statistics.median(naive_ms)
    ctx.log(
        f"[B3] {steps:,} steps, {pair.name}: rollups {s:.2f} ms, naive {n:.1f} ms "
        f"= {n / s:,.0f}x{'' if same else ' (ANSWERS DIFFER)'}"
    )
    return {"query": pair.name, "rollup_ms": s, "naive_ms": n, "same": same}


# --- The report ------------------------------------------------------------------------


def _report(
    ctx: BenchContext,
    size: B3Size,
    per_size: list[dict[str, Any]],
    start: datetime,
    end: datetime,
) -> BenchResult:
    all_same = all(row["same"] for s in per_size for row in s["queries"])
    largest = per_size[-1]
    worst = min(row["naive_ms"] / row["rollup_ms"] for row in largest["queries"])
    markdown = _markdown(ctx, size, per_size, start, end, worst=worst, all_same=all_same)
    data = {
        "size": ctx.size,
        "window": [start.isoformat(), end.isoformat()],
        "per_size": per_size,
        "worst_ratio_at_largest": round(worst, 1),
        "target_ratio": TARGET_RATIO,
        "answers_match": all_same,
    }
    return BenchResult(id=ID, title=TITLE, markdown=markdown, data=data)


def _ratio_table(per_size: list[dict[str, Any]]) -> list[str]:
    """One row per query, three columns per dataset size; ≠ marks different answers."""
    head = "| query | " + " | ".join(
        f"{s['steps'] / 1e6:.1f}M: rollups ms | naive ms | ratio" for s in per_size
    )
    columns = 1 + 3 * len(per_size)
    lines = [head + " |", "|---|" + "---:|" * (columns - 1)]
    names = [row["query"] for row in per_size[0]["queries"]]
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
    return lines


def _fills(per_size: list[dict[str, Any]]) -> str:
    return "; ".join(
        f"{s['steps']:,} steps: {s['fill_seconds']:.1f} s "
        f"({s['steps'] / s['fill_seconds']:,.0f} steps/s, all three tables filled)"
        for s in per_size
    )


def _pages(per_size: list[dict[str, Any]]) -> str:
    return "; ".join(
        f"{s['steps'] / 1e6:.1f}M steps: {s['page_ms']:.0f} ms, {s['page_queries']} queries"
        for s in per_size
    )


def _page_naive(per_size: list[dict[str, Any]]) -> str:
    """The naive twins of the page's spend queries (every pair but usage_report's)."""
    return "; ".join(
        f"{s['steps'] / 1e6:.1f}M: "
        f"{sum(r['naive_ms'] for r in s['queries'] if not r['query'].startswith('usage')):,.0f} ms"
        for s in per_size
    )


def _markdown(
    ctx: BenchContext,
    size: B3Size,
    per_size: list[dict[str, Any]],
    start: datetime,
    end: datetime,
    *,
    worst: float,
    all_same: bool,
) -> str:
    label = f"{per_size[-1]['steps'] / 1e6:.1f}M"
    verdict = "meets" if worst >= TARGET_RATIO else "misses"
    scope = "" if ctx.size == "full" else " (the target is set at 10M; `--size full` runs it)"
    return f"""
Window: [{start:%Y-%m-%d}, {end:%Y-%m-%d}) ({WINDOW_DAYS} days, all tenants; usage_report:
tenant `{size.datasets[-1].tenant_name(0)}`, a tenth of the steps). Steps: the generator's
10 tenants x N sessions x 34 turns x 3 steps (seed 1; B1's rows included). Server time
in-process (ORM + PostgreSQL, production settings, no HTTP): median of
{size.rounds}x{size.subject_repeats} runs for the rollups, {size.rounds} for the naive
query, alternating, after one warm-up of each whose answers are compared (≠ marks a
difference; {"none" if all_same else "SEE ABOVE"}).

Rollup fill from empty (`rollups_fill`, default batch of 5,000 steps, three rollup
tables: spend by hour, spend by day, user by day): {_fills(per_size)}.

{chr(10).join(_ratio_table(per_size))}

**Worst ratio at {label} steps: {worst:,.0f}x — {verdict} the ≥ {TARGET_RATIO:g}x
target{scope}.**

Dashboard page end to end (`GET /dashboards/spend/` for the window, Django test Client as
a staff user, median of 5 renders after one; static files from the plain storage, since
the run does not `collectstatic`): {_pages(per_size)}. For comparison, the naive twins
of its spend queries alone would take {_page_naive(per_size)}.
"""
