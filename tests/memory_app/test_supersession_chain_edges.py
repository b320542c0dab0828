"""The `supersedes` edges a subject's chain writes follow the chain: whatever order its
facts are told in and whichever of them is deleted, each superseded memory has exactly
one `contradicted` edge, from the memory that supersedes it, and no other."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memory_app.models import Memory, MemoryRelation, RelationType
from memory_app.services.memories import MemoryDraft, memory_add, memory_delete
from sessions_app.models import Tenant

pytestmark = pytest.mark.django_db

HOMES = {
    "I live in Rome": 2016,
    "I moved to Paris": 2018,
    "I live in Oslo": 2020,
    "I moved to Lisbon": 2022,
}


def tell(tenant: Tenant, content: str) -> Memory:
    draft = MemoryDraft(
        user_id="alice",
        type="fact",
        content=content,
        valid_from=datetime(HOMES[content], 1, 1, tzinfo=UTC),
    )
    return memory_add(tenant=tenant, draft=draft).memory


def chain_pairs(tenant: Tenant) -> set[tuple[str, str]]:
    """(newer, older) for each memory that another supersedes, by content."""
    rows = Memory.objects.filter(tenant=tenant, superseded_by__isnull=False)
    rows = rows.select_related("superseded_by")
    return {(row.superseded_by.content, row.content) for row in rows if row.superseded_by}


def contradicted_edges(tenant: Tenant) -> set[tuple[str, str]]:
    edges = MemoryRelation.objects.filter(
        tenant=tenant, type=RelationType.SUPERSEDES, target_version__isnull=True
    ).select_related("source", "target")
    assert all(edge.reason == "contradicted" for edge in edges)
    return {(edge.source.content, edge.target.content) for edge in edges}


@pytest.mark.parametrize(
    "order",
    [
        ["I live in Rome", "I live in Oslo", "I moved to Paris", "I moved to Lisbon"],
        ["I moved to Lisbon", "I live in Rome", "I live in Oslo", "I moved to Paris"],
        ["I moved to Lisbon", "I live in Oslo", "I moved to Paris", "I live in Rome"],
    ],
)
def test_the_edges_are_the_chain_whatever_the_order_told(tenant: Tenant, order: list[str]) -> None:
    told = {content: tell(tenant, content) for content in order}
    expected = {
        ("I moved to Paris", "I live in Rome"),
        ("I live in Oslo", "I moved to Paris"),
        ("I moved to Lisbon", "I live in Oslo"),
    }
    assert chain_pairs(tenant) == expected
    assert contradicted_edges(tenant) == expected
    memory_delete(memory=told["I live in Oslo"])
    relinked = {("I moved to Paris", "I live in Rome"), ("I moved to Lisbon", "I moved to Paris")}
    assert chain_pairs(tenant) == relinked
    assert contradicted_edges(tenant) == relinked


def test_a_relink_keeps_the_reason_of_the_deleted_memory_s_edge(tenant: Tenant) -> None:
    """A chain of the caller's own `supersedes` edges (reason empty): deleting its middle
    joins the two ends with the caller's reason, not `contradicted`, which no rule said."""

    def say(content: str, supersedes: Memory | None = None) -> Memory:
        relations = [(RelationType.SUPERSEDES, supersedes.pk)] if supersedes else []
        draft = MemoryDraft(user_id="alice", type="fact", content=content, relations=relations)
        return memory_add(tenant=tenant, draft=draft).memory

    first = say("The book club meets at the public library")
    middle = say("Anna hosts our reading group in her garden", supersedes=first)
    last = say("Monthly novel discussions happen over video calls", supersedes=middle)
    memory_delete(memory=middle)
    edge = MemoryRelation.objects.get(
        source=last, target=first, type=RelationType.SUPERSEDES, target_version__isnull=True
    )
    assert edge.reason == ""
    first.refresh_from_db()
    assert first.superseded_by_id == last.pk
