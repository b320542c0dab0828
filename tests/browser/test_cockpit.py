"""The operators' cockpit in a real headless Chromium: staff log in through the admin and
see the spend dashboard's charts and tables; others are refused."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.test import Client
from django.utils import timezone
from playwright.sync_api import Browser

from analytics_app.services.rollups import rollups_fill
from analytics_app.services.runaway import runaway_check_session
from sessions_app.services.api_keys import tenant_get_or_create
from tests.analytics_app.factories import (
    Step,
    make_session,
    record_turn,
    set_price,
    without_memory_reactions,
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@dataclass(frozen=True)
class Seeded:
    runaway_id: str
    non_staff_session_cookie: str


@pytest.fixture
def seeded(live_server) -> Seeded:
    """Everything the database must hold, written before Playwright starts its event loop
    (inside it, Django refuses ORM calls)."""
    runaway_id = seed_spend()
    client = Client()
    assert client.login(username="dev", password="dev-pass-123")
    return Seeded(runaway_id, client.cookies[settings.SESSION_COOKIE_NAME].value)


def seed_spend() -> str:
    """A day of traffic from two agents, one of them past its budget (runaway)."""
    tenant = tenant_get_or_create(name="acme")
    at = timezone.now() - timedelta(days=1)
    # The loop's tool call is made expensive: 7,000 in + 20 out tokens cost $0.50.
    set_price("claude-sonnet-4", input_per_million="70", output_per_million="500")
    # The calm agent's responder is priced like gpt-4o-mini: each of its steps $0.0000345.
    set_price("gpt-4o", input_per_million="0.15", output_per_million="0.60")
    loop = make_session(tenant, user_id="night-owl", agent_id="shop", budget_usd=Decimal("2"))
    calm = make_session(tenant, user_id="day-user", agent_id="support")
    with without_memory_reactions():  # a spend page: memory_app's reactions play no part
        for n in range(8):
            record_turn(
                loop,
                [
                    Step(
                        step_type="tool_call",
                        model="claude-sonnet-4",
                        input_tokens=7000,
                    )
                ],
                at=at + timedelta(minutes=n),
            )
            record_turn(
                calm,
                [Step(), Step(step_type="response", model="gpt-4o")],
                at=at + timedelta(minutes=n),
            )
    rollups_fill()
    runaway_check_session(session_id=loop.pk, now=at + timedelta(minutes=9))
    user_model = get_user_model()
    user_model.objects.create_user("ops", password="ops-pass-123", is_staff=True, is_superuser=True)
    user_model.objects.create_user("dev", password="dev-pass-123")
    return str(loop.pk)


def test_staff_log_in_through_the_admin_and_see_charts_and_tables(
    live_server, seeded: Seeded, browser: Browser
) -> None:
    runaway_id = seeded.runaway_id
    page = browser.new_page()
    page.goto(f"{live_server.url}/admin/login/?next=/dashboards/spend/")
    page.fill("#id_username", "ops")
    page.fill("#id_password", "ops-pass-123")
    page.click("input[type=submit]")
    page.wait_for_url("**/dashboards/spend/")

    assert page.locator("h1").inner_text() == "Spend"
    assert page.locator("#over-time svg.chart rect").count() > 0
    assert page.locator("svg.chart").count() >= 6
    over_time = page.locator("#over-time table tbody tr")
    assert over_time.count() >= 1 and "No spend" not in over_time.first.inner_text()
    models = page.locator(".breakdown table").first.inner_text()
    assert "claude-sonnet-4" in models and "gpt-4o" in models
    assert "night-owl" in page.locator("#top-users").inner_text()
    runaway = page.locator("#runaway").inner_text()
    assert runaway_id[:8] in runaway and "budget_exceeded" in runaway
    # Eight turns at $0.50: the session's total, and the page's total with the calm one.
    assert "4.0000" in page.locator("#top-sessions").inner_text()
    assert "$4.0006" in page.locator("#totals").inner_text()

    # The runaway row links to the session in the admin.
    page.click(f"#runaway a:has-text('{runaway_id[:8]}')")
    page.wait_for_url(f"**/admin/sessions_app/chatsession/{runaway_id}/change/")
    assert "budget_exceeded" in page.content()


def test_non_staff_are_refused(live_server, seeded: Seeded, browser: Browser) -> None:
    page = browser.new_page()
    # The admin login refuses an account without staff status…
    page.goto(f"{live_server.url}/admin/login/?next=/dashboards/spend/")
    page.fill("#id_username", "dev")
    page.fill("#id_password", "dev-pass-123")
    page.click("input[type=submit]")
    assert "staff account" in page.locator(".errornote").inner_text()
    # …an anonymous visit is sent to that login…
    page.goto(f"{live_server.url}/dashboards/spend/")
    assert "/admin/login/" in page.url and page.locator("svg.chart").count() == 0
    # …and a logged-in non-staff user gets 403.
    context = browser.new_context()
    context.add_cookies(
        [
            {
                "name": settings.SESSION_COOKIE_NAME,
                "value": seeded.non_staff_session_cookie,
                "url": live_server.url,
            }
        ]
    )
    refused = context.new_page()
    response = refused.goto(f"{live_server.url}/dashboards/spend/")
    assert response is not None and response.status == 403
    assert refused.locator("svg.chart").count() == 0
    context.close()
