"""Near-duplicate merge: a new memory close enough to a stored one of the same user, agent,
type and scope (cosine ≥ ENGRAM_MEMORY_MERGE_THRESHOLD) and saying the same thing becomes a
new version of it instead of a second row. Saying the same thing: the same id-like
tokens, no other value of the same subject, and not each text saying something the
other does not (two facts about one person are two memories, not one text replacing
the other), and not one negating the other ("I prefer aisle seats" / "I do not prefer
aisle seats": the newer is its own memory, and of a fact, preference or profile it
supersedes the older). The newer statement wins the text; tags, structured fields and
metadata accumulate.

The same agent: `agent_id` exactly, a blank one being the user's memories written for no
agent. Search and list filtered by `agent_id` find that agent's memories only, so a
memory written under one agent must stay under it: merged into another agent's memory
(or an agent-less one) it would be found under that agent instead, and its tags would
change that agent's record."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import connection
from psycopg import sql

from memory_app.embedding import vector_literal
from memory_app.models import Memory
from memory_app.services.memory_relations import relations_add
from memory_app.services.memory_text import (
    id_tokens,
    reverse_each_other,
    say_different_things,
)
from memory_app.services.memory_threads import refresh_thread_window
from memory_app.services.memory_versions import version_snapshot
from memory_app.services.supersession import states_other_value
from memory_app.subjects import Statement

if TYPE_CHECKING:
    from memory_app.services.memory_drafts import MemoryDraft
    from sessions_app.models import Tenant


NEAREST_CANDIDATES = 5  # a merge target is among the few nearest, or there is none
_SAME_KIND = ("tenant_id", "user_id", "agent_id", "type", "scope")
_DISTANCE = sql.SQL("{} <=> %(q)s::vector").format(sql.Identifier("embedding"))
# The draft's nearest current memories of the same kind (`%(tenant_id)s` … `%(scope)s`,
# the query vector `%(q)s`): an exact scan at full precision, no index approximation.
NEAREST_SAME_KIND_SQL = sql.SQL(
    "SELECT {id}, 1 - ({distance}) AS similarity FROM {table}"
    " WHERE {same_kind} AND {superseded_by} IS NULL"
    " ORDER BY {distance} LIMIT {limit}"
).format(
    id=sql.Identifier("id"),
    distance=_DISTANCE,
    table=sql.Identifier(Memory._meta.db_table),
    same_kind=sql.SQL(" AND ").join(
        sql.SQL("{} = {}").format(sql.Identifier(column), sql.Placeholder(column))
        for column in _SAME_KIND
    ),
    superseded_by=sql.Identifier("superseded_by_id"),
    limit=sql.Literal(NEAREST_CANDIDATES),
)


@dataclass(frozen=True)
class Near:
    """A stored memory close to a draft. `reverses`: one of the two negates the other, so
    the draft is a new memory, never merged into it."""

    memory: Memory
    similarity: float
    reverses: bool


def nearest_same_kind(
    tenant: Tenant, draft: MemoryDraft, vector: list[float], statement: Statement | None
) -> Near | None:
    """The closest memory of the same user, agent, type and scope at full precision (an
    exact scan over one user's memories of one type: small, and no index approximation)
    that says what the draft says, else the closest that says its negation (`reverses`).
    One that gives the draft's subject another value ("I live in Porto" / "I live in
    Lisbon") is another fact however close, so neither (memory_app.services.supersession).
    A superseded memory is history, never rewritten by a merge: a draft that restates it
    meets the memory that superseded it instead."""
    threshold = float(settings.ENGRAM_MEMORY_MERGE_THRESHOLD)
    rows = _nearest_rows(tenant, draft, vector)
    candidates = [(pk, sim) for pk, sim in rows if sim >= threshold]
    if not candidates:
        return None
    memories = Memory.objects.select_for_update().in_bulk([pk for pk, _ in candidates])
    reversed_near = None
    for pk, similarity in candidates:
        memory = memories.get(pk)
        if memory is None or not _same_statement_apart_from_polarity(memory, draft, statement):
            continue
        if not reverse_each_other(memory.content, draft.content):
            return Near(memory, similarity, reverses=False)
        reversed_near = reversed_near or Near(memory, similarity, reverses=True)
    return reversed_near


def _nearest_rows(
    tenant: Tenant, draft: MemoryDraft, vector: list[float]
) -> list[tuple[Any, float]]:
    """(id, cosine) of the draft's nearest current memories of the same kind."""
    params: dict[str, Any] = {
        "q": vector_literal(vector),
        "tenant_id": tenant.pk,
        "user_id": draft.user_id,
        "agent_id": draft.agent_id,
        "type": draft.type,
        "scope": draft.scope,
    }
    with connection.cursor() as cursor:
        cursor.execute(NEAREST_SAME_KIND_SQL, params)
        return [(row[0], float(row[1])) for row in cursor.fetchall()]


def _same_statement_apart_from_polarity(
    memory: Memory, draft: MemoryDraft, statement: Statement | None
) -> bool:
    """Whether `memory` and the draft say the same thing, or one its negation: the same
    id-like tokens, no other value of the draft's subject, and no content words of their
    own on both sides."""
    return (
        id_tokens(memory.content) == id_tokens(draft.content)
        and not states_other_value(memory, statement)
        and not say_different_things(memory.content, draft.content)
    )


def merge_into(
    memory: Memory,
    draft: MemoryDraft,
    statement: Statement | None,
    digest: str,
    vector: list[float],
    model_name: str,
    now: datetime,
) -> None:
    """The newer statement wins the text; everything else accumulates."""
    version_snapshot(memory, replaced_by="merged", now=now)
    memory.subject = statement.subject if statement is not None else memory.subject
    memory.content = draft.content
    memory.summary = draft.summary or memory.summary
    memory.structured = {**memory.structured, **draft.structured}
    memory.metadata = {**memory.metadata, **draft.metadata}
    memory.content_hash = digest
    memory.embedding = vector
    memory.embedding_model = model_name
    memory.tags = sorted(set(memory.tags) | set(draft.tags))
    memory.importance = max(memory.importance, draft.importance)
    memory.confidence = max(memory.confidence, draft.confidence)
    memory.version += 1
    memory.updated_at = now
    memory.last_accessed_at = now  # re-stated: as good as read
    memory.save(
        update_fields=[
            "content",
            "summary",
            "structured",
            "metadata",
            "content_hash",
            "embedding",
            "embedding_model",
            "tags",
            "importance",
            "confidence",
            "version",
            "updated_at",
            "last_accessed_at",
            "subject",
        ]
    )
    refresh_thread_window(memory)
    relations_add(memory, draft.relations)
