"""The context finds old turns: compacted turns stay searchable and come back verbatim."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from memory_app.models import TurnIndexEntry
from memory_app.services.turn_index import turn_index_update
from memory_app.window.tokens import messages_tokens
from sessions_app.models import ChatTurn, Tenant
from tests.memory_app.window_helpers import new_session, record

pytestmark = pytest.mark.django_db

FILLER = [
    ("How was your weekend?", "Quiet, mostly reading on the balcony."),
    ("Any plans for dinner?", "Maybe pasta, nothing fancy."),
    ("Did you watch the match?", "Only the second half, it was tense."),
    ("How is work going?", "Busy week, lots of meetings."),
]


def _conversation(tenant: Tenant, capture: Any) -> Any:
    session = new_session(tenant)
    with capture(execute=True):
        record(tenant, session, "Guess what, I adopted a greyhound!", "Wow! What is its name?")
    with capture(execute=True):
        record(tenant, session, "Her name is Biscuit, she is three.", "Biscuit is a lovely name.")
    for index in range(30):
        user, reply = FILLER[index % len(FILLER)]
        with capture(execute=True):
            record(tenant, session, f"{user} ({index})", reply)
    return session


def test_a_compacted_turn_comes_back_verbatim(
    tenant: Tenant, api: APIClient, django_capture_on_commit_callbacks: Any
) -> None:
    session = _conversation(tenant, django_capture_on_commit_callbacks)
    assert ChatTurn.objects.get(session=session, turn_number=2).compacted
    # Every turn was indexed after its commit, compacted ones included.
    assert TurnIndexEntry.objects.filter(session_id=session.pk).count() == 32
    entry = TurnIndexEntry.objects.get(session_id=session.pk, turn_number=2)
    assert "greyhound" in entry.thread_context  # its window holds the turn before it

    # "greyhound" is only in turn 1; the name is only in turn 2: the window finds it.
    response = api.get(
        f"/api/v1/sessions/{session.pk}/context",
        {"query": "What is the name of the greyhound?", "budget": 600},
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["total_tokens"] <= 600
    assert messages_tokens(body["messages"]) == body["total_tokens"]
    text = "\n".join(m["content"] for m in body["messages"])
    assert "Her name is Biscuit, she is three." in text
    recalled = [i for i in body["included"] if i["kind"] == "recalled_turn"]
    assert "recalled:2" in {i["key"] for i in recalled}
    assert body["parts"]["recalled_turn"]["included"] == len(recalled)
    assert any(m["content"].startswith("Earlier turns that match") for m in body["messages"])

    # Without a query nothing is recalled.
    plain = api.get(f"/api/v1/sessions/{session.pk}/context", {"budget": 600}).json()
    assert not [i for i in plain["included"] if i["kind"] == "recalled_turn"]


def test_indexing_is_idempotent_and_skips_rolled_back_turns(
    tenant: Tenant, django_capture_on_commit_callbacks: Any
) -> None:
    session = _conversation(tenant, django_capture_on_commit_callbacks)
    turn = ChatTurn.objects.get(session=session, turn_number=2)
    before = TurnIndexEntry.objects.get(pk=turn.pk)
    assert turn_index_update(turn_id=turn.pk) == 1  # its own row only: windows unchanged
    after = TurnIndexEntry.objects.get(pk=turn.pk)
    assert (after.text, after.thread_context) == (before.text, before.thread_context)
    assert TurnIndexEntry.objects.filter(session_id=session.pk).count() == 32
    ChatTurn.objects.filter(pk=turn.pk).update(rolled_back=True)
    assert turn_index_update(turn_id=turn.pk) == 0
