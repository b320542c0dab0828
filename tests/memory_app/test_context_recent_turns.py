"""The session's newest turns in its context: the newest turn first, then the window as
one run from the newest backwards, never with a hole; and no message without text."""

from __future__ import annotations

import re
from typing import Any

import pytest
from rest_framework.test import APIClient

from memory_app.services.compaction import session_compact
from memory_app.window.tokens import message_tokens
from sessions_app.models import Tenant
from tests.memory_app.trip_conversation import USER_MESSAGES, assistant_reply
from tests.memory_app.window_helpers import new_session, record

pytestmark = pytest.mark.django_db


def _context(api: APIClient, session_id: Any, **params: Any) -> dict[str, Any]:
    response = api.get(f"/api/v1/sessions/{session_id}/context", params)
    assert response.status_code == 200, response.content
    return response.json()


def _turns_in(body: dict[str, Any]) -> list[int]:
    return sorted(
        int(row["key"].split(":")[1]) for row in body["included"] if row["kind"] == "turn"
    )


def test_the_window_is_one_run_from_the_newest_turn_backwards(
    tenant: Tenant, api: APIClient
) -> None:
    """Turns 2-4 each fit the budget alone, not in what the newest two leave; turn 1 is
    short and would fit, but shown right before turn 5 it would read as the turn before
    it: it is left out with the long ones, and says why."""
    session = new_session(tenant)
    record(tenant, session, "Short one: which ferry?", "The 9:10 ferry.")
    for index in range(3):
        record(tenant, session, f"Long question {index}: " + "fjord cabin " * 90, "Noted.")
    record(tenant, session, "And the bus to Flam?", "The 14:00 bus.")
    record(tenant, session, "Which seat did we take?", "Window seats.")
    body = _context(api, session.pk, budget=300)
    assert body["total_tokens"] <= 300
    assert _turns_in(body) == [5, 6]
    users = [m["content"] for m in body["messages"] if m["role"] == "user"]
    assert users == ["And the bus to Flam?", "Which seat did we take?"]
    reasons = {row["key"]: row["reason"] for row in body["excluded"]}
    assert reasons["turn:4"] == "over_budget"
    assert reasons["turn:1"] == "not_contiguous"


def test_the_newest_turn_has_the_first_claim_on_a_small_budget(
    tenant: Tenant, api: APIClient
) -> None:
    """Twenty compacted turns of a trip leave many milestone lines, each scored above a
    turn; the newest turn takes more than the window's share of a 100-token budget, yet
    it goes in before any of them."""
    session = new_session(tenant)
    for number, message in enumerate(USER_MESSAGES, 1):
        record(tenant, session, message, assistant_reply(number))
    session_compact(session_id=session.pk)
    last_user = (
        "Please also check whether the Fjordbu cabin has a washing machine and a drying "
        "room for our wet hiking gear, and whether towels are included."
    )
    last_reply = (
        "Yes: the Fjordbu cabin has a washing machine and a dryer in the hallway, a drying "
        "room for boots, and towels and bed linen are included."
    )
    newest = record(tenant, session, last_user, last_reply)
    cost = message_tokens("user", last_user) + message_tokens("assistant", last_reply)
    assert 50 < cost < 97  # more than the share (50), less than the budget
    body = _context(api, session.pk, budget=100)
    assert body["total_tokens"] <= 100
    assert body["messages"][-2:] == [
        {"role": "user", "content": last_user},
        {"role": "assistant", "content": last_reply},
    ]
    first = body["included"][0]
    assert (first["key"], first["reserved"]) == (f"turn:{newest}", True)


def test_a_turn_without_a_response_gives_its_user_message_only(
    tenant: Tenant, api: APIClient
) -> None:
    session = new_session(tenant)
    record(tenant, session, "Book the ferry to Flam.", "Booked: the 9:10 ferry.")
    record(tenant, session, "Check the cabin's stock of towels", "", failed_error="API 503")
    record(tenant, session, "   ", "Still there? I can retry the towels.")
    body = _context(api, session.pk, budget=2000)
    assert all(m["content"].strip() for m in body["messages"]), body["messages"]
    turns = [m for m in body["messages"] if m["role"] in ("user", "assistant")]
    assert turns == [
        {"role": "user", "content": "Book the ferry to Flam."},
        {"role": "assistant", "content": "Booked: the 9:10 ferry."},
        {"role": "user", "content": "Check the cabin's stock of towels"},
        {"role": "assistant", "content": "Still there? I can retry the towels."},
    ]
    assert sum(p["tokens"] for p in body["parts"].values()) == body["total_tokens"]


def test_a_newest_turn_larger_than_the_budget_goes_in_cut_to_fit(
    tenant: Tenant, api: APIClient
) -> None:
    """A pasted log makes the newest turn larger than the whole budget: it still goes
    in, its message's beginning and end around a mark saying how much was cut, its
    short reply whole, and the context says it was truncated and by how many tokens."""
    session = new_session(tenant)
    record(tenant, session, "Which ferry do we take?", "The 9:10 ferry.")
    opening = "Here is the booking log from the ferry company:"
    question = "So is our cabin on the 9:10 ferry confirmed?"
    pasted = " ".join(f"line {n}: seat {n % 40} deck {n % 3} status ok." for n in range(300))
    answer = "Yes, cabin 12 is confirmed."
    newest = record(tenant, session, f"{opening} {pasted} {question}", answer)
    body = _context(api, session.pk, budget=300)
    assert body["total_tokens"] <= 300
    user, reply = body["messages"][-2:]
    assert user["role"] == "user" and reply == {"role": "assistant", "content": answer}
    assert user["content"].startswith(opening) and user["content"].endswith(question)
    cut = re.search(r" … \[cut (\d+) tokens\] … ", user["content"])
    assert cut is not None, user["content"]
    first = body["included"][0]
    assert (first["key"], first["reserved"]) == (f"turn:{newest}", True)
    truncated = [row for row in body["excluded"] if row["reason"] == "truncated"]
    assert [(row["key"], row["tokens"]) for row in truncated] == [
        (f"turn:{newest}", int(cut.group(1)))
    ]
    assert body["parts"]["turn"]["included"] == 1
    assert sum(p["tokens"] for p in body["parts"].values()) == body["total_tokens"]
