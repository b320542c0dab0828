"""A turn's answer warns of every spend limit its spend reaches, not only the
session's own budget: period budgets of any scope, and runaway signs."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from tests.sessions_app.helpers import create_session, post_turn, turn_body
from tests.sessions_app.test_period_budgets import STEP, create_budget

pytestmark = pytest.mark.django_db


def codes(response: Any) -> list[str]:
    assert response.status_code == 201, response.content
    return [w["code"] for w in response.json()["warnings"]]


def test_a_turn_past_a_user_budget_warns_naming_it(api: APIClient) -> None:
    budget = create_budget(api, user_id="u1", limit_tokens=1000, action="alert")
    sid = create_session(api, user_id="u1")["id"]
    answer = post_turn(api, sid, turn_body(steps=[STEP, {**STEP, "input_tokens": 400}]))
    assert codes(answer) == ["spend_budget_exceeded"]
    message = answer.json()["warnings"][0]["message"]
    assert "user budget" in message and budget["id"] in message
    assert "1500 of 1000 tokens" in message
    # Later turns under the spent budget warn again; another user's do not.
    assert codes(post_turn(api, sid, turn_body(steps=[STEP]))) == ["spend_budget_exceeded"]
    other = create_session(api, user_id="u2")["id"]
    assert codes(post_turn(api, other, turn_body(steps=[STEP]))) == []


def test_every_scope_passed_is_named_once(api: APIClient) -> None:
    create_budget(api, scope="tenant", user_id="", limit_tokens=500)
    create_budget(api, scope="agent", user_id="", agent_id="shop", limit_tokens=500)
    create_budget(api, scope="model", user_id="", model="GPT-4o-mini", limit_usd="0.000001")
    create_budget(api, scope="user", user_id="u1", limit_tokens=10**9)  # not reached
    sid = create_session(api, user_id="u1", agent_id="shop")["id"]
    answer = post_turn(api, sid, turn_body(steps=[STEP]))
    assert codes(answer) == ["spend_budget_exceeded"] * 3
    messages = " ".join(w["message"] for w in answer.json()["warnings"])
    assert all(f"The {scope} budget" in messages for scope in ("tenant", "agent", "model"))


def test_a_batch_warns_the_turns_whose_spend_falls_under_the_budget(api: APIClient) -> None:
    create_budget(api, user_id="u1", limit_tokens=1000)
    mine = create_session(api, user_id="u1")["id"]
    theirs = create_session(api, user_id="u2")["id"]
    items = [{"session_id": sid, **turn_body(steps=[STEP])} for sid in (mine, theirs, mine)]
    results = api.post("/api/v1/turns/batch", {"turns": items}, format="json").json()["results"]
    warned = [[w["code"] for w in r["turn"]["warnings"]] for r in results]
    assert warned == [["spend_budget_exceeded"], [], ["spend_budget_exceeded"]]


@override_settings(ENGRAM_RUNAWAY_RETRY_LOOP_COUNT=5)
def test_a_turn_whose_failures_loop_warns_runaway_and_later_turns_say_flagged(
    api: APIClient, django_capture_on_commit_callbacks: Any
) -> None:
    sid = create_session(api)["id"]
    failing = {"step_type": "tool", "model": "gpt-4o-mini", "input_tokens": 10,
               "output_tokens": 1, "success": False, "error": "429 rate limited"}  # fmt: skip
    with django_capture_on_commit_callbacks(execute=True):
        answer = post_turn(api, sid, turn_body(steps=[failing] * 6))
    assert codes(answer) == ["runaway_detected"]
    assert "retry_loop" in answer.json()["warnings"][0]["message"]
    # The check that follows the turn (its task runs eagerly in tests) flagged it.
    later = post_turn(api, sid, turn_body(steps=[STEP]))
    assert codes(later) == ["session_runaway"]
    # Fewer failures than the loop count: nothing to warn of.
    calm = create_session(api)["id"]
    assert codes(post_turn(api, calm, turn_body(steps=[failing] * 4))) == []


@override_settings(ENGRAM_RUNAWAY_RETRY_LOOP_COUNT=5)
def test_the_turn_whose_failure_completes_a_retry_loop_over_turns_warns_in_its_own_answer(
    api: APIClient, django_capture_on_commit_callbacks: Any
) -> None:
    sid = create_session(api)["id"]
    failing = {"step_type": "tool", "model": "gpt-4o-mini", "input_tokens": 10,
               "output_tokens": 1, "success": False, "error": "429 rate limited"}  # fmt: skip
    other_error = {**failing, "error": "timeout"}
    with django_capture_on_commit_callbacks(execute=True):
        for _ in range(4):
            assert codes(post_turn(api, sid, turn_body(steps=[failing, other_error]))) == []
        fifth = post_turn(api, sid, turn_body(steps=[failing]))
    assert codes(fifth) == ["runaway_detected"]
    message = fifth.json()["warnings"][0]["message"]
    assert "retry_loop" in message and "429 rate limited" in message
    assert codes(post_turn(api, sid, turn_body(steps=[STEP]))) == ["session_runaway"]


def test_a_batch_item_whose_failure_completes_a_retry_loop_warns_counting_earlier_items(
    api: APIClient,
) -> None:
    """With 15 failures stored, a batch's items each failing once more: the item that
    makes the 20th (ENGRAM_RUNAWAY_RETRY_LOOP_COUNT) warns in its own answer, counting
    the earlier items of its batch, and so does the one after it; another session's
    failures in the batch count for none of them. The stored failures are read once for
    the batch, not once per item."""
    sid = create_session(api)["id"]
    other = create_session(api)["id"]
    failing = {"step_type": "tool", "model": "gpt-4o-mini", "input_tokens": 10,
               "output_tokens": 1, "success": False, "error": "429 rate limited"}  # fmt: skip
    assert codes(post_turn(api, sid, turn_body(steps=[failing] * 15))) == []
    items = [{"session_id": sid, **turn_body(steps=[failing])} for _ in range(6)]
    items[2:2] = [{"session_id": other, **turn_body(steps=[failing] * 19)}]
    with CaptureQueriesContext(connection) as queries:
        answer = api.post("/api/v1/turns/batch", {"turns": items}, format="json")
    assert answer.status_code == 200, answer.content
    warned = [[w["code"] for w in r["turn"]["warnings"]] for r in answer.json()["results"]]
    assert warned == [[], [], [], [], [], ["runaway_detected"], ["runaway_detected"]]
    assert "failures': 20" in answer.json()["results"][5]["turn"]["warnings"][0]["message"]
    reads = [q["sql"] for q in queries.captured_queries if "COALESCE(s.error" in q["sql"]]
    assert len(reads) == 1
