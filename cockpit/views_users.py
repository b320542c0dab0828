"""The user page: one end user of one tenant across sessions, spend and memories."""

from __future__ import annotations

from datetime import timedelta

from django.http import Http404, HttpRequest, HttpResponse
from django.utils import timezone

from analytics_app.pages.charts import bar_chart, column_chart
from analytics_app.pages.layout import operator_render
from analytics_app.pages.views import staff_required
from analytics_app.selectors.user_spend import spend_by_model, user_spend_over_time
from cockpit.paging import page_number, page_of
from cockpit.sessions import budget_use
from memory_app.selectors.audit import newest_summaries, user_memories_by_type
from sessions_app.selectors.sessions import tenant_for_staff, user_sessions

SESSIONS_PER_PAGE = 25
SPEND_DAYS = 30
MODEL_SESSIONS = 100  # spend by model reads the steps of the user's newest sessions


@staff_required
def user_page(request: HttpRequest, tenant: int, user_id: str) -> HttpResponse:
    tenant_obj = tenant_for_staff(tenant_id=tenant)
    if tenant_obj is None:
        raise Http404("No such tenant.")
    sessions = page_of(
        user_sessions(tenant_id=tenant, user_id=user_id),
        page_number(request.GET.get("page")),
        SESSIONS_PER_PAGE,
    )
    newest_ids = list(
        user_sessions(tenant_id=tenant, user_id=user_id).values_list("pk", flat=True)[
            :MODEL_SESSIONS
        ]
    )
    today = timezone.now().replace(hour=0, minute=0, second=0, microsecond=0)
    start = today - timedelta(days=SPEND_DAYS - 1)
    days = user_spend_over_time(
        tenant_id=tenant, user_id=user_id, start=start, end=today + timedelta(days=1)
    )
    by_day = {row["bucket_start"]: float(row["cost_usd"] or 0) for row in days}
    chart_days = [start + timedelta(days=n) for n in range(SPEND_DAYS)]
    models = spend_by_model(session_ids=newest_ids)
    memories = user_memories_by_type(tenant=tenant_obj, user_id=user_id)
    context = {
        "tenant": tenant_obj,
        "user_id": user_id,
        "sessions": sessions,
        "session_rows": [(s, budget_use(s)) for s in sessions.rows],
        "spend_days": days,
        "spend_days_total": sum(float(r["cost_usd"] or 0) for r in days),
        "spend_chart": column_chart(
            [(day.strftime("%m-%d"), by_day.get(day, 0.0)) for day in chart_days],
            title=f"Spend per day, last {SPEND_DAYS} days (USD)",
            unit="$",
        ),
        "models": models,
        "models_chart": bar_chart(
            [(r["key"], float(r["cost_usd"] or 0)) for r in models],
            title="Spend by model (USD)",
            unit="$",
        ),
        "model_sessions": len(newest_ids),
        "memories": memories,
        "memory_total": sum(count for _, count, _ in memories),
        "summaries": newest_summaries(session_ids=newest_ids, limit=8),
    }
    return operator_render(request, "cockpit/user.html", context)
