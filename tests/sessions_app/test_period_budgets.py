"""Period budgets: the API, what counts against them, refusals, and period rollover in
the budget's own time zone."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.db.models import Sum
from rest_framework.test import APIClient

from sessions_app.models import BudgetSpend, SpendBudget, Tenant
from sessions_app.services.budgets import budget_check_reserve
from sessions_app.services.sessions import session_create
from sessions_app.services.turn_recording import turn_record
from sessions_app.services.turn_totals import StepInput
from sessions_app.usage import TokenCounts
from tests.sessions_app.helpers import (
    assert_error,
    create_session,
    expected_cost,
    post_turn,
    turn_body,
)

STEP = {"step_type": "response", "model": "gpt-4o-mini", "input_tokens": 900,
        "output_tokens": 100}  # fmt: skip


def create_budget(api: APIClient, **fields: Any) -> dict[str, Any]:
    body = {"scope": "user", "user_id": "u1", "period": "day", "limit_tokens": 5000, **fields}
    response = api.post("/api/v1/budgets", body, format="json")
    assert response.status_code == 201, response.content
    return response.json()  # type: ignore[no-any-return]


def check(api: APIClient, sid: str, tokens: int = 1000, **extra: Any) -> Any:
    return api.post(
        f"/api/v1/sessions/{sid}/budget/check",
        {"estimated_tokens": tokens, **extra},
        format="json",
    )


@pytest.mark.django_db
def test_budgets_are_managed_through_the_api_and_scoped_to_the_tenant(
    api: APIClient, other_api: APIClient
) -> None:
    made = create_budget(api, name="u1 daily", time_zone="Europe/Paris", limit_usd="2.5")
    assert made["scope"] == "user" and made["user_id"] == "u1"
    assert made["limit_tokens"] == 5000 and made["limit_usd"] == "2.500000"
    assert made["action"] == "refuse" and made["alert_thresholds"] == [50, 80, 100]
    current = made["current"]
    assert current["spent_tokens"] == 0 and current["spent_usd"] == "0.000000"
    start = datetime.fromisoformat(current["period_start"])
    end = datetime.fromisoformat(current["period_end"])
    assert start.astimezone(UTC).hour in (22, 23)  # Paris midnight, winter or summer
    assert timedelta(hours=23) <= end - start <= timedelta(hours=25)

    listed = api.get("/api/v1/budgets").json()["results"]
    assert [b["id"] for b in listed] == [made["id"]]
    assert other_api.get("/api/v1/budgets").json()["results"] == []
    assert_error(other_api.get(f"/api/v1/budgets/{made['id']}"), 404, "not_found")
    assert_error(other_api.delete(f"/api/v1/budgets/{made['id']}"), 404, "not_found")

    patched = api.patch(
        f"/api/v1/budgets/{made['id']}", {"limit_tokens": 7000, "action": "alert"}, format="json"
    )
    assert patched.status_code == 200, patched.content
    assert patched.json()["limit_tokens"] == 7000 and patched.json()["action"] == "alert"
    assert api.delete(f"/api/v1/budgets/{made['id']}").status_code == 204
    assert_error(api.get(f"/api/v1/budgets/{made['id']}"), 404, "not_found")
    assert_error(api.get("/api/v1/budgets/not-a-uuid"), 404, "not_found")


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"scope": "team"}, "scope"),
        ({"period": "fortnight"}, "period"),
        ({"limit_tokens": -1}, "limit_tokens"),
        ({"limit_usd": "-0.01"}, "limit_usd"),
        ({"time_zone": "Mars/Olympus_Mons"}, "time_zone"),
        ({"time_zone": ""}, "time_zone"),
        ({"limit_tokens": None}, "limit_tokens"),  # no limit at all
        ({"user_id": ""}, "user_id"),  # the user scope names its user
        ({"model": "gpt-4o"}, "model"),  # ... and nothing else
        ({"scope": "user_agent"}, "agent_id"),
        ({"action": "shout"}, "action"),
        ({"alert_thresholds": [0, 50]}, "alert_thresholds"),
        ({"alert_thresholds": "50"}, "alert_thresholds"),
    ],
)
def test_a_bad_budget_is_refused_naming_the_field(
    api: APIClient, fields: dict[str, Any], field: str
) -> None:
    body = {"scope": "user", "user_id": "u1", "period": "day", "limit_tokens": 5000, **fields}
    error = assert_error(api.post("/api/v1/budgets", body, format="json"), 400, "invalid")
    assert any(name.split(".")[0] == field for name in error["fields"]), error
    assert not SpendBudget.objects.exists()


@pytest.mark.django_db
def test_a_bad_patch_changes_nothing(api: APIClient) -> None:
    made = create_budget(api)
    url = f"/api/v1/budgets/{made['id']}"
    error = assert_error(
        api.patch(url, {"time_zone": "Nowhere/Land", "limit_tokens": 1}, format="json"),
        400,
        "invalid",
    )
    assert list(error["fields"]) == ["time_zone"]
    assert_error(api.patch(url, {"scope": "tenant"}, format="json"), 400, "invalid")  # user_id set
    budget = SpendBudget.objects.get()
    assert (budget.time_zone, budget.limit_tokens, budget.scope) == ("UTC", 5000, "user")


@pytest.mark.django_db
def test_every_scope_counts_the_steps_that_fall_under_it(api: APIClient) -> None:
    by_name = {
        "tenant": create_budget(api, scope="tenant", user_id=""),
        "user": create_budget(api),
        "agent": create_budget(api, scope="agent", user_id="", agent_id="shop-assistant"),
        "model": create_budget(api, scope="model", user_id="", model="GPT-4o-mini"),
        "user_agent": create_budget(api, scope="user_agent", agent_id="shop-assistant"),
        "other_user": create_budget(api, user_id="u2"),
        "other_model": create_budget(api, scope="model", user_id="", model="gpt-4o"),
    }
    sid = create_session(api)["id"]
    other = create_session(api, user_id="u2", agent_id="helper")["id"]
    tool = {"step_type": "tool", "input_tokens": 0, "output_tokens": 0}
    assert post_turn(api, sid, turn_body(steps=[STEP, STEP, tool])).status_code == 201
    assert post_turn(api, other, turn_body(steps=[STEP])).status_code == 201
    # A turn recorded without any check counts all the same.
    spent = {
        name: api.get(f"/api/v1/budgets/{made['id']}").json()["current"]["spent_tokens"]
        for name, made in by_name.items()
    }
    assert spent == {
        "tenant": 3000,
        "user": 2000,
        "agent": 2000,
        "model": 3000,
        "user_agent": 2000,
        "other_user": 1000,
        "other_model": 0,
    }
    tenant_budget = api.get(f"/api/v1/budgets/{by_name['tenant']['id']}").json()
    usd = Decimal(tenant_budget["current"]["spent_usd"])
    one_step = expected_cost([STEP])
    assert usd > 0 and usd == (one_step * 3).quantize(Decimal("0.000001"))


@pytest.mark.django_db
def test_the_check_refuses_at_the_limit_until_the_period_ends(api: APIClient) -> None:
    made = create_budget(api, limit_tokens=2000, time_zone="Asia/Tokyo")
    alert_only = create_budget(api, limit_tokens=1000, action="alert")
    sid = create_session(api)["id"]
    ok = check(api, sid, 2000)
    assert ok.status_code == 200, ok.content
    ids = [b["id"] for b in ok.json()["budgets"]]
    assert sorted(ids) == sorted([made["id"], alert_only["id"]])
    for _ in range(2):
        assert post_turn(api, sid, turn_body(steps=[STEP])).status_code == 201
    refused = check(api, sid, 1)
    error = assert_error(refused, 429, "budget_exceeded")
    assert error["budget_id"] == made["id"] and "spent" in error["message"]
    end = datetime.fromisoformat(made["current"]["period_end"])
    retry = int(refused["Retry-After"])
    assert abs((datetime.now(UTC) + timedelta(seconds=retry)) - end) < timedelta(seconds=5)
    # A turn past the budget is still stored: nothing is dropped.
    assert post_turn(api, sid, turn_body(steps=[STEP])).status_code == 201
    spent = BudgetSpend.objects.filter(budget_id=made["id"]).aggregate(tokens=Sum("tokens"))
    assert spent["tokens"] == 3000
    # An alert-only budget never refuses; a new session of another user is not limited.
    api.delete(f"/api/v1/budgets/{made['id']}")
    assert check(api, sid, 10_000).status_code == 200
    free = create_session(api, user_id="u2")["id"]
    assert check(api, free, 10_000).status_code == 200


@pytest.mark.django_db
def test_a_model_budget_applies_to_the_model_named_in_the_check(api: APIClient) -> None:
    create_budget(api, scope="model", user_id="", model="gpt-4o-mini", limit_tokens=500)
    sid = create_session(api)["id"]
    assert check(api, sid, 1000, model="gpt-4o").status_code == 200
    assert_error(check(api, sid, 1000, model="GPT-4o-mini"), 429, "budget_exceeded")
    # Without a model in the check, the session's latest step's model applies.
    post_turn(api, sid, turn_body(steps=[{**STEP, "input_tokens": 1, "output_tokens": 1}]))
    assert_error(check(api, sid, 1000), 429, "budget_exceeded")


@pytest.mark.django_db
def test_a_usd_budget_reserves_a_priced_estimate_when_none_is_sent(api: APIClient) -> None:
    """Every token priced as output: a reservation never holds less than a call costs."""
    create_budget(api, limit_tokens=None, limit_usd="0.001")  # gpt-4o-mini: $0.60/M output
    sid = create_session(api)["id"]
    first = check(api, sid, 1000, reserve=True, model="gpt-4o-mini")
    assert first.status_code == 200, first.content
    assert first.json()["reservation"]["cost_usd"] == "0.000600"
    assert_error(check(api, sid, 1000, reserve=True, model="gpt-4o-mini"), 429, "budget_exceeded")


def _spend_at(tenant: Tenant, sid: Any, at: datetime, tokens: int = 1000) -> None:
    step = StepInput(
        step_type="response",
        model="gpt-4o-mini",
        counts=TokenCounts(input_tokens=tokens - 100, output_tokens=100),
    )
    turn_record(tenant=tenant, session_id=sid, steps=[step], now=at)


def _figures(tenant: Tenant, sid: Any, at: datetime) -> Any:
    decision = budget_check_reserve(tenant=tenant, session_id=sid, estimated_tokens=0, now=at)
    (figures,) = decision.periods
    return figures


def _local(zone: str, *args: int) -> datetime:
    from zoneinfo import ZoneInfo

    return datetime(*args, tzinfo=ZoneInfo(zone))  # type: ignore[misc]


@pytest.mark.django_db
def test_a_month_of_31_days_rolls_over_at_local_midnight(api: APIClient, tenant: Tenant) -> None:
    zone = "America/Los_Angeles"
    create_budget(api, period="month", time_zone=zone, limit_tokens=10**6)
    session = session_create(tenant=tenant, user_id="u1", agent_id="a", ttl_seconds=3600 * 24 * 90)
    _spend_at(tenant, session.pk, _local(zone, 2027, 1, 1, 0, 0, 0))  # first instant
    _spend_at(tenant, session.pk, _local(zone, 2027, 1, 31, 23, 59, 59))  # last second
    january = _figures(tenant, session.pk, _local(zone, 2027, 1, 31, 23, 59, 59))
    assert january.spent_tokens == 2000
    assert january.period_start == _local(zone, 2027, 1, 1)
    assert january.period_end == _local(zone, 2027, 2, 1)
    assert january.period_end - january.period_start == timedelta(days=31)
    # 08:00 UTC on 1 February is midnight in Los Angeles: a new, empty period.
    february = _figures(tenant, session.pk, datetime(2027, 2, 1, 8, 0, 0, tzinfo=UTC))
    assert february.spent_tokens == 0 and february.period_end == _local(zone, 2027, 3, 1)
    still_january = _figures(tenant, session.pk, datetime(2027, 2, 1, 7, 59, 59, tzinfo=UTC))
    assert still_january.spent_tokens == 2000


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("day", "hours"),
    [((2027, 3, 14), 23), ((2027, 11, 7), 25), ((2027, 6, 1), 24)],  # New York's DST changes
)
def test_a_day_across_a_dst_change_lasts_its_local_length(
    api: APIClient, tenant: Tenant, day: tuple[int, int, int], hours: int
) -> None:
    zone = "America/New_York"
    create_budget(api, time_zone=zone, limit_tokens=10**6)
    session = session_create(tenant=tenant, user_id="u1", agent_id="a", ttl_seconds=3600 * 24 * 900)
    midnight = _local(zone, *day).astimezone(UTC)  # arithmetic below in real hours
    _spend_at(tenant, session.pk, midnight + timedelta(hours=hours) - timedelta(seconds=1))
    figures = _figures(tenant, session.pk, midnight + timedelta(hours=hours - 1))
    assert figures.period_start == midnight
    assert figures.period_end - figures.period_start == timedelta(hours=hours)
    assert figures.spent_tokens == 1000
    after = _figures(tenant, session.pk, midnight + timedelta(hours=hours))
    assert after.spent_tokens == 0 and after.period_start == figures.period_end


@pytest.mark.django_db
def test_a_week_starts_on_monday_and_a_lifetime_budget_never_rolls(
    api: APIClient, tenant: Tenant
) -> None:
    zone = "Europe/Berlin"
    week = create_budget(api, period="week", time_zone=zone, limit_tokens=10**6)
    SpendBudget.objects.filter(pk=week["id"]).delete()
    create_budget(api, period="week", time_zone=zone, limit_tokens=10**6)
    session = session_create(tenant=tenant, user_id="u1", agent_id="a", ttl_seconds=3600 * 24 * 900)
    sunday_night = _local(zone, 2027, 3, 28, 23, 0)  # also Berlin's DST change
    _spend_at(tenant, session.pk, sunday_night)
    figures = _figures(tenant, session.pk, sunday_night)
    assert figures.period_start == _local(zone, 2027, 3, 22)
    assert figures.period_end == _local(zone, 2027, 3, 29)
    assert figures.spent_tokens == 1000
    assert _figures(tenant, session.pk, _local(zone, 2027, 3, 29)).spent_tokens == 0
    SpendBudget.objects.all().delete()
    create_budget(api, period="none", limit_tokens=10**6)
    _spend_at(tenant, session.pk, _local(zone, 2027, 1, 1))
    _spend_at(tenant, session.pk, _local(zone, 2029, 1, 1))
    lifetime = _figures(tenant, session.pk, _local(zone, 2030, 1, 1))
    assert lifetime.spent_tokens == 2000 and lifetime.period_end is None


@pytest.mark.django_db
def test_the_batch_route_counts_against_period_budgets_too(api: APIClient) -> None:
    made = create_budget(api, scope="tenant", user_id="")
    first = create_session(api)["id"]
    second = create_session(api, user_id="u2")["id"]
    items = [{"session_id": sid, "steps": [STEP]} for sid in (first, second, first)]
    response = api.post("/api/v1/turns/batch", {"turns": items}, format="json")
    assert response.status_code == 200, response.content
    assert [r["status"] for r in response.json()["results"]] == [201, 201, 201]
    current = api.get(f"/api/v1/budgets/{made['id']}").json()["current"]
    assert current["spent_tokens"] == 3000


@pytest.mark.django_db
def test_the_schema_documents_every_budget_field() -> None:
    from django.test import Client

    schema = Client().get("/api/schema/", HTTP_ACCEPT="application/json").json()
    paths = schema["paths"]
    assert {"get", "post"} <= set(paths["/api/v1/budgets"])
    assert {"get", "patch", "delete"} <= set(paths["/api/v1/budgets/{budget_id}"])
    assert "400" in paths["/api/v1/budgets"]["post"]["responses"]
    assert "404" in paths["/api/v1/budgets/{budget_id}"]["patch"]["responses"]
    components = schema["components"]["schemas"]
    for name in ("SpendBudgetWriteRequest", "SpendBudget", "BudgetPeriod", "BudgetFigures"):
        for field, spec in components[name]["properties"].items():
            described = spec.get("description") or any(
                "description" in part for part in spec.get("allOf", [])
            )
            assert described, f"{name}.{field} has no help_text"
    check = components["BudgetCheckRequest"]["properties"]
    assert "model" in check
    assert "budgets" in components["BudgetCheckResult"]["properties"]
    assert "get" in paths["/api/v1/usage/reconciliation"]
    assert "post" in paths["/api/v1/usage/imports"]
