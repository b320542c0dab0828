"""Reading memories under access control.

Who is acting is explicit in every read (`Actor`): the API key only proves the tenant,
while memories are private to end users. No actor given means anonymous: only public
memories (and shared ones granted to a role the caller claims). The rule itself is
memory_app.selectors.visibility's.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import TYPE_CHECKING, Any

from django.db.models import Count, Q, QuerySet
from django.db.models.functions import TruncDay

from memory_app.models import Memory, MemoryRelation, MemoryVersion
from memory_app.selectors.visibility import visibility_q
from sessions_app.errors import Forbidden, NotFound

if TYPE_CHECKING:
    from sessions_app.models import Tenant


@dataclass(frozen=True)
class Actor:
    """The end user (and their roles) on whose behalf an agent reads memories.

    `operator` is a staff member in the cockpit, who must see every memory of a tenant
    to audit it; the API never builds such an actor (an API key is never an operator)."""

    user_id: str | None = None
    roles: tuple[str, ...] = ()
    operator: bool = False


def memory_list(
    *,
    tenant: Tenant,
    actor: Actor,
    user_id: str | None = None,
    agent_id: str | None = None,
    memory_type: str | None = None,
    tag: str | None = None,
    scope: str | None = None,
    pinned: bool | None = None,
    decay_below: float | None = None,
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
    if pinned is not None:
        memories = memories.filter(pinned=pinned)
    if decay_below is not None:
        memories = memories.filter(decay_score__lt=decay_below)
    return memories.defer("embedding", "search_vector").prefetch_related("relations")


# The 404 of every memory read without an acting user, whether the memory exists or not
# (so it discloses nothing): a user's private memory is only visible on their behalf.
NOT_FOUND_WITHOUT_ACTOR = "Not found. A user's private memory is visible with acting_user_id."


def memory_get(*, tenant: Tenant, actor: Actor, memory_id: Any) -> Memory:
    """One memory the actor may see; 404 otherwise (also for other tenants' ids, and for
    memories that exist but are not visible: their existence is not disclosed)."""
    missing = NotFound(NOT_FOUND_WITHOUT_ACTOR if actor.user_id is None else None)
    try:
        pk = uuid.UUID(str(memory_id))
    except ValueError as exc:
        raise missing from exc
    memory = (
        Memory.objects.filter(tenant=tenant, pk=pk)
        .filter(visibility_q(actor))
        .prefetch_related("relations")
        .first()
    )
    if memory is None:
        raise missing
    return memory


def memory_writable_by(memory: Memory, actor: Actor) -> bool:
    """Who may change or delete a memory: its owner, an operator, and the tenant's own
    backend (a request acting for no end user: neither `acting_user_id` nor
    `acting_roles`). The users and roles a shared memory lists may read it, not write it;
    nor may anyone else a public memory reaches."""
    if actor.operator or (actor.user_id is None and not actor.roles):
        return True
    return actor.user_id == memory.user_id


def memory_get_for_write(*, tenant: Tenant, actor: Actor, memory_id: Any) -> Memory:
    """`memory_get` for a change (update, delete, revert, relations): 404 when the actor
    may not read the memory, 403 `permission_denied` when they may read but not write
    it (`memory_writable_by`)."""
    memory = memory_get(tenant=tenant, actor=actor, memory_id=memory_id)
    if not memory_writable_by(memory, actor):
        acting = f"user {actor.user_id!r}" if actor.user_id else "a user acting by role"
        raise Forbidden(
            f"Only the memory's owner ({memory.user_id!r}) may change it; {acting} may read "
            "it but not change or delete it."
        )
    return memory


def current_twin(memory: Memory) -> Memory | None:
    """Another current memory (not superseded) of the memory's user, agent and type that
    says its text (`content_hash`): one text is current once
    (memory_current_content_unique)."""
    return (
        Memory.objects.filter(
            tenant_id=memory.tenant_id,
            user_id=memory.user_id,
            agent_id=memory.agent_id,
            type=memory.type,
            content_hash=memory.content_hash,
            superseded_by__isnull=True,
        )
        .exclude(pk=memory.pk)
        .first()
    )


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


def memory_relations(*, memory: Memory) -> list[dict[str, Any]]:
    """Every edge touching `memory`, outgoing then incoming, oldest first, each with
    the other end's id and the direction seen from `memory`. A version edge (the memory
    superseding one of its own earlier versions) is listed once, as outgoing."""
    rows = MemoryRelation.objects.filter(Q(source=memory) | Q(target=memory)).order_by(
        "created_at", "pk"
    )
    out: list[dict[str, Any]] = []
    for row in rows:
        outgoing = row.source_id == memory.pk
        out.append(
            {
                "id": row.pk,
                "type": row.type,
                "direction": "outgoing" if outgoing else "incoming",
                "source_id": row.source_id,
                "target_id": row.target_id,
                "other_id": row.target_id if outgoing else row.source_id,
                "target_version": row.target_version,
                "reason": row.reason,
                "created_at": row.created_at,
            }
        )
    out.sort(key=lambda item: item["direction"] != "outgoing")
    return out


def memory_neighbours(
    *, tenant: Tenant, actor: Actor, memory_ids: list[uuid.UUID], limit: int = 12
) -> list[tuple[uuid.UUID, str, Memory]]:
    """The memories one edge away from `memory_ids` (either direction), visible to
    `actor`, not among `memory_ids`: (the memory it is related to, edge type, neighbour).
    Two queries, whatever the number of ids. Version edges are not neighbours: the
    text a memory superseded is stale, and the memory itself is already there."""
    if not memory_ids:
        return []
    edges = list(
        MemoryRelation.objects.filter(tenant=tenant, target_version__isnull=True)
        .filter(Q(source_id__in=memory_ids) | Q(target_id__in=memory_ids))
        .order_by("created_at", "pk")
        .values_list("source_id", "target_id", "type")[: limit * 4]
    )
    wanted = set(memory_ids)
    pairs: dict[uuid.UUID, tuple[uuid.UUID, str]] = {}
    for source, target, kind in edges:
        anchor, other = (source, target) if source in wanted else (target, source)
        if other not in wanted:
            pairs.setdefault(other, (anchor, kind))
    visible = memory_list(tenant=tenant, actor=actor).in_bulk(list(pairs)[: limit * 2])
    return [(pairs[pk][0], pairs[pk][1], memory) for pk, memory in visible.items() if pk in pairs][
        :limit
    ]


def memories_created_per_day(
    *, start: datetime, end: datetime, tenant_id: int | None = None
) -> list[tuple[date, int]]:
    """(day, new memories) for each UTC day in [start, end) that has any, oldest first,
    of one tenant or all: the operators' memory-growth panel (cockpit) reads it, since
    the spend dashboard's own app does not read memory_app."""
    rows = Memory.objects.filter(created_at__gte=start, created_at__lt=end)
    if tenant_id is not None:
        rows = rows.filter(tenant_id=tenant_id)
    grouped = (
        rows.annotate(day=TruncDay("created_at", tzinfo=UTC))
        .values("day")
        .annotate(count=Count("pk"))
        .order_by("day")
    )
    return [(row["day"].date(), row["count"]) for row in grouped]
