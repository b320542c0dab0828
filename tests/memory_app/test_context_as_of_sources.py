"""A context asked in the past (`as_of`) takes from every source only what was said or
known by then: the tool outputs and failing steps of turns said by then, the turns of a
rotated session's predecessor said by then, and the long-term memories noted or dated by
then; asked now, everything."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db

# 1000 tokens a turn
STEP = {"step_type": "response", "model": "gpt-4o-mini", "input_tokens": 600, "output_tokens": 400}


def _session(api: APIClient, **fields: Any) -> str:
    body = {"user_id": "ana", "agent_id": "a", **fields}
    response = api.post("/api/v1/sessions", body, format="json")
    assert response.status_code == 201, response.content
    return str(response.json()["id"])


def _turn(
    api: APIClient, sid: str, user: str, at: datetime, steps: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    body = {"user_message": user, "assistant_response": "Noted.", "steps": steps or [STEP],
            "occurred_at": at.isoformat()}  # fmt: skip
    response = api.post(f"/api/v1/sessions/{sid}/turns", body, format="json")
    assert response.status_code == 201, response.content
    return response.json()  # type: ignore[no-any-return]


def _context(api: APIClient, sid: str, **params: Any) -> dict[str, Any]:
    response = api.get(f"/api/v1/sessions/{sid}/context", {"budget": 4000, **params})
    assert response.status_code == 200, response.content
    return response.json()  # type: ignore[no-any-return]


def _text(body: dict[str, Any]) -> str:
    return "\n".join(m["content"] for m in body["messages"])


def test_a_context_asked_in_the_past_leaves_out_tool_outputs_and_failures_of_later_turns(
    api: APIClient,
) -> None:
    now = timezone.now()
    sid = _session(api)
    tool = {"step_type": "search_tool", "input_tokens": 0, "output_tokens": 0}
    _turn(api, sid, "How long does the battery last?", now - timedelta(days=3),
          [STEP, {**tool, "tool_output": "Battery: 13 hours on video playback"}])  # fmt: skip
    later = [
        STEP,
        {**tool, "tool_output": "Stock: 4 units left in Porto"},
        {**tool, "step_type": "inventory_tool", "success": False, "error": "inventory API 503"},
    ]
    _turn(api, sid, "Is it in stock?", now - timedelta(days=1), later)

    past = _text(_context(api, sid, as_of=(now - timedelta(days=2)).isoformat()))
    assert "Battery: 13 hours" in past
    assert "4 units left" not in past
    assert "inventory API 503" not in past

    current = _text(_context(api, sid))
    assert "4 units left" in current and "inventory API 503" in current


def test_a_context_asked_in_the_past_leaves_out_a_predecessor_s_later_turns(
    api: APIClient,
) -> None:
    """A session rotated after two turns (2000 tokens): asked between its predecessor's
    two turns, the successor's context shows the first and not the second; asked now,
    both."""
    now = timezone.now()
    sid = _session(api, rotate_after_tokens=2000)
    _turn(api, sid, "My budget is strictly under 900 dollars.", now - timedelta(days=5))
    _turn(api, sid, "I only want an OLED screen.", now - timedelta(days=1))
    rotated = _turn(api, sid, "What about battery life?", now - timedelta(hours=12))
    successor = rotated["session"]["id"]
    assert successor != sid and rotated["session"]["previous_session_id"] == sid

    past = _context(api, successor, as_of=(now - timedelta(days=2)).isoformat())
    assert "under 900 dollars" in _text(past)
    assert "OLED" not in _text(past)
    keys = {row["key"] for row in past["included"] + past["excluded"]}
    assert f"previous:{sid}:turn:1" in keys and f"previous:{sid}:turn:2" not in keys

    current = _text(_context(api, successor))
    assert "under 900 dollars" in current and "OLED" in current


def _memory(api: APIClient, content: str, **fields: Any) -> str:
    body = {"user_id": "ana", "agent_id": "a", "type": "fact", "content": content, **fields}
    response = api.post("/api/v1/memories", body, format="json")
    assert response.status_code == 201, response.content
    return str(response.json()["memory"]["id"])


def test_a_context_asked_in_the_past_leaves_out_memories_not_known_by_then(
    api: APIClient,
) -> None:
    """Three memories noted now: one undated, one dated an hour ago, one dated five days
    ago (history loaded after the fact). Asked two hours ago, only the last was known
    then; asked now, all three."""
    now = timezone.now()
    sid = _session(api)
    undated = _memory(api, "Ana prefers aisle seats on long flights.")
    later = _memory(
        api, "Ana booked a window seat on the flight to Oslo.",
        occurred_at=(now - timedelta(hours=1)).isoformat(),
    )  # fmt: skip
    imported = _memory(
        api, "Ana sat in an aisle seat on the flight to Bergen.",
        occurred_at=(now - timedelta(days=5)).isoformat(),
    )  # fmt: skip
    query = "Which seat does Ana like on flights?"

    past = _context(api, sid, query=query, as_of=(now - timedelta(hours=2)).isoformat())
    keys = {row["key"] for row in past["included"] + past["excluded"]}
    assert f"memory:{imported}" in keys, past["included"]
    assert f"memory:{undated}" not in keys
    assert f"memory:{later}" not in keys

    current = _context(api, sid, query=query)
    keys = {row["key"] for row in current["included"] + current["excluded"]}
    assert {f"memory:{undated}", f"memory:{later}", f"memory:{imported}"} <= keys
