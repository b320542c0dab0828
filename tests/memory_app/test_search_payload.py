"""The search answers with `memory_data`, a written-out MemorySerializer (cheaper than
running the serializer per hit): the two must stay equal field for field, or the API
would drift from its schema and from every other memory endpoint."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from rest_framework.test import APIClient

from memory_app.api.serializers_memory import MemorySerializer, memory_data
from memory_app.models import Memory
from memory_app.services.memories import (
    MemoryDraft,
    memory_add,
    memory_add_many,
    memory_relation_create,
)
from sessions_app.models import Tenant
from sessions_app.services.sessions import session_create

pytestmark = pytest.mark.django_db


def _json(value: Any) -> Any:
    return json.loads(json.dumps(value))


def _memories(tenant: Tenant) -> list[Memory]:
    plain = memory_add(
        tenant=tenant,
        draft=MemoryDraft(user_id="alice", type="fact", content="The spare key is under the mat"),
    ).memory
    rich = memory_add(
        tenant=tenant,
        draft=MemoryDraft(
            user_id="alice",
            agent_id="concierge",
            type="episodic",
            content="alice: the spare key moved to the blue flowerpot",
            summary="spare key location",
            structured={"object": "spare key", "place": "blue flowerpot"},
            metadata={"source_app": "chat", "n": 3, "nested": {"ok": True}},
            tags=["home", "keys"],
            importance=0.8,
            confidence=0.9,
            scope="shared",
            allowed_users=["bob"],
            allowed_roles=["family"],
            session_id=session_create(tenant=tenant, user_id="alice", agent_id="concierge").pk,
            pinned=True,
            thread_key="conversation-1",
            thread_order=7,
            occurred_at=datetime(2023, 5, 8, 13, 56, 12, 345678, tzinfo=UTC),
        ),
    ).memory
    assert plain is not None and rich is not None
    memory_relation_create(memory=rich, relation_type="supersedes", target_id=plain.pk)
    memory_relation_create(memory=rich, relation_type="related_to", target_id=plain.pk)
    return [plain, rich]


def test_memory_data_equals_the_serializer(tenant: Tenant) -> None:
    for memory in _memories(tenant):
        stored = Memory.objects.get(pk=memory.pk)
        expected = _json(MemorySerializer(stored).data)
        assert _json(memory_data(stored)) == expected
        assert list(memory_data(stored)) == list(expected)  # same keys, same order


def test_search_results_carry_the_serializer_s_memory(tenant: Tenant, api: APIClient) -> None:
    _memories(tenant)
    response = api.post(
        "/api/v1/memories/search",
        {"query": "where is the spare key", "user_id": "alice", "limit": 5},
        format="json",
    )
    assert response.status_code == 200, response.content
    results = response.json()["results"]
    assert len(results) == 2
    for result in results:
        stored = Memory.objects.get(pk=result["memory"]["id"])
        assert result["memory"] == _json(MemorySerializer(stored).data)
        assert set(result) == {"score", "parts", "memory"}
    rich = next(r for r in results if r["memory"]["thread_key"])
    assert sorted(edge["type"] for edge in rich["memory"]["relations"]) == [
        "related_to",
        "supersedes",
    ]


def test_a_search_request_writes_nothing_and_its_queries_do_not_grow_with_hits(
    tenant: Tenant, api: APIClient
) -> None:
    """Access counts go to Valkey, relations come in one query: a search's statements
    are the same for 2 hits as for 10, and none of them writes to memory."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    memory_add_many(
        tenant=tenant,
        drafts=[
            MemoryDraft(user_id="alice", type="fact", content=f"Parcel P-{n} goes to dock {n}")
            for n in range(12)
        ],
    )
    statements = {}
    for limit in (2, 10):
        body = {"query": "which dock does parcel P-3 go to", "user_id": "alice", "limit": limit}
        api.post("/api/v1/memories/search", body, format="json")  # warm: auth caches
        with CaptureQueriesContext(connection) as captured:
            response = api.post("/api/v1/memories/search", body, format="json")
        assert response.status_code == 200 and len(response.json()["results"]) == limit
        statements[limit] = [query["sql"] for query in captured.captured_queries]
    assert len(statements[2]) == len(statements[10])
    assert not any(sql.lstrip().upper().startswith("UPDATE") for sql in statements[10])
