"""The search reads its hits' rows with a prepared statement and `Model.from_db`
(memory_app.selectors.search.hydration), not through the ORM: every field it reads must
be the ORM's value, JSON decoded, the edges listed, and the fields it leaves out still
load on access."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from memory_app.models import Memory, MemoryRelation
from memory_app.selectors.search.hydration import HIT_FIELDS, hit_rows
from memory_app.services.memories import MemoryDraft, memory_add_many
from sessions_app.models import Tenant

pytestmark = pytest.mark.django_db


def test_hit_rows_are_the_orm_s_memories(tenant: Tenant) -> None:
    drafts = [
        MemoryDraft(
            user_id="ana", type="fact", content="Ana keeps bees on the roof.",
            metadata={"source": {"app": "chat", "n": 3}, "tags": ["x", "ü"]},
            tags=("bees", "roof"), scope="shared", allowed_users=("ben",),
            occurred_at=datetime(2024, 5, 1, 12, 30, tzinfo=UTC),
        ),
        MemoryDraft(
            user_id="ana", type="preference", content="Ana prefers green tea.",
            structured={"drink": "tea", "strength": 2},
        ),
        MemoryDraft(user_id="ben", type="fact", content="Ben rides to work on a tandem."),
    ]  # fmt: skip
    results = memory_add_many(tenant=tenant, drafts=drafts)
    first, second, third = (result.memory for result in results)
    MemoryRelation.objects.create(tenant=tenant, source=first, target=third, type="related_to")
    MemoryRelation.objects.create(tenant=tenant, source=first, target=second, type="derived_from")

    hits = hit_rows([first.pk, second.pk, third.pk])

    assert set(hits) == {first.pk, second.pk, third.pk}
    for pk, hit in hits.items():
        stored = Memory.objects.get(pk=pk)
        for field in HIT_FIELDS:
            value, orm_value = getattr(hit, field.attname), getattr(stored, field.attname)
            assert value == orm_value, field.name
            if isinstance(orm_value, datetime):  # the same zone, not only the same instant
                assert value.tzinfo is orm_value.tzinfo, field.name
        assert hit.embedding is not None and list(hit.embedding) == list(stored.embedding)
        assert not hit._state.adding and hit._state.db == "default"
    assert hits[second.pk].structured == {"drink": "tea", "strength": 2}
    assert hits[first.pk].metadata["source"] == {"app": "chat", "n": 3}
    edges = hits[first.pk].search_edges  # type: ignore[attr-defined]
    assert edges == [["related_to", str(third.pk)], ["derived_from", str(second.pk)]]
    assert hits[third.pk].search_edges == []  # type: ignore[attr-defined]


def test_ids_not_stored_are_left_out(tenant: Tenant) -> None:
    (result,) = memory_add_many(
        tenant=tenant, drafts=[MemoryDraft(user_id="ana", type="fact", content="Ana sings.")]
    )
    assert list(hit_rows([result.memory.pk, uuid.uuid4()])) == [result.memory.pk]
    assert hit_rows([]) == {}
