"""A new session remembers what the user said in earlier ones: every turn is a memory of
its user, recalled into another session's context with its date, and only ever for that
user of that tenant; rollback, session deletion and erasure take it away."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.test import override_settings
from django.utils import timezone
from rest_framework.test import APIClient

from memory_app.models import Memory, MemorySource

pytestmark = pytest.mark.django_db

STEP = [{"step_type": "response", "input_tokens": 5, "output_tokens": 5}]


@pytest.fixture
def converse(
    django_capture_on_commit_callbacks: Any,
) -> Callable[..., str]:
    """Record a session of `user` (the after-commit work runs, as in production) and
    answer its id."""

    def _converse(
        api: APIClient,
        user: str,
        turns: list[tuple[str, str]],
        *,
        agent: str = "assistant",
        occurred_at: str | None = None,
    ) -> str:
        session = api.post("/api/v1/sessions", {"user_id": user, "agent_id": agent}, format="json")
        assert session.status_code == 201, session.content
        session_id = session.json()["id"]
        for user_message, reply in turns:
            body: dict[str, Any] = {
                "user_message": user_message,
                "assistant_response": reply,
                "steps": STEP,
            }
            if occurred_at:
                body["occurred_at"] = occurred_at
            with django_capture_on_commit_callbacks(execute=True):
                response = api.post(f"/api/v1/sessions/{session_id}/turns", body, format="json")
            assert response.status_code == 201, response.content
        return session_id

    return _converse


def _context(api: APIClient, user: str, query: str, agent: str = "assistant") -> dict[str, Any]:
    session = api.post("/api/v1/sessions", {"user_id": user, "agent_id": agent}, format="json")
    response = api.get(
        f"/api/v1/sessions/{session.json()['id']}/context", {"query": query, "budget": 1500}
    )
    assert response.status_code == 200, response.content
    return response.json()


def _text(body: dict[str, Any]) -> str:
    return "\n".join(m["content"] for m in body["messages"])


MOVE = [
    ("We finally moved to Lisbon last month, the flat is near the river.", "Congratulations!"),
    ("The cat hated the trip though.", "Cats rarely enjoy moving."),
]
SMALL_TALK = [("What a rainy day.", "Stay dry!"), ("Any film tips?", "Try a comedy.")]


def test_a_new_session_recalls_the_users_earlier_sessions_with_their_dates(
    api: APIClient, converse: Callable[..., str]
) -> None:
    first = converse(api, "ana", MOVE, occurred_at="2023-05-08T13:56:00Z")
    converse(api, "ana", SMALL_TALK)
    body = _context(api, "ana", "Which city did I move to?")
    text = _text(body)
    assert "moved to Lisbon" in text
    assert "From the user's earlier sessions" in text
    past = [row for row in body["included"] if row["kind"] == "past_turn"]
    assert f"past:{first}:1" in {row["key"] for row in past}
    assert body["parts"]["past_turn"]["included"] == len(past)
    line = next(line for line in text.splitlines() if "moved to Lisbon" in line)
    assert line.startswith(f"[2023-05-08 13:56, session {first[:8]}, turn 1]")
    memory = Memory.objects.get(session_id=first, thread_order=1)
    assert memory.source == MemorySource.CONVERSATION_TURN
    assert memory.occurred_at.isoformat() == "2023-05-08T13:56:00+00:00"


def test_another_users_or_tenants_turns_are_never_recalled(
    api: APIClient, other_api: APIClient, converse: Callable[..., str]
) -> None:
    converse(api, "ana", [("I moved to Lisbon in spring.", "Nice.")])
    converse(api, "bob", [("I moved to Porto in spring.", "Nice.")])
    converse(other_api, "ana", [("I moved to Madrid in spring.", "Nice.")])
    text = _text(_context(api, "ana", "Where did I move in spring?"))
    assert "Lisbon" in text
    assert "Porto" not in text and "Madrid" not in text
    search = api.post(
        "/api/v1/memories/search",
        {"query": "moved in spring", "user_id": "ana", "limit": 50},
        format="json",
    ).json()
    contents = " ".join(hit["memory"]["content"] for hit in search["results"])
    assert "Lisbon" in contents and "Porto" not in contents and "Madrid" not in contents
    assert "Madrid" in _text(_context(other_api, "ana", "Where did I move in spring?"))


def test_rolled_back_turns_are_not_recalled(api: APIClient, converse: Callable[..., str]) -> None:
    session = converse(
        api, "ana", [("My locker code is 4471.", "Noted."), ("My locker code is 9902.", "Ok.")]
    )
    assert api.post(f"/api/v1/sessions/{session}/turns/2/rollback").status_code == 200
    text = _text(_context(api, "ana", "What is my locker code?"))
    assert "4471" in text and "9902" not in text


def test_deleting_a_session_forgets_its_turns_and_erasure_forgets_the_user(
    api: APIClient, converse: Callable[..., str]
) -> None:
    lisbon = converse(api, "ana", MOVE)
    converse(api, "ana", [("My sister lives in Lisbon too.", "How nice.")])
    assert api.delete(f"/api/v1/sessions/{lisbon}").status_code == 204
    assert not Memory.objects.filter(session_id=lisbon).exists()
    text = _text(_context(api, "ana", "Who lives in Lisbon?"))
    assert "sister lives in Lisbon" in text and "flat is near the river" not in text
    assert api.delete("/api/v1/users/ana").status_code == 200
    assert not Memory.objects.filter(user_id="ana").exists()
    body = _context(api, "ana", "Who lives in Lisbon?")
    assert not [row for row in body["included"] if row["kind"] == "past_turn"]


def test_recall_spans_the_users_agents_unless_the_policy_says_otherwise(
    api: APIClient, converse: Callable[..., str]
) -> None:
    """The switch is about conversation turns; facts drawn from them are the user's."""
    converse(api, "ana", [("Book the 7:40 train to Porto, please.", "Booked.")], agent="travel")
    query = "Which train to Porto was booked?"
    assert "7:40 train" in _text(_context(api, "ana", query, agent="chef"))
    with override_settings(ENGRAM_RECALL_ACROSS_AGENTS=False):
        assert "7:40 train" not in _text(_context(api, "ana", query, agent="chef"))
        assert "7:40 train" in _text(_context(api, "ana", query, agent="travel"))


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("2999-01-01T00:00:00Z", "future"),
        ("2024-05-08T13:56:00", "offset"),
        ("last tuesday", "format"),
        ("2023-13-01T00:00:00Z", "format"),
    ],
)
def test_a_bad_occurred_at_is_refused_naming_the_field(
    api: APIClient, value: str, problem: str
) -> None:
    session = api.post(
        "/api/v1/sessions", {"user_id": "ana", "agent_id": "a"}, format="json"
    ).json()["id"]
    response = api.post(
        f"/api/v1/sessions/{session}/turns",
        {"user_message": "hi", "steps": STEP, "occurred_at": value},
        format="json",
    )
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert list(error["fields"]) == ["occurred_at"]
    assert problem in error["fields"]["occurred_at"][0].lower() or problem == "format"
    assert api.get(f"/api/v1/sessions/{session}/turns").json()["results"] == []


def test_a_batch_refuses_the_item_with_a_bad_time_alone(api: APIClient) -> None:
    session = api.post(
        "/api/v1/sessions", {"user_id": "ana", "agent_id": "a"}, format="json"
    ).json()["id"]
    soon = (timezone.now() + timedelta(days=2)).isoformat()
    turns = [
        {"session_id": session, "user_message": "one", "steps": STEP},
        {"session_id": session, "user_message": "two", "steps": STEP, "occurred_at": soon},
        {"session_id": session, "user_message": "three", "steps": STEP},
    ]
    response = api.post("/api/v1/turns/batch", {"turns": turns}, format="json")
    assert response.status_code == 200, response.content
    results = response.json()["results"]
    assert [r["status"] for r in results] == [201, 400, 201]
    assert list(results[1]["error"]["fields"]) == ["occurred_at"]
    stored = api.get(f"/api/v1/sessions/{session}/turns").json()["results"]
    assert [t["user_message"] for t in stored] == ["one", "three"]
    assert stored[0]["occurred_at"] is not None


def test_the_context_takes_the_time_the_question_is_asked(
    api: APIClient, converse: Callable[..., str]
) -> None:
    converse(
        api,
        "ana",
        [("The dentist said my filling is fine.", "Good news.")],
        occurred_at="2023-03-10T10:00:00Z",
    )
    session = api.post(
        "/api/v1/sessions", {"user_id": "ana", "agent_id": "a"}, format="json"
    ).json()["id"]
    url = f"/api/v1/sessions/{session}/context"
    body = api.get(
        url, {"query": "What did the dentist say in March?", "as_of": "2023-07-01T09:00:00+02:00"}
    )
    assert body.status_code == 200, body.content
    # Labelled in the question's offset: 10:00 UTC is 12:00 at +02:00.
    assert "[2023-03-10 12:00" in _text(body.json())
    for value in ("next tuesday", ""):
        bad = api.get(url, {"query": "dentist", "as_of": value})
        assert bad.status_code == 400, value
        assert list(bad.json()["error"]["fields"]) == ["as_of"]


def test_memories_that_read_the_same_are_one_line(api: APIClient) -> None:
    for content in ("I prefer aisle seats on short flights.", "I want aisle seats on long hauls."):
        response = api.post(
            "/api/v1/memories",
            {
                "user_id": "ana",
                "type": "preference",
                "content": content,
                "summary": "User prefers aisle seats",
            },
            format="json",
        )
        assert response.status_code == 201, response.content
    body = _context(api, "ana", "Which seats do I prefer?")
    memories = next(
        m["content"] for m in body["messages"] if m["content"].startswith("Relevant long-term")
    )
    lines = memories.splitlines()[1:]
    # One line, labelled with the date of the first memory the search found.
    assert len(lines) == 1 and re.fullmatch(
        r"\[[0-9-]{10} [0-9:]{5}\] User prefers aisle seats", lines[0]
    )


def test_labels_are_in_the_offset_of_the_question(
    api: APIClient, converse: Callable[..., str]
) -> None:
    """Said on Saturday 23:30 in California (Sunday 07:30 UTC): asked there on Sunday,
    the line reads Saturday night, as "last Saturday" in the question does."""
    converse(
        api,
        "ana",
        [("I bought a red kayak at the marina.", "Fun!")],
        occurred_at="2026-11-28T23:30:00-08:00",
    )
    session = api.post(
        "/api/v1/sessions", {"user_id": "ana", "agent_id": "a"}, format="json"
    ).json()["id"]
    query = {"query": "What did I buy last Saturday?", "as_of": "2026-11-29T12:00:00-08:00"}
    body = api.get(f"/api/v1/sessions/{session}/context", query)
    assert body.status_code == 200, body.content
    assert "[2026-11-28 23:30, session" in _text(body.json())
    # Without as_of (now, UTC) the same turn reads in UTC.
    body = api.get(f"/api/v1/sessions/{session}/context", {"query": "What did I buy?"})
    assert "[2026-11-29 07:30, session" in _text(body.json())


def test_a_question_only_about_a_time_recalls_what_was_said_then(
    api: APIClient, converse: Callable[..., str]
) -> None:
    osaka_session = converse(
        api,
        "ana",
        [("I booked the flights to Osaka for October.", "Exciting trip!")],
        occurred_at="2023-08-23T12:00:00Z",
    )
    for day, line in (
        ("2023-06-01", "We talked about what happened at the office party."),
        ("2023-07-15", "Can we talk about what happened in the budget meeting?"),
        ("2023-05-05", "What did we talk about regarding the parcel from Berlin?"),
    ):
        converse(api, "ana", [(line, "Sure.")], occurred_at=f"{day}T10:00:00Z")
    session = api.post(
        "/api/v1/sessions", {"user_id": "ana", "agent_id": "a"}, format="json"
    ).json()["id"]
    body = api.get(
        f"/api/v1/sessions/{session}/context",
        {"query": "What did we talk about last week?", "as_of": "2023-09-01T10:00:00Z"},
    )
    assert body.status_code == 200, body.content
    past = [row for row in body.json()["included"] if row["kind"] == "past_turn"]
    assert past, body.json()["included"]
    scores = {row["key"]: row["score"] for row in past}
    osaka = next(line for line in _text(body.json()).splitlines() if "Osaka" in line)
    assert osaka.startswith("[2023-08-23")
    # Related by its time, it ranks above the turns that only share the query's words.
    assert max(scores, key=scores.__getitem__) == f"past:{osaka_session}:1"


def test_another_acting_user_is_not_given_the_users_past_turns(
    api: APIClient, converse: Callable[..., str]
) -> None:
    converse(api, "ana", [("My new address is 45 Rue de Rivoli, Paris.", "Noted.")])
    session = api.post(
        "/api/v1/sessions", {"user_id": "ana", "agent_id": "a"}, format="json"
    ).json()["id"]
    url = f"/api/v1/sessions/{session}/context"
    query = {"query": "What is my address?"}
    own = api.get(url, query).json()
    assert "Rue de Rivoli" in _text(own)
    other = api.get(url, {**query, "acting_user_id": "someone-else"})
    assert other.status_code == 200, other.content
    assert "Rue de Rivoli" not in _text(other.json())
    assert not [row for row in other.json()["included"] if row["kind"] == "past_turn"]


def test_a_question_asked_in_the_past_recalls_only_what_had_happened(
    api: APIClient, converse: Callable[..., str]
) -> None:
    converse(
        api, "ana", [("I live at 12 Baker Street.", "Noted.")], occurred_at="2026-03-14T10:00:00Z"
    )
    converse(
        api,
        "ana",
        [("My new address is 45 Rue de Rivoli.", "Noted.")],
        occurred_at="2026-11-25T10:00:00Z",
    )
    session = api.post(
        "/api/v1/sessions", {"user_id": "ana", "agent_id": "a"}, format="json"
    ).json()["id"]
    url = f"/api/v1/sessions/{session}/context"
    then = _text(
        api.get(url, {"query": "What is my address?", "as_of": "2026-04-01T00:00:00Z"}).json()
    )
    assert "Baker Street" in then
    assert "Rue de Rivoli" not in then
    # Asked now, both had happened.
    now = _text(api.get(url, {"query": "What is my address?"}).json())
    assert "Baker Street" in now and "Rue de Rivoli" in now
