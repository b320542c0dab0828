"""What a memory write refuses through HTTP: a `session_id` that names no session of the
tenant, a `supersedes` edge that would close a cycle."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from rest_framework.test import APIClient

from memory_app.models import Memory, MemoryRelation

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


def relate(api: APIClient, source: str, target: str) -> Any:
    body = {"type": "supersedes", "target_id": target}
    return api.post(f"{MEMORIES}/{source}/relations?acting_user_id=alice", body, format="json")


def assert_conflict_on_target(response: Any) -> None:
    assert response.status_code == 409, response.content
    error = response.json()["error"]
    assert error["code"] == "conflict" and "target_id" in error["fields"], error


def test_a_supersedes_edge_that_would_close_a_cycle_is_refused(api: APIClient) -> None:
    m1, m2, m3 = (
        add(api, text).json()["memory"]["id"]
        for text in ("My sister lives in Oslo", "The laptop order ships Friday", "I play the cello")
    )
    assert relate(api, m2, m1).status_code == 201
    assert_conflict_on_target(relate(api, m1, m2))  # the reverse edge
    assert relate(api, m3, m2).status_code == 201  # m3 supersedes m2, which supersedes m1
    assert_conflict_on_target(relate(api, m1, m3))  # through m2
    edges = MemoryRelation.objects.filter(type="supersedes", target_version__isnull=True)
    assert {(str(e.source_id), str(e.target_id)) for e in edges} == {(m2, m1), (m3, m2)}
    current = api.get(f"{MEMORIES}/{m3}?acting_user_id=alice").json()
    assert current["superseded_by"] is None
    # Another kind of edge back is no cycle of supersession.
    back = api.post(
        f"{MEMORIES}/{m1}/relations?acting_user_id=alice",
        {"type": "related_to", "target_id": m2},
        format="json",
    )
    assert back.status_code == 201, back.content
