"""What a memory add is asked (`MemoryDraft`) and answers (`AddResult`), and the unsaved
row a draft becomes when it is created. The two dataclasses are re-exported by
memory_app.services.memories, where callers import them."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memory_app.models import Memory, MemoryScope, MemorySource
from memory_app.services.memory_text import content_hash
from memory_app.services.supersession import subject_of

if TYPE_CHECKING:
    from sessions_app.models import Tenant


@dataclass
class MemoryDraft:
    """What a caller wants remembered; validated at the edge (serializers)."""

    user_id: str
    type: str
    content: str
    agent_id: str = ""
    scope: str = MemoryScope.PRIVATE
    summary: str = ""
    structured: dict[str, Any] = field(default_factory=dict)
    tags: Sequence[str] = ()
    importance: float = 0.5
    confidence: float = 1.0
    source: str = MemorySource.EXPLICIT_USER_INPUT
    session_id: uuid.UUID | None = None
    allowed_users: Sequence[str] = ()
    allowed_roles: Sequence[str] = ()
    pinned: bool = False
    relations: Sequence[tuple[str, uuid.UUID]] = ()  # (relation type, target memory id)
    metadata: dict[str, Any] = field(default_factory=dict)
    thread_key: str = ""
    thread_order: int | None = None
    occurred_at: datetime | None = None
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    subject: str = ""  # blank: read from the content by rules (memory_app.subjects)


@dataclass
class AddResult:
    action: str  # "created" | "merged" | "duplicate"
    memory: Memory
    similarity: float | None = None


def new_memory(
    tenant: Tenant,
    draft: MemoryDraft,
    vector: list[float],
    model_name: str,
    now: datetime,
    thread_key: str,
    thread_order: int | None,
) -> Memory:
    """The unsaved row of a new memory."""
    return Memory(
        tenant=tenant,
        user_id=draft.user_id,
        agent_id=draft.agent_id,
        type=draft.type,
        scope=draft.scope,
        content=draft.content,
        summary=draft.summary,
        structured=draft.structured,
        metadata=draft.metadata,
        content_hash=content_hash(draft.content),
        embedding=vector,
        embedding_model=model_name,
        importance=draft.importance,
        confidence=draft.confidence,
        tags=sorted(set(draft.tags)),
        source=draft.source,
        session_id=draft.session_id,
        created_at=now,
        updated_at=now,
        last_accessed_at=now,
        pinned=draft.pinned,
        allowed_users=sorted(set(draft.allowed_users)),
        allowed_roles=sorted(set(draft.allowed_roles)),
        thread_key=thread_key,
        thread_order=thread_order,
        occurred_at=draft.occurred_at,
        valid_from=draft.valid_from,
        valid_to=draft.valid_to,
        subject=subject_of(draft),
    )
