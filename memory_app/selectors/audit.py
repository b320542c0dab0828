"""Reads for the operators' cockpit: one memory with everything around it (relations
both ways, who may read it), a user's memories by type, and the newest compaction
summaries of a set of sessions. Staff read across visibility, so these take no actor."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.db.models import Count, F, Window
from django.db.models.functions import RowNumber

from memory_app.models import Memory, MemoryRelation, MemoryScope
from memory_app.window.milestones import milestone_lines
from memory_app.window.models import ContextSummary

if TYPE_CHECKING:
    from sessions_app.models import Tenant


def memory_for_staff(*, memory_id: Any) -> Memory | None:
    """Any tenant's memory by id (staff audit), or None for a malformed or unknown id."""
    try:
        pk = uuid.UUID(str(memory_id).strip())
    except ValueError:
        return None
    return Memory.objects.select_related("tenant").defer("search_vector").filter(pk=pk).first()


@dataclass(frozen=True)
class RelationRow:
    direction: str  # "out" (this memory → other) or "in"
    type: str
    other: Memory


def memory_relations(*, memory: Memory, limit: int = 50) -> list[RelationRow]:
    """Edges from and to the memory, the other end loaded in the same query. Version
    edges (the memory superseding its own earlier versions) are left out: the page
    shows the versions themselves, with their diffs."""
    edges = MemoryRelation.objects.filter(target_version__isnull=True)
    outgoing = edges.filter(source=memory).select_related("target")[:limit]
    incoming = edges.filter(target=memory).select_related("source")[:limit]
    return [RelationRow("out", r.type, r.target) for r in outgoing] + [
        RelationRow("in", r.type, r.source) for r in incoming
    ]


def memory_audience(memory: Memory) -> list[str]:
    """Who can read the memory through the API, in words: the rule of `visibility_q`."""
    if memory.scope == MemoryScope.PUBLIC:
        return ["everyone in the tenant"]
    audience = [f"user {memory.user_id} (its owner)"]
    if memory.scope == MemoryScope.SHARED:
        audience += [f"user {user}" for user in memory.allowed_users if user != memory.user_id]
        audience += [f"anyone with role {role}" for role in memory.allowed_roles]
    return audience


def user_memories_by_type(
    *, tenant: Tenant, user_id: str, per_type: int = 25
) -> list[tuple[str, int, list[Memory]]]:
    """(type, how many, the pinned and most important first) for one user: one GROUP BY
    for the counts, one query for at most `per_type` rows of each type (index
    `memory_tenant_user_vectors`)."""
    counts = dict(
        Memory.objects.filter(tenant=tenant, user_id=user_id)
        .values_list("type")
        .annotate(n=Count("pk"))
        .values_list("type", "n")
    )
    rank = Window(
        RowNumber(),
        partition_by=[F("type")],
        order_by=[F("pinned").desc(), F("importance").desc(), F("created_at").desc()],
    )
    rows = (
        Memory.objects.filter(tenant=tenant, user_id=user_id)
        .defer("embedding", "search_vector")
        .annotate(rank=rank)
        .filter(rank__lte=per_type)
        .order_by("type", "rank")
    )
    grouped: dict[str, list[Memory]] = {}
    for memory in rows:
        grouped.setdefault(memory.type, []).append(memory)
    return [(kind, counts[kind], grouped.get(kind, [])) for kind in sorted(counts)]


@dataclass(frozen=True)
class SummaryView:
    summary: ContextSummary
    milestones: list[str]


def newest_summaries(*, session_ids: Sequence[uuid.UUID], limit: int = 10) -> list[SummaryView]:
    """The newest summaries (active or superseded) of these sessions, with their
    milestone lines, newest first."""
    if not session_ids:
        return []
    rows = ContextSummary.objects.filter(session_id__in=list(session_ids)).order_by(
        "-created_at", "-last_turn"
    )[:limit]
    return [SummaryView(s, [line for _, _, line in milestone_lines(s.milestones)]) for s in rows]


def memories_of_session(*, tenant_id: int, session_id: uuid.UUID, limit: int = 30) -> list[Memory]:
    """What was learnt in a session, newest first (index `memory_tenant_session`)."""
    return list(
        Memory.objects.filter(tenant_id=tenant_id, session_id=session_id)
        .defer("embedding", "search_vector")
        .order_by("-created_at")[:limit]
    )
