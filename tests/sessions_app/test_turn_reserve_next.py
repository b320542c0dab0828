"""A turn that reserves the budget for the next call (`reserve_next`): the agent under
budgets makes one round trip per turn. The turn spends the reservation it held and the
answer carries the next one; at the limit the next call is refused, with when to ask
again, and the turn is stored all the same."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest
from rest_framework.test import APIClient

from sessions_app.api.serializers_next_call import NextCallResultSerializer
from sessions_app.api.views_turns import next_call_data
from sessions_app.models import BudgetReservation, ChatTurn
from sessions_app.services.budget_refusals import budget_retry_after
from sessions_app.services.budgets import budget_check_reserve
from sessions_app.services.sessions import session_create
from sessions_app.services.spend_budgets import spend_budget_create
from tests.sessions_app.helpers import assert_error, create_session, post_turn, turn_body

STEP = {"step_type": "response", "model": "gpt-4o-mini", "input_tokens": 900,
        "output_tokens": 100}  # fmt: skip
NEXT = {"estimated_tokens": 1000, "model": "gpt-4o-mini"}


def daily_user_budget(api: APIClient, limit_tokens: int) -> dict[str, Any]:
    body = {"scope": "user", "user_id": "u1", "period": "day", "limit_tokens": limit_tokens}
    made = api.post("/api/v1/budgets", body, format="json")
    assert made.status_code == 201, made.content
    return made.json()  # type: ignore[no-any-return]


@pytest.mark.django_db
def test_each_turn_spends_its_reservation_and_reserves_the_next_call(api: APIClient) -> None:
    budget = daily_user_budget(api, limit_tokens=3000)
    sid = create_session(api)["id"]
    first = api.post(
        f"/api/v1/sessions/{sid}/budget/check", {**NEXT, "reserve": True}, format="json"
    )
    assert first.status_code == 200, first.content
    held = first.json()["reservation"]["id"]
    seen = []
    for _ in range(2):
        answer = post_turn(api, sid, turn_body(steps=[STEP], reserve_next=NEXT))
        assert answer.status_code == 201, answer.content
        nxt = answer.json()["next_call"]
        assert nxt["allowed"] is True and nxt["retry_after"] is None and nxt["reason"] == ""
        assert nxt["reservation"]["tokens"] == 1000
        # The turn spent the reservation it held; the one left is the next call's.
        live = list(BudgetReservation.objects.values_list("id", "budget_ids"))
        assert [(str(pk), [str(b) for b in ids]) for pk, ids in live] == [
            (nxt["reservation"]["id"], [budget["id"]])
        ]
        assert nxt["reservation"]["id"] != held
        held = nxt["reservation"]["id"]
        seen.append(held)
    # 2000 spent, 1000 held by the reservation: a third turn fills the budget, so the
    # call after it is refused, and the turn is stored all the same.
    answer = post_turn(api, sid, turn_body(steps=[STEP], reserve_next=NEXT))
    assert answer.status_code == 201, answer.content
    nxt = answer.json()["next_call"]
    assert nxt["allowed"] is False and nxt["reservation"] is None
    assert "spent" in nxt["reason"] and nxt["retry_after"] >= 1
    assert not BudgetReservation.objects.exists()
    assert ChatTurn.objects.filter(session_id=sid).count() == 3
    assert len(set(seen)) == 2


@pytest.mark.django_db
def test_without_reserve_next_the_answer_has_no_next_call(api: APIClient) -> None:
    daily_user_budget(api, limit_tokens=3000)
    sid = create_session(api)["id"]
    answer = post_turn(api, sid, turn_body(steps=[STEP]))
    assert answer.status_code == 201 and "next_call" not in answer.json()
    assert not BudgetReservation.objects.exists()


@pytest.mark.django_db
def test_a_replayed_turn_reserves_afresh_and_is_not_counted_twice(api: APIClient) -> None:
    daily_user_budget(api, limit_tokens=10_000)
    sid = create_session(api)["id"]
    first = post_turn(api, sid, turn_body(steps=[STEP], reserve_next=NEXT), key="k-1")
    # A retry may change its estimate: the turn is the same turn.
    again = post_turn(
        api, sid, turn_body(steps=[STEP], reserve_next={**NEXT, "estimated_tokens": 500}), "k-1"
    )
    assert (first.status_code, again.status_code) == (201, 201), again.content
    assert again["Idempotent-Replayed"] == "true"
    assert again.json()["turn"] == first.json()["turn"]
    assert again.json()["next_call"]["reservation"]["tokens"] == 500
    assert ChatTurn.objects.filter(session_id=sid).count() == 1
    spent = api.get("/api/v1/budgets").json()["results"][0]["current"]["spent_tokens"]
    assert spent == 1000


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("reserve_next", "field"),
    [
        ({"estimated_tokens": -1}, "estimated_tokens"),
        ({}, "estimated_tokens"),
        ({**NEXT, "lease_seconds": 0}, "lease_seconds"),
        ({**NEXT, "estimated_cost_usd": "-1"}, "estimated_cost_usd"),
        ("1000", "reserve_next"),
    ],
)
def test_a_bad_reserve_next_is_refused_naming_the_field_and_nothing_is_stored(
    api: APIClient, reserve_next: Any, field: str
) -> None:
    sid = create_session(api)["id"]
    error = assert_error(
        post_turn(api, sid, turn_body(steps=[STEP], reserve_next=reserve_next)), 400, "invalid"
    )
    assert any(field in name for name in error["fields"]), error
    assert not ChatTurn.objects.exists() and not BudgetReservation.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize("usd", [None, "0.004200"])
def test_next_call_is_rendered_as_its_serializer_renders_it(tenant: Any, usd: Any) -> None:
    """`next_call_data` (the planned rendering) against DRF's own, allowed and refused."""
    spend_budget_create(tenant=tenant, scope="tenant", period="day", limit_tokens=1500)
    sid = session_create(tenant=tenant, user_id="u1", agent_id="a").pk
    estimate = None if usd is None else Decimal(usd)
    for _ in range(2):  # the second is refused: the first holds 1000 of the 1500
        decision = budget_check_reserve(
            tenant=tenant, session_id=sid, estimated_tokens=1000, estimated_usd=estimate,
            reserve=True,
        )  # fmt: skip
        drf = NextCallResultSerializer(
            {"allowed": decision.check.allowed, "reason": decision.check.reason,
             "retry_after": budget_retry_after(decision),
             "tokens_remaining_after": decision.check.tokens_remaining_after,
             "reservation": decision.reservation}
        ).data  # fmt: skip
        assert json.dumps(next_call_data(decision)) == json.dumps(drf)
    assert drf["allowed"] is False and drf["retry_after"] >= 1
