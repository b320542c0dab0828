"""What a memory write refuses through HTTP: a `session_id` that names no session of the
tenant."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from rest_framework.test import APIClient

from memory_app.models import Memory

pytestmark = pytest.mark.django_db

MEMORIES = "/api/v1/memories"


def add(api: APIClient, content: str, **fields: Any) -> Any:
    body = {"user_id": "alice", "agent_id": "shop", "type": "fact", "content": content}
    return api.post(MEMORIES, {**body, **fields}, format="json")


def new_session(api: APIClient) -> str:
    response = api.post("/api/v1/sessions", {"user_id": "alice", "agent_id": "shop"}, format="json")
    assert response.status_code == 201, response.content
    return str(response.json()["id"])


def assert_not_found_on(response: Any, field: str) -> None:
    assert response.status_code == 404, response.content
    error = response.json()["error"]
    assert error["code"] == "not_found" and field in error["fields"], error


def test_a_memory_names_only_a_session_of_its_tenant(api: APIClient, other_api: APIClient) -> None:
    own = add(api, "The laptop order ships on Friday", session_id=new_session(api))
    assert own.status_code == 201, own.content
    elsewhere = new_session(other_api)
    for session_id in (elsewhere, str(uuid.uuid4())):  # another tenant's, and none at all
        assert_not_found_on(add(api, "I wear size 42 shoes", session_id=session_id), "session_id")
    bulk = [
        {"user_id": "alice", "type": "fact", "content": "I live in Lyon"},
        {"user_id": "alice", "type": "fact", "content": "I own a cat", "session_id": elsewhere},
    ]
    assert_not_found_on(api.post(f"{MEMORIES}/bulk", bulk, format="json"), "1.session_id")
    assert Memory.objects.count() == 1
