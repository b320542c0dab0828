"""Seams through which the context assembly reaches long-term memory.

`MEMORY_CANDIDATES` is the function that proposes memories for a session's context. The
default proposes none until the long-term memory app provides one: the lead wires it to
the hybrid memory search at merge (`context_memory_provider_register(fn)` from
`memory_app.apps.ready`), and that search is where visibility (user, agent, scope,
acting user and roles) is enforced — the context only ranks what it is given.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from sessions_app.models import ChatSession, Tenant


@dataclass(frozen=True)
class MemoryCandidate:
    """One memory the provider proposes: what the context line says and its signals."""

    key: str  # stable id, e.g. the memory's pk
    text: str
    at: datetime | None  # last updated/accessed, for recency
    importance: float = 0.5  # 0..1, the signal term


MemoryProvider = Callable[
    [Tenant, ChatSession, str, str | None, list[str], int], list[MemoryCandidate]
]


def no_memories(
    tenant: Tenant,
    session: ChatSession,
    query: str,
    acting_user_id: str | None,
    acting_roles: list[str],
    limit: int,
) -> list[MemoryCandidate]:
    """Default: none. Without a Memory model there is nothing to propose; with one, its
    search is registered in its place (it alone knows the visibility rules), so until
    then this proposes nothing rather than guess at visibility."""
    return []


MEMORY_CANDIDATES: MemoryProvider = no_memories


def context_memory_provider_register(provider: MemoryProvider) -> None:
    global MEMORY_CANDIDATES
    MEMORY_CANDIDATES = provider


def memory_candidates(
    *,
    tenant: Tenant,
    session: ChatSession,
    query: str,
    acting_user_id: str | None,
    acting_roles: list[str],
    limit: int = 12,
) -> list[MemoryCandidate]:
    return MEMORY_CANDIDATES(tenant, session, query, acting_user_id, acting_roles, limit)
