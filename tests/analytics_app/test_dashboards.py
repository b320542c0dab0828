"""Dashboards and admin pages, through HTTP with the real admin session auth."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from analytics_app.services.rollups import rollups_fill
from analytics_app.services.runaway import runaway_check_session
from sessions_app.models import ChatSession, Tenant
from tests.analytics_app.factories import Step, make_session, record_turn, set_price

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff_client() -> Client:
    user = get_user_model().objects.create_superuser("ops", "ops@example.com", "pw-ops-123")
    client = Client()
    client.force_login(user)
    return client


def seed(tenant: Tenant) -> ChatSession:
    """Two days of traffic, one expensive session past its budget."""
    yesterday = timezone.now() - timedelta(days=1)
    set_price("gpt-4o", input_per_million="20", output_per_million="0")  # $0.40 a 20k call
    big = make_session(tenant, user_id="whale", agent_id="researcher", budget_usd=Decimal("1"))
    small = make_session(tenant, user_id="minnow", agent_id="shop")
    for n in range(6):
        record_turn(
            big,
            [Step(model="gpt-4o", input_tokens=20_000)],
            at=yesterday + timedelta(minutes=n),
        )
        record_turn(
            small,
            [Step(), Step(step_type="search", model="mystery", success=n % 2 == 0)],
            at=yesterday + timedelta(minutes=n),
        )
    rollups_fill()
    runaway_check_session(session_id=big.pk, now=yesterday + timedelta(minutes=7))
    return big


def test_staff_see_spend_charts_and_tables(staff_client: Client, tenant: Tenant) -> None:
    from memory_app.services.memories import MemoryDraft, memory_add

    big = seed(tenant)
    for fact in ["I live in Lisbon", "My budget is 1500 euros", "I prefer matte screens"]:
        memory_add(tenant=tenant, draft=MemoryDraft(user_id="whale", type="fact", content=fact))
    response = staff_client.get(reverse("dashboard-spend"))
    assert response.status_code == 200
    html = response.content.decode()
    assert html.count("<svg") >= 6
    assert "gpt-4o" in html and "researcher" in html and "whale" in html
    assert "2.4000" in html  # six turns at $0.40 (rollup totals and the top session)
    assert str(big.pk)[:8] in html and "budget_exceeded" in html
    assert "not available" not in html
    memory_rows = html.split('id="memory"')[1].split("</section>")[0]
    today = timezone.now().date().isoformat()
    assert f'<td>{today}</td><td class="num">3</td>' in memory_rows


def test_tenant_filter_and_date_range_narrow_the_numbers(
    staff_client: Client, tenant: Tenant, other_tenant: Tenant
) -> None:
    seed(tenant)
    url = reverse("dashboard-spend")
    other = staff_client.get(url, {"tenant": other_tenant.pk}).content.decode()
    assert "gpt-4o" not in other and "No spend in this range." in other
    old = (timezone.now() - timedelta(days=30)).date()
    past = staff_client.get(url, {"start": old, "end": old}).content.decode()
    assert "No spend in this range." in past
    # A one-day range switches to hourly buckets.
    day = (timezone.now() - timedelta(days=1)).date()
    assert "hourly buckets" in staff_client.get(url, {"start": day, "end": day}).content.decode()


def test_non_staff_are_refused_and_anonymous_sent_to_login(tenant: Tenant) -> None:
    url = reverse("dashboard-spend")
    anonymous = Client().get(url)
    assert anonymous.status_code == 302 and reverse("admin:login") in anonymous["Location"]
    user = get_user_model().objects.create_user("agent-dev", password="pw-dev-123")
    client = Client()
    client.force_login(user)
    assert client.get(url).status_code == 403


def test_every_admin_list_and_change_page_renders(staff_client: Client, tenant: Tenant) -> None:
    big = seed(tenant)
    turn = big.turns.first()
    step = turn.steps.first()
    for name in [
        "sessions_app_chatsession",
        "sessions_app_chatturn",
        "sessions_app_turnstep",
        "sessions_app_sessioncomponent",
        "sessions_app_sessionselection",
        "sessions_app_idempotencyrecord",
        "sessions_app_tenant",
        "sessions_app_apikey",
        "analytics_app_spendrollup",
        "analytics_app_userspendrollup",
        "analytics_app_rollupfillstate",
        "analytics_app_runawayalert",
    ]:
        assert staff_client.get(reverse(f"admin:{name}_changelist")).status_code == 200, name
    session_page = staff_client.get(reverse("admin:sessions_app_chatsession_change", args=[big.pk]))
    assert session_page.status_code == 200
    assert "budget_exceeded" in session_page.content.decode()
    assert (
        staff_client.get(reverse("admin:sessions_app_chatturn_change", args=[turn.pk])).status_code
        == 200
    )
    assert (
        staff_client.get(reverse("admin:sessions_app_turnstep_change", args=[step.pk])).status_code
        == 200
    )
    # A pasted session id finds its steps through the indexed column.
    steps = staff_client.get(reverse("admin:sessions_app_turnstep_changelist"), {"q": str(big.pk)})
    assert steps.content.decode().count(f"turn {turn.pk}") == 1


def test_admin_actions_call_the_services(staff_client: Client, tenant: Tenant) -> None:
    big = seed(tenant)
    url = reverse("admin:sessions_app_chatsession_changelist")
    staff_client.post(url, {"action": "block", "_selected_action": [big.pk]})
    big.refresh_from_db()
    assert big.runaway_blocked
    staff_client.post(url, {"action": "clear_runaway", "_selected_action": [big.pk]})
    big.refresh_from_db()
    assert big.runaway_at is None and not big.runaway_blocked
    staff_client.post(url, {"action": "archive", "_selected_action": [big.pk]})
    big.refresh_from_db()
    assert big.status == "archived"


def test_editing_a_budget_in_the_admin_goes_through_the_service(
    staff_client: Client, tenant: Tenant
) -> None:
    session = make_session(tenant)
    url = reverse("admin:sessions_app_chatsession_change", args=[session.pk])
    response = staff_client.post(
        url,
        {
            "budget_tokens": "5000",
            "budget_usd": "",
            "metadata": "{}",
            "turns-TOTAL_FORMS": "0",
            "turns-INITIAL_FORMS": "0",
            "components-TOTAL_FORMS": "0",
            "components-INITIAL_FORMS": "0",
            "selections-TOTAL_FORMS": "0",
            "selections-INITIAL_FORMS": "0",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    session.refresh_from_db()
    assert session.budget_tokens == 5000


def _kpi(html: str, label: str) -> str:
    """The number shown in the KPI box with this label."""
    totals = html.split('id="totals"')[1].split("</section>")[0]
    box = next(part for part in totals.split('<div class="kpi">') if f"</strong>{label}" in part)
    return box.split("<strong>")[1].split("</strong>")[0]


def test_dashboard_is_exact_before_the_first_fill_and_between_fills(
    staff_client: Client, tenant: Tenant
) -> None:
    """Right after `make run` no fill has run: the totals, charts, breakdowns and top
    users must already show the spend the session table shows, and after a fill, the
    steps recorded since are added to the rollups, never counted twice."""
    set_price("claude-x", input_per_million="200", output_per_million="500")  # $0.25 a turn
    session = make_session(tenant, user_id="early-bird", agent_id="planner")
    now = timezone.now()
    for n in range(3):
        record_turn(
            session,
            [Step(model="claude-x", input_tokens=1000, output_tokens=100)],
            at=now - timedelta(minutes=10 - n),
        )  # fmt: skip
    url = reverse("dashboard-spend")
    html = staff_client.get(url).content.decode()
    assert _kpi(html, "spend") == "$0.7500" and _kpi(html, "tokens") == "3300"
    assert _kpi(html, "LLM calls") == "3"
    assert "claude-x" in html and "planner" in html and "early-bird" in html
    assert "No spend in this range." not in html
    assert "no fill yet" in html

    rollups_fill()  # counts the three turns; the next one stays in the live tail
    assert "no fill yet" not in staff_client.get(url).content.decode()
    record_turn(
        session,
        [Step(model="claude-x", input_tokens=1000, output_tokens=100)],
        at=now,
    )
    html = staff_client.get(url).content.decode()
    assert _kpi(html, "spend") == "$1.0000" and _kpi(html, "tokens") == "4400"
    assert _kpi(html, "LLM calls") == "4"
    users = html.split('id="top-users"')[1].split("</table>")[0]
    assert "early-bird" in users and "1.0000" in users, users


def test_admin_says_engram_uses_real_plurals_and_links_the_dashboards(
    staff_client: Client,
) -> None:
    html = staff_client.get(reverse("admin:index")).content.decode()
    assert '<a href="/admin/">Engram</a>' in html and "<title>Operations | Engram admin" in html
    for plural in ("Memories", "Context summaries", "API keys", "Outbox messages"):
        assert f">{plural}</a>" in html, plural
    for wrong in ("Memorys", "summarys", "Api keys"):
        assert wrong not in html
    dashboards = html.split('id="engram-dashboards"')[1].split("</div>")[0]
    assert f'href="{reverse("dashboard-spend")}"' in dashboards
    assert (
        staff_client.get(reverse("admin:sessions_app_outboxmessage_changelist")).status_code == 200
    )


def test_spend_page_lists_an_erased_users_spend_without_naming_them(
    staff_client: Client, tenant: Tenant
) -> None:
    from sessions_app.services.erasure import user_erase

    seed(tenant)
    user_erase(tenant=tenant, user_id="whale")
    response = staff_client.get(reverse("dashboard-spend"))
    assert response.status_code == 200
    top_users = response.content.decode().split('id="top-users"')[1].split("</table>")[0]
    assert "whale" not in top_users and "minnow" in top_users
    assert "<td>(erased users)</td>" in top_users and "2.4000" in top_users
