"""The cockpit's budgets page and the budgets' admin: use, forecast, drift; the admin
goes through the same validation as the API."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.utils import timezone

from analytics_app.services.reconciliation import provider_usage_import
from sessions_app.models import SpendBudget, Tenant
from sessions_app.services.sessions import session_create
from sessions_app.services.spend_budgets import spend_budget_create
from sessions_app.services.turn_recording import turn_record
from sessions_app.services.turn_totals import StepInput
from sessions_app.usage import TokenCounts


@pytest.fixture
def staff(db: None) -> Client:
    user = get_user_model().objects.create_user(username="ops", password="x", is_staff=True,
                                                is_superuser=True)  # fmt: skip
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.django_db
def test_the_budgets_page_shows_use_forecast_and_drift(staff: Client, tenant: Tenant) -> None:
    budget = spend_budget_create(
        tenant=tenant, name="shop daily", scope="agent", agent_id="shop", period="day",
        limit_tokens=4000,
    )  # fmt: skip
    session = session_create(tenant=tenant, user_id="u1", agent_id="shop")
    step = StepInput(step_type="chat", model="gpt-4o-mini",
                     counts=TokenCounts(input_tokens=900, output_tokens=100))  # fmt: skip
    turn_record(tenant=tenant, session_id=session.pk, steps=[step])
    today = timezone.now().date()
    start = int(datetime.combine(today, datetime.min.time(), tzinfo=UTC).timestamp())
    result = {"model": "gpt-4o-mini-2024-07-18", "input_tokens": 950, "output_tokens": 100}
    document = {"data": [{"start_time": start, "results": [result]}]}
    provider_usage_import(tenant=tenant, export_format="openai_usage", document=document)

    page = staff.get(f"/dashboards/budgets/{tenant.pk}/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "shop daily" in html and "25.0%" in html  # 1000 of 4000 tokens
    assert "1000 tokens" in html
    assert "gpt-4o-mini" in html and "900 / 100" in html and "950 / 100" in html
    assert staff.get("/dashboards/budgets/999999/").status_code == 404
    assert Client().get(f"/dashboards/budgets/{tenant.pk}/").status_code == 302

    listing = staff.get("/admin/sessions_app/spendbudget/")
    assert listing.status_code == 200 and "1000 tokens" in listing.content.decode()
    assert str(budget.pk) in listing.content.decode()


@pytest.mark.django_db
def test_the_admin_refuses_what_the_api_refuses(staff: Client, tenant: Tenant) -> None:
    form = {"tenant": tenant.pk, "name": "x", "scope": "user", "user_id": "u1", "agent_id": "",
            "model": "", "period": "day", "time_zone": "Mars/Base", "limit_tokens": "10",
            "limit_usd": "", "action": "refuse", "alert_thresholds": "[50, 100]"}  # fmt: skip
    refused = staff.post("/admin/sessions_app/spendbudget/add/", form)
    assert refused.status_code == 200 and "Unknown time zone" in refused.content.decode()
    assert not SpendBudget.objects.exists()
    made = staff.post("/admin/sessions_app/spendbudget/add/", {**form, "time_zone": "Asia/Tokyo"})
    assert made.status_code == 302, made.content.decode()[:2000]
    budget = SpendBudget.objects.get()
    assert budget.time_zone == "Asia/Tokyo" and budget.alert_thresholds == [50, 100]
    changed = staff.post(
        f"/admin/sessions_app/spendbudget/{budget.pk}/change/",
        {**form, "time_zone": "Asia/Tokyo", "limit_tokens": "20"},
    )
    assert changed.status_code == 302
    budget.refresh_from_db()
    assert budget.limit_tokens == 20
