"""A context asked in the past (`as_of`) shows the session as it stood then: its turns
said by `as_of`, verbatim or recalled, and no summary built from a later turn; asked
now, every turn."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from memory_app.services.compaction import session_compact

pytestmark = pytest.mark.django_db

STEP = [{"step_type": "response", "input_tokens": 5, "output_tokens": 5}]
WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india"]


def _session(api: APIClient) -> str:
    response = api.post("/api/v1/sessions", {"user_id": "ana", "agent_id": "a"}, format="json")
    assert response.status_code == 201, response.content
    return str(response.json()["id"])


def _record(
    api: APIClient, capture: Any, session_id: str, user: str, reply: str, at: datetime
) -> None:
    """One turn said at `at`, its after-commit work (its memory) run as in production."""
    body = {"user_message": user, "assistant_response": reply, "steps": STEP}
    with capture(execute=True):
        response = api.post(
            f"/api/v1/sessions/{session_id}/turns",
            {**body, "occurred_at": at.isoformat()},
            format="json",
        )
    assert response.status_code == 201, response.content


def _context(api: APIClient, session_id: str, **params: Any) -> dict[str, Any]:
    response = api.get(f"/api/v1/sessions/{session_id}/context", {"budget": 4000, **params})
    assert response.status_code == 200, response.content
    return response.json()


def _text(body: dict[str, Any]) -> str:
    return "\n".join(m["content"] for m in body["messages"])


def test_a_context_asked_in_the_past_shows_no_turn_said_after_it(
    api: APIClient, django_capture_on_commit_callbacks: Any
) -> None:
    """Three turns ten, six and four days ago; asked six hours before the third (within
    the day a search of other sessions tolerates) about it, the context neither shows
    it verbatim nor recalls it, and shows the first two; asked now it shows all
    three."""
    now = timezone.now()
    asked = now - timedelta(days=4, hours=6)
    session = _session(api)
    said = [
        ("We take the ferry to Bergen on Monday.", "The ferry leaves at 9:10.", 10),
        ("Is the cabin in Flam booked?", "Yes, the cabin in Flam is booked.", 6),
        ("Which train to Oslo did we pick?", "The night train to Oslo at 23:05.", 4),
    ]
    for user, reply, days in said:
        at = now - timedelta(days=days)
        _record(api, django_capture_on_commit_callbacks, session, user, reply, at)
    query = "Which train to Oslo did we pick?"
    past = _context(api, session, query=query, as_of=asked.isoformat())
    text = _text(past)
    assert "Oslo" not in text.replace(query, "")
    assert "ferry to Bergen" in text and "cabin in Flam is booked" in text
    keys = {row["key"] for row in past["included"] + past["excluded"]}
    assert "turn:3" not in keys and "recalled:3" not in keys
    current = _text(_context(api, session, query=query))
    assert "The night train to Oslo at 23:05." in current
    assert "ferry to Bergen" in current and "cabin in Flam is booked" in current


def test_a_context_asked_in_the_past_leaves_out_a_summary_of_later_turns(
    api: APIClient, django_capture_on_commit_callbacks: Any
) -> None:
    """Nine turns a day apart, the oldest three compacted into one summary: asked
    between the second and the third turn, the context shows the first two verbatim
    and nothing of the later ones, neither the summary nor its milestones; asked now,
    the summary stands in for the compacted turns."""
    now = timezone.now()
    session = _session(api)
    start = now - timedelta(days=20)
    for index, word in enumerate(WORDS):
        user = f"Please note the code word {word} for step {index + 1}."
        at = start + timedelta(days=index)
        _record(api, django_capture_on_commit_callbacks, session, user, f"Noted: {word}.", at)
    session_compact(session_id=session, force=True)
    current = _context(api, session)
    summaries = [row["key"] for row in current["included"] if row["kind"] == "summary"]
    assert len(summaries) == 1 and "[turns 1-3]" in _text(current), _text(current)
    past = _context(api, session, as_of=(start + timedelta(days=1, hours=12)).isoformat())
    text = _text(past)
    for word in WORDS[:2]:
        assert f"Noted: {word}." in text
    for word in WORDS[2:]:
        assert word not in text, word
    kinds = {row["kind"] for row in past["included"]}
    assert not kinds & {"summary", "milestone"}, past["included"]
