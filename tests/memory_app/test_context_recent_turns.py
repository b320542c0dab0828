"""A session's turns in its context: no message without text."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from sessions_app.models import Tenant
from tests.memory_app.window_helpers import new_session, record

pytestmark = pytest.mark.django_db


def _context(api: APIClient, session_id: Any, **params: Any) -> dict[str, Any]:
    response = api.get(f"/api/v1/sessions/{session_id}/context", params)
    assert response.status_code == 200, response.content
    return response.json()


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
