"""The read behind the cockpit's memory explorer: a tenant's memories found by id, by
hybrid search, or listed newest first, under the same filters. Staff audit every memory
of a tenant, so it reads as the operator: visibility is what they inspect, not a limit."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from django.db.models import QuerySet

from memory_app.models import Memory
from memory_app.selectors.audit import memory_for_staff
from memory_app.selectors.memories import Actor, memory_list
from memory_app.selectors.search import MemoryFilters, SearchHit, memory_search

if TYPE_CHECKING:
    from sessions_app.models import Tenant

OPERATOR = Actor(operator=True)


@dataclass(frozen=True)
class ExplorerCriteria:
    """What the explorer is asked: a query (words, or a memory id) and the filters; None
    (or an empty query) means no condition."""

    query: str = ""
    memory_type: str | None = None
    tag: str | None = None
    user_id: str | None = None
    agent_id: str | None = None
    scope: str | None = None
    pinned: bool | None = None
    decay_below: float | None = None


@dataclass(frozen=True)
class Exploration:
    """What the explorer shows: for a memory id, the memory (None if the tenant has no
    such memory); for words, the search's hits; without a query, the memories newest
    first (`listed`, for the caller to page)."""

    exact_id: uuid.UUID | None = None
    exact: Memory | None = None
    hits: list[SearchHit] = field(default_factory=list)
    listed: QuerySet[Memory] | None = None


def memory_id_in(query: str) -> uuid.UUID | None:
    """The memory id `query` is, when the whole query is one."""
    try:
        return uuid.UUID(query.strip())
    except ValueError:
        return None


def memory_explore(*, tenant: Tenant, criteria: ExplorerCriteria, limit: int) -> Exploration:
    """The tenant's memories that answer `criteria`: the one a memory-id query names, the
    `limit` best search hits of a query, or, without a query, all of them newest first."""
    query = criteria.query
    if not query:
        return Exploration(listed=_memories_newest_first(tenant=tenant, criteria=criteria))
    exact_id = memory_id_in(query)
    if exact_id is not None:
        found = memory_for_staff(memory_id=exact_id)
        exact = found if found is not None and found.tenant_id == tenant.pk else None
        return Exploration(exact_id=exact_id, exact=exact)
    return Exploration(hits=_memories_searched(tenant=tenant, criteria=criteria, limit=limit))


def _memories_searched(
    *, tenant: Tenant, criteria: ExplorerCriteria, limit: int
) -> list[SearchHit]:
    return memory_search(
        tenant=tenant,
        actor=OPERATOR,
        query=criteria.query,
        types=[criteria.memory_type] if criteria.memory_type else None,
        tags=[criteria.tag] if criteria.tag else None,
        limit=limit,
        user_id=criteria.user_id,
        agent_id=criteria.agent_id,
        filters=MemoryFilters(
            scope=criteria.scope, pinned=criteria.pinned, decay_below=criteria.decay_below
        ),
    ).hits


def _memories_newest_first(*, tenant: Tenant, criteria: ExplorerCriteria) -> QuerySet[Memory]:
    return memory_list(
        tenant=tenant,
        actor=OPERATOR,
        memory_type=criteria.memory_type,
        tag=criteria.tag,
        user_id=criteria.user_id,
        agent_id=criteria.agent_id,
        scope=criteria.scope,
        pinned=criteria.pinned,
        decay_below=criteria.decay_below,
    ).order_by("-created_at", "-pk")
