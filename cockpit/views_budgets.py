"""The budgets page: a tenant's period budgets with use and forecast to the period's end,
and the drift between Engram's spend and the providers' imported exports."""

from __future__ import annotations

from datetime import timedelta

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from analytics_app.pages.views import staff_required
from analytics_app.selectors.reconciliation import reconciliation_report
from sessions_app.api.representation_budgets import budgets_data
from sessions_app.selectors.sessions import tenant_for_staff
from sessions_app.selectors.spend_budgets import spend_budgets_of

DRIFT_DAYS = 30
PROVIDERS = ("openai", "anthropic")


@staff_required
def budgets_page(request: HttpRequest, tenant: int) -> HttpResponse:
    tenant_obj = tenant_for_staff(tenant_id=tenant)
    if tenant_obj is None:
        raise Http404("No such tenant.")
    now = timezone.now()
    budgets = budgets_data(list(spend_budgets_of(tenant_obj)[:200]), at=now)
    end = now.date()
    drift = [
        reconciliation_report(
            tenant=tenant_obj, provider=provider, start=end - timedelta(days=DRIFT_DAYS), end=end
        )
        for provider in PROVIDERS
    ]
    context = {
        "tenant": tenant_obj,
        "budgets": budgets,
        "drift": [report for report in drift if report.rows],
        "drift_days": DRIFT_DAYS,
    }
    return render(request, "cockpit/budgets.html", context)
