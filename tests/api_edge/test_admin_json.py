"""JSON an operator types in the admin is held to the API's rules, and a refused document
is shown again with its error: a lone surrogate and deep nesting were a 500 on a
session's change page (found by posting hostile values to the admin's forms)."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from rest_framework.test import APIClient

from sessions_app.models import ChatSession

pytestmark = pytest.mark.django_db

HOSTILE = {
    "nul": '{"a": "\\u0000"}',
    "nul key": '{"\\u0000": 1}',
    "lone surrogate": '{"a": "\\ud800"}',
    "deep": "[" * 3000 + "]" * 3000,
    "not finite": '{"a": 1e999}',
    "nan": '{"a": NaN}',
}


def _change(admin_client: Client, session_id: str, metadata: str) -> Any:
    return admin_client.post(
        f"/admin/sessions_app/chatsession/{session_id}/change/",
        {
            "budget_tokens": "",
            "budget_usd": "",
            "metadata": metadata,
            **{
                f"{inline}-{count}": "0"
                for inline in ("turns", "components", "selections")
                for count in ("TOTAL_FORMS", "INITIAL_FORMS")
            },
        },
    )


def test_session_metadata_in_the_admin(admin_client: Client, api: APIClient) -> None:
    session_id = api.post(
        "/api/v1/sessions", {"user_id": "u", "agent_id": "a"}, format="json"
    ).json()["id"]
    saved = _change(admin_client, session_id, '{"team": "café"}')
    assert saved.status_code == 302, saved.content[:500]
    assert ChatSession.objects.get(pk=session_id).metadata == {"team": "café"}
    admin_client.raise_request_exception = False
    for name, metadata in HOSTILE.items():
        response = _change(admin_client, session_id, metadata)
        assert response.status_code == 200, (name, response.status_code)
        assert b'class="errorlist' in response.content, name
        assert ChatSession.objects.get(pk=session_id).metadata == {"team": "café"}, name
