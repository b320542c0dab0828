"""Memory search on behalf of an end user: the one use case behind `POST /memories/search`
and the MCP `memory_search` tool, so both ways in see the same memories in the same order
and count the same reads."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from memory_app.selectors.memories import Actor
from memory_app.selectors.search import MemoryFilters, SearchOutcome, memory_search
from memory_app.services.memories import memory_record_access

if TYPE_CHECKING:
    from sessions_app.models import Tenant


def memory_search_for_actor(
    *,
    tenant: Tenant,
    query: str,
    user_id: str | None = None,
    agent_id: str | None = None,
    types: Sequence[str] | None = None,
    tags: Sequence[str] | None = None,
    limit: int = 10,
    acting_user_id: str | None = None,
    acting_roles: Sequence[str] = (),
    filters: MemoryFilters | None = None,
    as_of: datetime | None = None,
) -> SearchOutcome:
    """The memories that best answer `query`, as the acting user may see them (the acting
    user defaults to `user_id`: an agent searching one user's memories acts for that user),
    best first; every hit returned counts as a read. `as_of`: when the question is asked
    (its time phrases are read against it)."""
    actor = Actor(user_id=acting_user_id or user_id or None, roles=tuple(acting_roles))
    outcome = memory_search(
        tenant=tenant,
        actor=actor,
        query=query,
        user_id=user_id,
        agent_id=agent_id,
        types=types,
        tags=tags,
        limit=limit,
        filters=filters,
        as_of=as_of,
    )
    memory_record_access(memory_ids=[hit.memory.pk for hit in outcome.hits])
    return outcome
