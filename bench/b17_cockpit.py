"""B17 cockpit pages: queries and render time of each operator page at the bench's
data size, against the spend dashboard rendered in the same run.

- Data: B3's short dataset (10 tenants x 1,000 sessions x 34 turns x 3 steps = 1.02M
  steps; shared with B3 when both run) plus 10,000 memories over the tenants' 50 session
  users (2,000 distinct texts embedded for real); rollups filled.
- Pages, through Django's test Client as a staff user (production settings, plain static
  storage): the user page of the costliest session's user, that session's page with a
  context query (hybrid search inside), the explorer's newest page and a hybrid search,
  one memory's page; the spend dashboard as the baseline. One warm-up render each, then
  the median of `repeats`.
- Verdict: every page within its query bound (the same bounds as
  tests/cockpit/test_query_counts.py), and its render time as a ratio to the spend page.
"""

from __future__ import annotations

import statistics
import time
from datetime import timedelta
from typing import Any

from bench.generate import GenerateSpec
from bench.harness import BenchContext, BenchResult

ID = "B17"
TITLE = "Cockpit pages: queries and render time at the bench's data size"

SPEC = GenerateSpec(
    tenants=10,
    sessions=1000,
    turns_per_session=34,
    steps_per_turn=3,
    memories=10_000,
    memory_texts=2000,
    memory_users=50,
)
REPEATS = {"short": 5, "full": 5}
BOUNDS = {"spend": 32, "user": 12, "session": 28, "explorer": 8, "search": 14, "memory": 9}


def _urls() -> dict[str, str]:
    from django.urls import reverse

    from memory_app.models import Memory
    from sessions_app.models import ChatSession

    session = ChatSession.objects.order_by("-total_cost_usd").first()
    assert session is not None
    memory = (
        Memory.objects.filter(tenant_id=session.tenant_id, user_id=session.user_id)
        .order_by("-created_at")
        .first()
    ) or Memory.objects.filter(tenant_id=session.tenant_id).order_by("-created_at").first()
    assert memory is not None
    explorer = reverse("cockpit-memories")
    return {
        "spend": reverse("dashboard-spend"),
        "user": reverse("cockpit-user", args=[session.tenant_id, session.user_id]),
        "session": reverse("cockpit-session", args=[session.pk]) + "?query=laptop+budget",
        "explorer": f"{explorer}?tenant={session.tenant_id}",
        "search": f"{explorer}?tenant={session.tenant_id}&q=what+does+the+user+prefer",
        "memory": reverse("cockpit-memory", args=[memory.pk]),
    }


def _measure(urls: dict[str, str], repeats: int) -> dict[str, dict[str, Any]]:
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext, override_settings

    staff, _ = get_user_model().objects.get_or_create(
        username="bench-b17-staff", defaults={"is_staff": True}
    )
    client = Client(HTTP_HOST="localhost")
    client.force_login(staff)
    storages = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }
    out: dict[str, dict[str, Any]] = {}
    with override_settings(STORAGES=storages):
        for name, url in urls.items():
            timings, sql, queries, slowest = [], [], 0, ("", 0.0)
            for _ in range(repeats + 1):
                with CaptureQueriesContext(connection) as captured:
                    began = time.perf_counter()
                    response = client.get(url)
                    timings.append((time.perf_counter() - began) * 1000)
                if response.status_code != 200:
                    raise RuntimeError(f"{url} answered {response.status_code}")
                queries = len(captured)
                times = [(q["sql"], float(q["time"]) * 1000) for q in captured.captured_queries]
                sql.append(sum(ms for _, ms in times))
                slowest = max(times, key=lambda item: item[1])
            out[name] = {
                "url": url,
                "ms": statistics.median(timings[1:]),
                "sql_ms": statistics.median(sql[1:]),
                "queries": queries,
                "slowest_sql": slowest[0][:300],
                "slowest_sql_ms": slowest[1],
            }
    return out


def run(ctx: BenchContext) -> BenchResult:
    from django.conf import settings
    from django.db import connection
    from django.utils import timezone

    from analytics_app.services.rollups import rollups_fill

    ctx.ensure_dataset(SPEC)
    fill_now = timezone.now() + timedelta(seconds=settings.ENGRAM_ROLLUP_SETTLE_SECONDS + 1)
    for _ in range(100):
        if all(r.caught_up for r in rollups_fill(now=fill_now, max_seconds=3600)):
            break
    with connection.cursor() as cursor:
        for table in ("turn_step", "chat_turn", "chat_session", "memory", "user_spend_rollup"):
            cursor.execute(f"ANALYZE {table}")
        cursor.execute("SELECT count(*) FROM turn_step")
        steps = int(cursor.fetchone()[0])
        cursor.execute("SELECT count(*) FROM memory")
        memories = int(cursor.fetchone()[0])
    pages = _measure(_urls(), REPEATS[ctx.size])
    base = pages["spend"]["ms"]
    rows = []
    within = True
    for name, page in pages.items():
        ok = page["queries"] <= BOUNDS[name]
        within &= ok
        page["ratio_to_spend"] = page["ms"] / base if base else None
        rows.append(
            f"| {name} | `{page['url']}` | {page['queries']} (≤ {BOUNDS[name]}"
            f"{'' if ok else ' EXCEEDED'}) | {page['ms']:,.1f} | {page['sql_ms']:,.1f} "
            f"| {page['slowest_sql_ms']:,.1f} | {page['ms'] / base:.2f}x |"
        )
    markdown = f"""
Data: {steps:,} steps, {memories:,} memories (B3's short dataset plus `bench.memory_data`
memories of the session users; rollups filled). Django test Client as a staff user,
production settings; median of {REPEATS[ctx.size]} renders after one warm-up.

| page | url | queries (bound) | ms | of which SQL ms | slowest query ms | vs spend page |
|---|---|---|---|---|---|---|
{chr(10).join(rows)}

**{"Every page within its query bound." if within else "A PAGE EXCEEDED ITS QUERY BOUND."}**
"""
    data = {"steps": steps, "memories": memories, "pages": pages, "within_bounds": within}
    if not within:
        ctx.log(f"[B17] query bound exceeded: {pages}")
    return BenchResult(id=ID, title=TITLE, markdown=markdown, data=data)
