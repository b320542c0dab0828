"""Recalled turns in a context say who said what: `user: … / assistant: …`, also in the
passage of a long turn; what is stored and searched stays the turn's own text."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from memory_app.models import Memory
from memory_app.services.compaction import session_compact
from sessions_app.models import Tenant
from tests.memory_app.trip_conversation import USER_MESSAGES, assistant_reply
from tests.memory_app.window_helpers import new_session, record

pytestmark = pytest.mark.django_db


def _context(api: APIClient, session_id: Any, **params: Any) -> dict[str, Any]:
    response = api.get(f"/api/v1/sessions/{session_id}/context", params)
    assert response.status_code == 200, response.content
    return response.json()


def test_a_turn_of_an_earlier_session_says_who_said_what(
    tenant: Tenant, api: APIClient, django_capture_on_commit_callbacks: Any
) -> None:
    earlier = new_session(tenant)
    with django_capture_on_commit_callbacks(execute=True):
        record(
            tenant,
            earlier,
            "What should I see in Kyoto?",
            "Fushimi Inari at dawn. I live in Madrid and love sushi; Nishiki market is a must.",
        )
    session = new_session(tenant)
    body = _context(api, session.pk, query="Who lives in Madrid?", budget=1500)
    line = next(m for m in body["messages"] if "Madrid" in m["content"])["content"]
    assert "] user: What should I see in Kyoto? / assistant: Fushimi Inari at dawn." in line
    # The stored text, which the search reads, is the turn's own words.
    memory = Memory.objects.get(session_id=earlier.pk, thread_order=1)
    assert memory.content.startswith("What should I see in Kyoto?\nFushimi Inari")


def test_an_earlier_turn_of_the_session_says_who_said_what_in_a_long_turn(
    tenant: Tenant, api: APIClient, django_capture_on_commit_callbacks: Any
) -> None:
    """A long reply is cut to the passage that answers; the passage still says whose
    words it holds."""
    session = new_session(tenant)
    reply = " ".join(f"Option {i} is a quiet cabin by the lake." for i in range(60))
    reply += " The Fjordbu cabin has a sauna. " + "Trains run hourly. " * 40
    with django_capture_on_commit_callbacks(execute=True):
        record(tenant, session, "Which cabins are there?", reply)
    for number in range(2, 10):
        with django_capture_on_commit_callbacks(execute=True):
            record(tenant, session, USER_MESSAGES[number], assistant_reply(number))
    session_compact(session_id=session.pk, force=True)  # turn 1 is recalled, not open
    body = _context(api, session.pk, query="Which cabin has a sauna?", budget=2000)
    recalled = next(m["content"] for m in body["messages"] if m["content"].startswith("Earlier"))
    line = next(line for line in recalled.splitlines() if "sauna" in line)
    assert line.startswith("[turn 1, ") and "assistant: " in line
    assert line.index("assistant: ") < line.index("The Fjordbu cabin has a sauna.")
