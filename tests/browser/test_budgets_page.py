"""The cockpit's budgets page in a real headless Chromium: an operator sees each period
budget's use, what is reserved and the forecast to the period's end, the one past its
limit marked; the page is screenshotted (see conftest's `screenshots`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone
from playwright.sync_api import Browser, expect

from sessions_app.models import Tenant
from sessions_app.services.api_keys import tenant_get_or_create
from sessions_app.services.budgets import budget_check_reserve
from sessions_app.services.sessions import session_create
from sessions_app.services.spend_budgets import spend_budget_create
from sessions_app.services.turn_recording import turn_record
from sessions_app.services.turn_totals import StepInput
from sessions_app.usage import TokenCounts
from tests.browser.layout_checks import missing_glyphs, squeezed_text

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@dataclass(frozen=True)
class Seeded:
    tenant: Tenant
    period_start: datetime
    period_end: datetime


@pytest.fixture
def seeded(live_server) -> Seeded:
    get_user_model().objects.create_user(
        "ops", password="ops-pass-123", is_staff=True, is_superuser=True
    )
    tenant = tenant_get_or_create(name="acme")
    day = spend_budget_create(
        tenant=tenant, name="shop daily", scope="agent", agent_id="shop", period="day",
        time_zone="Europe/Lisbon", limit_tokens=4000,
    )  # fmt: skip
    spend_budget_create(
        tenant=tenant, name="maria monthly", scope="user", user_id="maria", period="month",
        limit_tokens=1500, action="alert",
    )  # fmt: skip
    spend_budget_create(
        tenant=tenant, name="lifetime", scope="tenant", period="none", limit_usd="100"
    )
    session = session_create(tenant=tenant, user_id="maria", agent_id="shop")
    step = StepInput(step_type="chat", model="gpt-4o-mini",
                     counts=TokenCounts(input_tokens=900, output_tokens=100))  # fmt: skip
    for _ in range(2):
        turn_record(tenant=tenant, session_id=session.pk, steps=[step])
    # A pending call's reservation shows as reserved.
    decision = budget_check_reserve(
        tenant=tenant, session_id=session.pk, estimated_tokens=500, reserve=True
    )
    assert decision.reservation is not None
    figures = next(f for f in decision.periods if f.budget.pk == day.pk)
    assert figures.period_end is not None
    return Seeded(tenant, figures.period_start, figures.period_end)


def test_the_budgets_page_shows_use_reserved_and_forecast(
    live_server, seeded: Seeded, browser: Browser, screenshots: Path
) -> None:
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    path = f"/dashboards/budgets/{seeded.tenant.pk}/"
    page.goto(f"{live_server.url}/admin/login/?next={path}")
    page.fill("#id_username", "ops")
    page.fill("#id_password", "ops-pass-123")
    page.click("input[type=submit]")
    page.wait_for_url(f"**{path}")
    expect(page.locator("h1")).to_have_text("Budgets of acme")
    rows = page.locator("#budgets tr.budget")
    expect(rows).to_have_count(3)
    page.screenshot(path=str(screenshots / "budgets.png"), full_page=True)

    daily = rows.filter(has_text="shop daily")
    expect(daily.locator("td.used")).to_have_text("50.0%")  # 2000 of 4000 tokens
    expect(daily).to_contain_text("2000 tokens")
    expect(daily.locator("td").nth(7)).to_have_text("500")  # reserved by the pending call
    # The forecast: the spend so far, on a straight line to the period's end.
    forecast = int(re.findall(r"\d+", daily.locator("td.forecast").inner_text())[0])
    now = timezone.now()
    elapsed = (now - seeded.period_start).total_seconds()
    length = (seeded.period_end - seeded.period_start).total_seconds()
    assert forecast >= 2000
    assert abs(forecast - 2000 * length / elapsed) <= 0.01 * forecast + 1

    monthly = rows.filter(has_text="maria monthly")
    expect(monthly.locator("td.used")).to_have_text("133.3%")  # an alert-only budget, past it
    assert "error" in (monthly.get_attribute("class") or "")
    assert "error" not in (daily.get_attribute("class") or "")
    lifetime = rows.filter(has_text="lifetime")
    expect(lifetime.locator("td.forecast")).to_have_text("—")  # no period: no forecast
    expect(lifetime).to_contain_text("never")

    assert squeezed_text(page) == []
    assert missing_glyphs(page) == set()
    assert errors == []
    page.close()
