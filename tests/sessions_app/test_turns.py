"""Recording turns through HTTP: seed 000's token example, the turn log, rollback,
lifecycle and deletion."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.test import APIClient

from sessions_app.models import ChatSession, ChatTurn, SessionComponent, TurnStep
from tests.sessions_app.helpers import (
    SEED_STEPS,
    assert_error,
    create_session,
    expected_cost,
    post_turn,
    turn_body,
)

pytestmark = pytest.mark.django_db
MICRO = Decimal("0.000001")


def test_seed_000_turn_and_session_totals(api: APIClient) -> None:
    """150/20 + 300/50 + 800/200 → turn 1,250 / 270; eight turns → 10,000 / 2,160."""
    session = create_session(api)
    turn_cost = expected_cost(SEED_STEPS)
    assert turn_cost > 0
    for number in range(1, 9):
        response = post_turn(api, session["id"])
        assert response.status_code == 201, response.content
        body = response.json()
        turn = body["turn"]
        assert turn["turn_number"] == number
        assert (turn["input_tokens"], turn["output_tokens"]) == (1250, 270)
        assert turn["call_count"] == 3
        assert turn["duration_ms"] == 850
        assert Decimal(turn["cost_usd"]) == turn_cost.quantize(MICRO)
        assert [s["model"] for s in turn["steps"]] == [s["model"] for s in SEED_STEPS]
        assert [s["input_tokens"] for s in turn["steps"]] == [150, 300, 800]
        assert all(s["price_missing"] is False for s in turn["steps"])
    totals = body["totals"]
    assert (totals["input_tokens"], totals["output_tokens"]) == (10_000, 2_160)
    assert totals["calls"] == 24 and totals["turns"] == 8
    assert totals["duration_ms"] == 6_800
    assert Decimal(totals["cost_usd"]) == (turn_cost * 8).quantize(MICRO)
    assert body["budget"]["exceeded"] is False and body["warnings"] == []
    # The rows agree with the response, to the stored precision.
    stored = ChatSession.objects.get(pk=session["id"])
    assert stored.total_input_tokens == 10_000 and stored.total_output_tokens == 2_160
    assert abs(stored.total_cost_usd - turn_cost * 8) < Decimal("1e-9")
    assert stored.status == "active"
    assert TurnStep.objects.filter(session_id=session["id"]).count() == 24


def test_unknown_model_is_stored_unpriced_not_an_error(api: APIClient) -> None:
    session = create_session(api)
    steps = [
        {**SEED_STEPS[0]},
        {"step_type": "local", "model": "my-private-llm-7b", "input_tokens": 10,
         "output_tokens": 5},
    ]  # fmt: skip
    response = post_turn(api, session["id"], turn_body(steps))
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["turn"]["unpriced_calls"] == 1
    assert body["turn"]["steps"][1]["cost_usd"] is None
    assert body["turn"]["steps"][1]["price_missing"] is True
    assert Decimal(body["turn"]["cost_usd"]) == expected_cost([SEED_STEPS[0]]).quantize(MICRO)
    assert body["totals"]["unpriced_calls"] == 1
    assert [w["code"] for w in body["warnings"]] == ["price_missing"]


def test_turn_writes_state_context_and_steps_copy_identity(api: APIClient) -> None:
    session = create_session(api, state={"stage": "browsing"}, user_id="alice")
    response = post_turn(api, session["id"], turn_body(state={"stage": "comparing"}))
    assert response.status_code == 201
    turn = ChatTurn.objects.get(session_id=session["id"])
    assert turn.state_before == {"stage": "browsing"}
    assert turn.state_after == {"stage": "comparing"}
    assert set(turn.context_after) >= {"focus_mpn", "last_results", "selections"}
    assert api.get(f"/api/v1/sessions/{session['id']}").json()["state"] == {"stage": "comparing"}
    step = TurnStep.objects.filter(turn=turn).first()
    assert (step.user_id, step.agent_id, str(step.session_id)) == (
        "alice",
        "shop-assistant",
        session["id"],
    )
    # A turn without `state` keeps it.
    post_turn(api, session["id"], turn_body())
    assert api.get(f"/api/v1/sessions/{session['id']}").json()["state"] == {"stage": "comparing"}


def test_turn_log_is_oldest_first_paginated_with_steps_without_n_plus_1(api: APIClient) -> None:
    session = create_session(api)
    for _ in range(7):
        assert post_turn(api, session["id"]).status_code == 201
    url = f"/api/v1/sessions/{session['id']}/turns?page_size=3"
    numbers = []
    with CaptureQueriesContext(connection) as queries:
        first = api.get(url)
    assert first.status_code == 200
    page_queries = len(queries)
    while url:
        page = api.get(url).json()
        numbers += [turn["turn_number"] for turn in page["results"]]
        assert all(len(turn["steps"]) == 3 for turn in page["results"])
        assert all(
            [s["step_order"] for s in turn["steps"]] == [1, 2, 3] for turn in page["results"]
        )
        url = page["next"]
    assert numbers == [1, 2, 3, 4, 5, 6, 7]
    # Auth + session + turns + steps: constant, not one query per turn.
    with CaptureQueriesContext(connection) as queries:
        api.get(f"/api/v1/sessions/{session['id']}/turns?page_size=7")
    assert len(queries) == page_queries


def test_turn_log_of_another_tenant_is_404(api: APIClient, other_api: APIClient) -> None:
    session = create_session(other_api)
    assert post_turn(other_api, session["id"]).status_code == 201
    assert_error(api.get(f"/api/v1/sessions/{session['id']}/turns"), 404, "not_found")


def test_rollback_restores_state_and_context_marks_later_turns(api: APIClient) -> None:
    session = create_session(api, state={"stage": "start"})
    sid = session["id"]
    post_turn(api, sid, turn_body(state={"stage": "one"}))
    # While handling turn 2, the agent focuses an item (as the results API would).
    stored = ChatSession.objects.get(pk=sid)
    SessionComponent.objects.create(
        tenant_id=stored.tenant_id, session=stored, mpn="XPS-15", position=1,
        fetched_at=timezone.now(),
    )  # fmt: skip
    ChatSession.objects.filter(pk=sid).update(focus_mpn="XPS-15", last_results=["XPS-15"])
    post_turn(api, sid, turn_body(state={"stage": "two"}))
    post_turn(api, sid, turn_body(state={"stage": "three"}))
    before = api.get(f"/api/v1/sessions/{sid}").json()["totals"]

    response = api.post(f"/api/v1/sessions/{sid}/turns/2/rollback")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["rolled_back_turns"] == [2, 3]
    assert body["session"]["state"] == {"stage": "one"}
    assert body["session"]["focus_mpn"] is None  # set during turn 2, so undone with it
    assert body["session"]["totals"] == before  # money was spent: totals stay
    flags = dict(ChatTurn.objects.filter(session_id=sid).values_list("turn_number", "rolled_back"))
    assert flags == {1: False, 2: True, 3: True}

    # Rolling back turn 1 restores the session as it was created.
    assert api.post(f"/api/v1/sessions/{sid}/turns/1/rollback").status_code == 200
    restored = api.get(f"/api/v1/sessions/{sid}").json()
    assert restored["state"] == {"stage": "start"} and restored["focus_mpn"] is None

    # Numbers continue after the last recorded one; nothing is deleted.
    assert post_turn(api, sid).json()["turn"]["turn_number"] == 4
    assert ChatTurn.objects.filter(session_id=sid).count() == 4
    assert_error(api.post(f"/api/v1/sessions/{sid}/turns/2/rollback"), 409, "conflict")
    assert_error(api.post(f"/api/v1/sessions/{sid}/turns/99/rollback"), 404, "not_found")


def test_delete_session_cascades_turns_and_steps(api: APIClient) -> None:
    session = create_session(api)
    other = create_session(api)
    for sid in (session["id"], other["id"]):
        post_turn(api, sid, key=f"k-{sid}")
    assert api.delete(f"/api/v1/sessions/{session['id']}").status_code == 204
    assert not ChatTurn.objects.filter(session_id=session["id"]).exists()
    assert not TurnStep.objects.filter(session_id=session["id"]).exists()
    assert ChatTurn.objects.filter(session_id=other["id"]).count() == 1
    assert TurnStep.objects.filter(session_id=other["id"]).count() == 3


def test_turn_recorded_is_sent_after_commit_with_ids(
    api: APIClient, django_capture_on_commit_callbacks
) -> None:
    from sessions_app.hooks import turn_recorded

    heard: list[dict] = []

    def receiver(**kwargs) -> None:
        heard.append(kwargs)

    turn_recorded.connect(receiver)
    try:
        session = create_session(api)
        with django_capture_on_commit_callbacks(execute=False) as callbacks:
            response = post_turn(api, session["id"])
        assert heard == []  # nothing before commit
        for callback in callbacks:
            callback()
    finally:
        turn_recorded.disconnect(receiver)
    turn = ChatTurn.objects.get(pk=response.json()["turn"]["id"])
    assert [(h["turn_id"], str(h["session_id"]), h["tenant_id"]) for h in heard] == [
        (turn.pk, session["id"], turn.tenant_id)
    ]
