"""Reading memories under access control.

Who is acting is explicit in every read (`Actor`): the API key only proves the tenant,
while memories are private to end users. No actor given means anonymous: only public
memories (and shared ones granted to a role the caller claims).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.db.models import Q, QuerySet

from memory_app.models import Memory, MemoryScope, MemoryVersion
from sessions_app.errors import NotFound

if TYPE_CHECKING:
    from sessions_app.models import Tenant


@dataclass(frozen=True)
class Actor:
    """The end user (and their roles) on whose behalf an agent reads memories."""

    user_id: str | None = None
    roles: tuple[str, ...] = ()


def visibility_q(actor: Actor) -> Q:
    """private → its user; shared → its user, listed users, listed roles; public → all."""
    visible = Q(scope=MemoryScope.PUBLIC)
    if actor.roles:
        visible |= Q(scope=MemoryScope.SHARED, allowed_roles__overlap=list(actor.roles))
    if actor.user_id:
        visible |= Q(scope=MemoryScope.PRIVATE, user_id=actor.user_id)
        visible |= Q(scope=MemoryScope.SHARED) & (
            Q(user_id=actor.user_id) | Q(allowed_users__contains=[actor.user_id])
        )
    return visible


def visibility_sql(actor: Actor, alias: str = "m") -> tuple[str, dict[str, Any]]:
    """The same rule as `visibility_q`, for the raw search SQL."""
    sql = (
        f"({alias}.scope = 'public'"
        f" OR ({alias}.scope = 'shared' AND {alias}.allowed_roles && %(acting_roles)s::varchar[])"
        f" OR ({alias}.scope = 'private' AND {alias}.user_id = %(acting_user)s)"
        f" OR ({alias}.scope = 'shared' AND ({alias}.user_id = %(acting_user)s"
        f" OR %(acting_user)s = ANY({alias}.allowed_users))))"
    )
    return sql, {"acting_user": actor.user_id or None, "acting_roles": list(actor.roles)}


def memory_list(
    *,
    tenant: Tenant,
    actor: Actor,
    user_id: str | None = None,
    agent_id: str | None = None,
    memory_type: str | None = None,
    tag: str | None = None,
    scope: str | None = None,
) -> QuerySet[Memory]:
    memories = Memory.objects.filter(tenant=tenant).filter(visibility_q(actor))
    if user_id:
        memories = memories.filter(user_id=user_id)
    if agent_id:
        memories = memories.filter(agent_id=agent_id)
    if memory_type:
        memories = memories.filter(type=memory_type)
    if tag:
        memories = memories.filter(tags__contains=[tag])
    if scope:
        memories = memories.filter(scope=scope)
    return memories.defer("embedding", "search_vector").prefetch_related("relations")


def memory_get(*, tenant: Tenant, actor: Actor, memory_id: Any) -> Memory:
    """One memory the actor may see; 404 otherwise (also for other tenants' ids, and for
    memories that exist but are not visible: their existence is not disclosed)."""
    try:
        pk = uuid.UUID(str(memory_id))
    except ValueError as exc:
        raise NotFound() from exc
    memory = (
        Memory.objects.filter(tenant=tenant, pk=pk)
        .filter(visibility_q(actor))
        .prefetch_related("relations")
        .first()
    )
    if memory is None:
        raise NotFound()
    return memory


def memory_history(*, memory: Memory) -> list[dict[str, Any]]:
    """Every version, oldest first; the last one is the current text."""
    rows: list[dict[str, Any]] = [
        {
            "version": v.version,
            "content": v.content,
            "summary": v.summary,
            "structured": v.structured,
            "tags": v.tags,
            "importance": v.importance,
            "confidence": v.confidence,
            "scope": v.scope,
            "source": v.source,
            "valid_from": v.valid_from,
            "replaced_at": v.replaced_at,
            "replaced_by": v.replaced_by,
            "current": False,
        }
        for v in MemoryVersion.objects.filter(memory=memory).order_by("version")
    ]
    rows.append(
        {
            "version": memory.version,
            "content": memory.content,
            "summary": memory.summary,
            "structured": memory.structured,
            "tags": memory.tags,
            "importance": memory.importance,
            "confidence": memory.confidence,
            "scope": memory.scope,
            "source": memory.source,
            "valid_from": memory.updated_at,
            "replaced_at": None,
            "replaced_by": None,
            "current": True,
        }
    )
    return rows
