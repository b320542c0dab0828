"""Seed 004: tool outputs are context candidates of their own kind, old
verbatim turns and dissimilar snippets page out first (and the breakdown says so), and
the context takes memory_limit and turn_limit next to budget."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.test import override_settings
from django.utils import timezone
from rest_framework.test import APIClient

from memory_app.selectors.context import context_assemble
from sessions_app.models import Tenant, TurnStep
from tests.sessions_app.helpers import post_turn, turn_body
from tests.sessions_app.workspace_helpers import assert_error, create_session

pytestmark = pytest.mark.django_db


def tool_turn(api: APIClient, sid: str, output: str, message: str = "check it") -> None:
    steps = [{"step_type": "search_tool", "input_tokens": 0, "output_tokens": 0,
              "tool_output": output}]  # fmt: skip
    response = post_turn(api, sid, turn_body(steps, user_message=message))
    assert response.status_code == 201, response.content


def context(api: APIClient, sid: str, **params: Any) -> dict[str, Any]:
    response = api.get(f"/api/v1/sessions/{sid}/context", params)
    assert response.status_code == 200, response.content
    return response.json()  # type: ignore[no-any-return]


def test_tool_outputs_are_candidates_of_their_own_kind(api: APIClient) -> None:
    sid = create_session(api)
    tool_turn(api, sid, "Battery benchmark: XPS 15 lasts 11 hours")
    step = TurnStep.objects.get(session_id=sid, tool_output__startswith="Battery")
    body = context(api, sid)
    included = {item["key"]: item for item in body["included"]}
    assert included[f"tool:{step.pk}"]["kind"] == "tool_output"
    assert body["parts"]["tool_output"]["included"] == 1
    text = "\n".join(message["content"] for message in body["messages"])
    assert "Recent tool outputs:" in text and "XPS 15 lasts 11 hours" in text
    turn = api.get(f"/api/v1/sessions/{sid}/turns/1").json()
    assert turn["steps"][0]["tool_output"] == "Battery benchmark: XPS 15 lasts 11 hours"

    # A rolled-back turn's output is no longer offered.
    assert api.post(f"/api/v1/sessions/{sid}/turns/1/rollback").status_code == 200
    assert f"tool:{step.pk}" not in {item["key"] for item in context(api, sid)["included"]}

    long_step = {"step_type": "t", "input_tokens": 0, "output_tokens": 0, "tool_output": "x" * 4001}
    too_long = post_turn(api, sid, turn_body([long_step]))
    assert_error(too_long, 400, "invalid", "steps.0.tool_output")


def test_snippets_below_the_similarity_floor_are_evicted_and_named(api: APIClient) -> None:
    sid = create_session(api)
    tool_turn(api, sid, "Battery benchmark: the laptop lasts 11 hours on one charge")
    tool_turn(api, sid, "Weather service: Paris is sunny, 24 degrees")
    body = context(api, sid, query="how long does the laptop battery last?")
    included = {item["key"] for item in body["included"]}
    evicted = {item["key"]: item["reason"] for item in body["excluded"]}
    battery, weather = TurnStep.objects.filter(session_id=sid).order_by("id")
    assert f"tool:{battery.pk}" in included
    assert evicted[f"tool:{weather.pk}"] == "evicted_below_similarity"
    with override_settings(ENGRAM_CONTEXT_SIMILARITY_FLOOR=-1.0):
        relaxed = context(api, sid, query="how long does the laptop battery last?")
        assert f"tool:{weather.pk}" in {item["key"] for item in relaxed["included"]}


@override_settings(ENGRAM_COMPACT_KEEP_LAST_TURNS=2, ENGRAM_COMPACT_MAX_TURNS=100)
def test_old_verbatim_turns_outside_the_window_are_evicted_first(
    api: APIClient, tenant: Tenant
) -> None:
    sid = create_session(api)
    for i in range(5):
        assert post_turn(api, sid, turn_body(user_message=f"message {i}")).status_code == 201
    later = timezone.now() + timedelta(minutes=121)
    assembled = context_assemble(tenant=tenant, session_id=sid, budget=4000, now=later)
    reasons = {item["key"]: item["reason"] for item in assembled.excluded}
    assert reasons == {f"turn:{n}": "evicted_age" for n in (1, 2, 3)}
    assert {item["key"] for item in assembled.included if item["kind"] == "turn"} == {
        "turn:4",
        "turn:5",
    }
    assert assembled.parts["turn"] == {**assembled.parts["turn"], "included": 2, "excluded": 3}
    # Now (not two hours later) the same turns compete for the budget and fit.
    fresh = context_assemble(tenant=tenant, session_id=sid, budget=4000)
    assert {item["key"] for item in fresh.included if item["kind"] == "turn"} == {
        f"turn:{n}" for n in range(1, 6)
    }


def test_memory_limit_and_turn_limit(api: APIClient) -> None:
    sid = create_session(api)
    for i in range(3):
        assert post_turn(api, sid, turn_body(user_message=f"message {i}")).status_code == 201
    memory = api.post(
        "/api/v1/memories",
        {"user_id": "u1", "type": "preference", "content": "Prefers matte laptop screens"},
        format="json",
    )
    assert memory.status_code == 201
    query = "which laptop screen does the user like?"
    kinds = [item["kind"] for item in context(api, sid, query=query)["included"]]
    assert "memory" in kinds and kinds.count("turn") == 3
    limited = context(api, sid, query=query, memory_limit=0, turn_limit=1)
    kinds = [item["kind"] for item in limited["included"] + limited["excluded"]]
    assert "memory" not in kinds and kinds.count("turn") == 1
    bad = api.get(f"/api/v1/sessions/{sid}/context", {"memory_limit": 101})
    assert_error(bad, 400, "invalid", "memory_limit")
    bad = api.get(f"/api/v1/sessions/{sid}/context", {"turn_limit": -1})
    assert_error(bad, 400, "invalid", "turn_limit")


@override_settings(
    ENGRAM_COMPACT_KEEP_LAST_TURNS=2,
    ENGRAM_COMPACT_MAX_TURNS=3,
    ENGRAM_CONTEXT_POLICIES={"keep4": {"keep_last_turns": 4, "memory_limit": 0},
                             "raw": {"compression": False}},
)  # fmt: skip
def test_two_named_policies_compared_on_one_session(api: APIClient, tenant: Tenant) -> None:
    from memory_app.services.compaction import session_compact

    sid = create_session(api)
    for i in range(6):
        assert post_turn(api, sid, turn_body(user_message=f"message {i}")).status_code == 201
    session_compact(session_id=sid)  # turns 1-4 summarised, 5-6 open

    def reserved(body: dict[str, Any]) -> list[str]:
        return [item["key"] for item in body["included"] if item.get("reserved")]

    default = context(api, sid)
    assert default["policy"] == {"name": "default", "keep_last_turns": 2, "memory_limit": 12,
                                 "compression": True, "origin": "default",
                                 "predecessor_depth": 3}  # fmt: skip
    assert sorted(reserved(default)) == ["turn:5", "turn:6"]
    assert "summary" in default["parts"]
    assert "turn:1" not in {item["key"] for item in default["included"]}

    raw = context(api, sid, policy="raw")
    assert raw["policy"]["name"] == "raw" and raw["policy"]["compression"] is False
    assert "summary" not in raw["parts"]
    assert {f"turn:{n}" for n in range(1, 7)} <= {item["key"] for item in raw["included"]}

    # The session's own policy is used when the request names none.
    patched = api.patch(f"/api/v1/sessions/{sid}", {"context_policy": "keep4"}, format="json")
    assert patched.status_code == 200 and patched.json()["context_policy"] == "keep4"
    keep4 = context(api, sid)
    assert keep4["policy"]["name"] == "keep4" and keep4["policy"]["memory_limit"] == 0
    assert keep4["policy"]["keep_last_turns"] == 4

    assert_error(api.get(f"/api/v1/sessions/{sid}/context", {"policy": "nope"}), 400,
                 "invalid", "policy")  # fmt: skip
    bad = api.patch(f"/api/v1/sessions/{sid}", {"context_policy": "nope"}, format="json")
    assert_error(bad, 400, "invalid", "context_policy")
