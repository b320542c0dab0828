"""Staff dashboards. Views parse the filter, call selectors, render; nothing else."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, time, timedelta
from functools import wraps
from typing import Any

from django import forms
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.utils import timezone

from analytics_app.pages.charts import bar_chart, column_chart
from analytics_app.pages.layout import operator_render
from analytics_app.pages.panels import dashboard_panels
from analytics_app.selectors import dashboards

# A wider window would still read only rollups, but daily bars past a year are unreadable.
MAX_DAYS = 366


def staff_required(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Anonymous → the admin login; logged in but not staff → 403 (a login page would
    only loop: their account will never be let in)."""

    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        if not (request.user.is_active and request.user.is_staff):
            raise PermissionDenied("Staff only.")
        return view(request, *args, **kwargs)

    return wrapped


class DashboardFilterForm(forms.Form):
    start = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))
    end = forms.DateField(
        required=False,
        widget=forms.DateInput(attrs={"type": "date"}),
        help_text="Inclusive.",
    )
    tenant = forms.TypedChoiceField(required=False, coerce=int, empty_value=None)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        tenant_field = self.fields["tenant"]
        assert isinstance(tenant_field, forms.TypedChoiceField)
        tenant_field.choices = [("", "all tenants"), *dashboards.tenant_choices()]

    def to_filter(self) -> dashboards.DashboardFilter:
        today = timezone.now().date()
        data = self.cleaned_data if self.is_valid() else {}
        end_day = data.get("end") or today
        start_day = data.get("start") or end_day - timedelta(days=13)
        start_day = max(min(start_day, end_day), end_day - timedelta(days=MAX_DAYS - 1))
        return dashboards.DashboardFilter(
            start=datetime.combine(start_day, time.min, tzinfo=UTC),
            end=datetime.combine(end_day + timedelta(days=1), time.min, tzinfo=UTC),
            tenant_id=data.get("tenant"),
        )


@staff_required
def spend_dashboard(request: HttpRequest) -> HttpResponse:
    form = DashboardFilterForm(request.GET or None)
    f = form.to_filter()
    top_sessions = dashboards.top_sessions(f)
    context = {
        "form": form,
        "filter": f,
        "range_end": f.end - timedelta(days=1),
        "totals": dashboards.spend_totals(f),
        "freshness": dashboards.rollups_freshness(),
        **_over_time(f),
        **_breakdowns(f),
        "top_sessions": top_sessions,
        "top_sessions_chart": bar_chart(
            [
                (f"{s.user_id} · {str(s.pk)[:8]}", float(s.total_cost_usd or 0))
                for s in top_sessions
            ],
            title="Top sessions by cost (USD)",
            unit="$",
        ),
        "top_users": dashboards.top_users(f),
        "runaway": dashboards.runaway_sessions(f),
        "budgets": dashboards.budget_consumption(f),
        "panels": dashboard_panels(f),
    }
    return operator_render(request, "dashboards/spend.html", context)


def _over_time(f: dashboards.DashboardFilter) -> dict[str, Any]:
    """Tokens and spend per hour (a range of a day or two) or per day, with their charts."""
    series = dashboards.spend_over_time(f)
    label = "%m-%d %H:00" if f.granularity == "hour" else "%Y-%m-%d"
    return {
        "series": series,
        "series_label": label,
        "tokens_chart": column_chart(
            [(r["bucket_start"].strftime(label), r["tokens"]) for r in series], title="Tokens"
        ),
        "cost_chart": column_chart(
            [(r["bucket_start"].strftime(label), float(r["cost_usd"] or 0)) for r in series],
            title="Spend (USD)",
            unit="$",
        ),
    }


def _breakdowns(f: dashboards.DashboardFilter) -> dict[str, Any]:
    """Spend by model, agent and step type, and the error rate by step type, charted."""
    breakdowns = {
        name: dashboards.spend_breakdown(f, dimension)
        for name, dimension in (
            ("model", "model"),
            ("agent", "agent_id"),
            ("step type", "step_type"),
        )
    }
    errors = dashboards.spend_breakdown(f, "step_type")
    return {
        "breakdowns": [
            (
                name,
                rows,
                bar_chart(
                    [(r["key"], float(r["cost_usd"] or 0)) for r in rows],
                    title=f"Spend by {name} (USD)",
                    unit="$",
                ),
            )
            for name, rows in breakdowns.items()
        ],
        "errors": errors,
        "errors_chart": bar_chart(
            [(r["key"], 100 * r["error_rate"]) for r in errors], title="Error rate by step type (%)"
        ),
    }
