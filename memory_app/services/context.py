"""How the context assembly reaches long-term memory: the hybrid memory search, as the
acting user (by default the session's user) would see it. Visibility is enforced by the
search itself; the context only ranks what it is given.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from memory_app.selectors.memories import Actor
from memory_app.selectors.search import memory_search
from memory_app.services.memories import memory_record_access
from sessions_app.models import ChatSession, Tenant


@dataclass(frozen=True)
class MemoryCandidate:
    """One memory the provider proposes: what the context line says and its signals."""

    key: str  # stable id, e.g. the memory's pk
    text: str
    at: datetime | None  # last updated/accessed, for recency
    importance: float = 0.5  # 0..1, the signal term


def memory_candidates(
    *,
    tenant: Tenant,
    session: ChatSession,
    query: str,
    acting_user_id: str | None,
    acting_roles: list[str],
    limit: int = 12,
) -> list[MemoryCandidate]:
    """The memories that best answer `query` for whoever acts in this session; their
    access statistics count the read, as a search's do."""
    if not query.strip():
        return []
    actor = Actor(user_id=acting_user_id or session.user_id, roles=tuple(acting_roles))
    hits = memory_search(tenant=tenant, actor=actor, query=query, limit=limit).hits
    memory_record_access(memory_ids=[hit.memory.pk for hit in hits])
    return [
        MemoryCandidate(
            key=str(hit.memory.pk),
            text=hit.memory.summary or hit.memory.content,
            at=hit.memory.last_accessed_at or hit.memory.updated_at,
            importance=float(hit.memory.importance),
        )
        for hit in hits
    ]
