"""The memory admin edits through the service (a new version, re-embedded, re-hashed)
and lists large tables without counting them."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memory_app.embedding import embed_texts
from memory_app.models import Memory, MemoryVersion
from memory_app.services.memories import MemoryDraft, content_hash, memory_add
from sessions_app.models import Tenant

pytestmark = pytest.mark.django_db


def _form(memory: Memory, **changes: Any) -> dict[str, Any]:
    """The change form as the admin posts it, with `changes` applied."""
    data: dict[str, Any] = {
        "content": memory.content,
        "summary": memory.summary,
        "structured": "{}",
        "importance": memory.importance,
        "confidence": memory.confidence,
        "tags": ",".join(memory.tags),
        "scope": memory.scope,
        "allowed_users": "",
        "allowed_roles": "",
        "pinned": "",
        "relations-TOTAL_FORMS": "0",
        "relations-INITIAL_FORMS": "0",
        "versions-TOTAL_FORMS": "0",
        "versions-INITIAL_FORMS": "0",
    }
    data.update(changes)
    return data


def test_editing_a_memory_makes_a_new_version_re_embedded_and_re_hashed(
    tenant: Tenant, admin_client: Any
) -> None:
    added = memory_add(
        tenant=tenant,
        draft=MemoryDraft(user_id="alice", type="fact", content="I live in Lisbon"),
    ).memory
    old_embedding = np.array(added.embedding)
    url = f"/admin/memory_app/memory/{added.pk}/change/"
    assert admin_client.get(url).status_code == 200
    response = admin_client.post(url, _form(added, content="I live in Porto", importance=0.9))
    assert response.status_code == 302, response.content[:2000]

    memory = Memory.objects.get(pk=added.pk)
    assert memory.content == "I live in Porto" and memory.importance == 0.9
    assert memory.version == 2
    assert memory.content_hash == content_hash("I live in Porto")
    expected = np.array(embed_texts(["I live in Porto"])[0])
    assert np.allclose(np.array(memory.embedding), expected, atol=1e-5)
    assert not np.allclose(np.array(memory.embedding), old_embedding, atol=1e-3)
    (previous,) = MemoryVersion.objects.filter(memory=memory)
    assert (previous.version, previous.content, previous.replaced_by) == (
        1,
        "I live in Lisbon",
        "updated",
    )


def test_an_edit_that_duplicates_another_memory_is_refused(
    tenant: Tenant, admin_client: Any
) -> None:
    first = memory_add(
        tenant=tenant, draft=MemoryDraft(user_id="bob", type="fact", content="I work at Initech")
    ).memory
    second = memory_add(
        tenant=tenant, draft=MemoryDraft(user_id="bob", type="fact", content="I like tea")
    ).memory
    url = f"/admin/memory_app/memory/{second.pk}/change/"
    response = admin_client.post(url, _form(second, content="I work at Initech"), follow=True)
    assert b"Not saved" in response.content
    assert Memory.objects.get(pk=second.pk).content == "I like tea"
    assert Memory.objects.get(pk=first.pk).version == 1


def test_the_list_does_not_count_a_large_table(tenant: Tenant, admin_client: Any) -> None:
    memory_add(
        tenant=tenant, draft=MemoryDraft(user_id="carol", type="fact", content="I live in Ghent")
    )
    with connection.cursor() as cursor:  # what PostgreSQL believes after ANALYZE of 2M rows
        cursor.execute("UPDATE pg_class SET reltuples = 2000000 WHERE oid = 'memory'::regclass")
    with CaptureQueriesContext(connection) as queries:
        response = admin_client.get("/admin/memory_app/memory/")
    assert response.status_code == 200 and b"I live in Ghent" in response.content
    counts = [q["sql"] for q in queries if "COUNT(" in q["sql"].upper() and '"memory"' in q["sql"]]
    assert counts == [], counts
