"""Budget threshold alerts: once per budget, period and threshold, through the signed
webhook, with the budget's figures; a real receiver on loopback."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.test import override_settings

from analytics_app.models import AlertStatus, BudgetAlert
from analytics_app.services.alerts import SIGNATURE_HEADER, alert_signature
from sessions_app.models import Tenant
from sessions_app.services.sessions import session_create
from sessions_app.services.spend_budgets import spend_budget_create
from sessions_app.services.turn_recording import turn_record
from sessions_app.services.turn_totals import StepInput
from sessions_app.usage import TokenCounts
from tests.analytics_app.webhook import webhook_receiver

SECRET = "budget-alert-secret"
STEP = StepInput(
    step_type="chat", model="gpt-4o-mini", counts=TokenCounts(input_tokens=900, output_tokens=100)
)


@pytest.mark.django_db
def test_each_threshold_alerts_once_per_period_with_the_budgets_figures(
    tenant: Tenant, django_capture_on_commit_callbacks: Any
) -> None:
    budget = spend_budget_create(
        tenant=tenant, scope="user", user_id="u1", period="day", limit_tokens=5000,
        action="alert", name="u1 daily",
    )  # fmt: skip
    session = session_create(tenant=tenant, user_id="u1", agent_id="a", ttl_seconds=10**7)
    day = datetime(2026, 12, 3, 8, tzinfo=UTC)
    with (
        webhook_receiver() as hook,
        override_settings(ENGRAM_ALERT_WEBHOOK_URL=hook.url, ENGRAM_ALERT_WEBHOOK_SECRET=SECRET),
    ):
        for n in range(6):  # 1000 tokens each: 20, 40, 60, 80, 100, 120 %
            with django_capture_on_commit_callbacks(execute=True):
                turn_record(
                    tenant=tenant, session_id=session.pk, steps=[STEP],
                    now=day + timedelta(minutes=n),
                )  # fmt: skip
        sent = [request.json for request in hook.requests]
        assert [body["threshold_percent"] for body in sent] == [50, 80, 100]
        last = hook.requests[-1]
        assert last.headers[SIGNATURE_HEADER] == alert_signature(last.body, SECRET)
        assert sent[-1]["event"] == "budget.threshold"
        assert sent[-1]["budget"]["id"] == str(budget.pk)
        assert sent[-1]["budget"]["limit_tokens"] == 5000
        assert [body["spent_tokens"] for body in sent] == [3000, 4000, 5000]  # when crossed
        assert sent[0]["period_start"].startswith("2026-12-03T00:00:00")
        assert set(BudgetAlert.objects.values_list("status", flat=True)) == {AlertStatus.DELIVERED}
        # The next day is a new period: its thresholds alert again.
        with django_capture_on_commit_callbacks(execute=True):
            turn_record(
                tenant=tenant, session_id=session.pk, steps=[STEP] * 3,
                now=day + timedelta(days=1),
            )  # fmt: skip
        assert [r.json["threshold_percent"] for r in hook.requests][3:] == [50]


@pytest.mark.django_db
def test_a_failed_delivery_is_kept_for_retry_and_the_turn_is_stored(
    tenant: Tenant, django_capture_on_commit_callbacks: Any
) -> None:
    spend_budget_create(
        tenant=tenant, scope="tenant", period="none", limit_usd="0.000001",
        alert_thresholds=[100],
    )  # fmt: skip
    session = session_create(tenant=tenant, user_id="u1", agent_id="a")
    with webhook_receiver() as hook, override_settings(ENGRAM_ALERT_WEBHOOK_URL=hook.url):
        hook.statuses = [500] * 10
        with django_capture_on_commit_callbacks(execute=True):
            result = turn_record(tenant=tenant, session_id=session.pk, steps=[STEP])
    assert result.turn.pk is not None
    alert = BudgetAlert.objects.get()
    assert alert.threshold == 100 and alert.status == AlertStatus.PENDING  # the task retries
    assert alert.attempts == 1 and "500" in alert.last_error
    assert len(hook.requests) == 1
