"""Retry-After on a refused budget check: given when waiting can help (a period's end,
others' leases), left out when the limit does not reset by itself, which the body says."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from tests.sessions_app.helpers import assert_error, create_session, post_turn, turn_body
from tests.sessions_app.test_period_budgets import STEP, check, create_budget

pytestmark = pytest.mark.django_db
NEXT = {"estimated_tokens": 1000}


def assert_does_not_reset(response) -> None:  # type: ignore[no-untyped-def]
    error = assert_error(response, 429, "budget_exceeded")
    assert "Retry-After" not in response
    assert error["retry_after"] is None
    assert "does not reset by itself" in error["message"]


def test_a_spent_session_budget_answers_without_retry_after(api: APIClient) -> None:
    sid = create_session(api, budget_tokens=1500)["id"]
    assert_does_not_reset(check(api, sid, 1501))  # too big for what is left, ever
    post_turn(api, sid, turn_body(steps=[STEP, STEP]))
    assert_does_not_reset(check(api, sid, 1))
    answer = post_turn(api, sid, turn_body(steps=[STEP], reserve_next=NEXT)).json()
    assert answer["next_call"]["allowed"] is False
    assert answer["next_call"]["retry_after"] is None
    assert "does not reset by itself" in answer["next_call"]["reason"]


def test_a_budget_of_period_none_answers_without_retry_after(api: APIClient) -> None:
    create_budget(api, scope="tenant", user_id="", period="none", limit_tokens=1000)
    sid = create_session(api)["id"]
    post_turn(api, sid, turn_body(steps=[STEP]))
    assert_does_not_reset(check(api, sid, 1))
    answer = post_turn(api, sid, turn_body(steps=[STEP], reserve_next=NEXT)).json()
    assert answer["next_call"]["allowed"] is False
    assert answer["next_call"]["retry_after"] is None


def test_a_periodic_budget_keeps_retry_after_until_its_end(api: APIClient) -> None:
    create_budget(api, scope="tenant", user_id="", period="day", limit_tokens=1000)
    sid = create_session(api)["id"]
    post_turn(api, sid, turn_body(steps=[STEP]))
    refused = check(api, sid, 1)
    error = assert_error(refused, 429, "budget_exceeded")
    assert int(refused["Retry-After"]) == error["retry_after"] >= 1
    assert "does not reset" not in error["message"]


def test_a_session_held_by_others_reservations_keeps_a_short_retry_after(
    api: APIClient,
) -> None:
    sid = create_session(api, budget_tokens=1000)["id"]
    held = check(api, sid, 1000, reserve=True)
    assert held.status_code == 200, held.content
    refused = check(api, sid, 1)
    error = assert_error(refused, 429, "budget_exceeded")
    assert 1 <= int(refused["Retry-After"]) <= 60 and error["retry_after"] >= 1


def test_a_session_held_by_a_short_lease_answers_when_that_lease_ends(api: APIClient) -> None:
    sid = create_session(api, budget_tokens=1000)["id"]
    held = check(api, sid, 1000, reserve=True, lease_seconds=2)
    assert held.status_code == 200, held.content
    refused = check(api, sid, 1)
    error = assert_error(refused, 429, "budget_exceeded")
    assert 1 <= int(refused["Retry-After"]) <= 2
    assert error["retry_after"] == int(refused["Retry-After"])


def test_a_period_budget_held_by_short_leases_answers_when_the_first_ends(
    api: APIClient,
) -> None:
    create_budget(api, scope="tenant", user_id="", period="day", limit_tokens=1000)
    holder = create_session(api)["id"]
    assert check(api, holder, 400, reserve=True, lease_seconds=30).status_code == 200
    assert check(api, holder, 600, reserve=True, lease_seconds=2).status_code == 200
    sid = create_session(api)["id"]
    refused = check(api, sid, 1)
    error = assert_error(refused, 429, "budget_exceeded")
    assert "reserved" in error["message"]
    assert 1 <= int(refused["Retry-After"]) <= 2
    assert error["retry_after"] == int(refused["Retry-After"])
    answer = post_turn(api, sid, turn_body(steps=[], reserve_next={"estimated_tokens": 1}))
    assert answer.json()["next_call"]["allowed"] is False
    assert 1 <= answer.json()["next_call"]["retry_after"] <= 2
