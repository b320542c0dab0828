"""Recalling a user's conversation turns for a context: the session's own earlier turns
and those of the user's other sessions, both through the one memory search over the
turns' memories (`memory_app.services.conversation`)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.conf import settings
from django.db import connection

from memory_app.embedding import embed_query, vector_literal
from memory_app.models import Memory, MemorySource
from memory_app.selectors.memories import Actor
from memory_app.selectors.search import MemoryFilters, memory_search
from memory_app.services.memories import THREAD_AFTER, THREAD_BEFORE

if TYPE_CHECKING:
    from sessions_app.models import ChatSession, Tenant

TURN_SOURCES = (MemorySource.CONVERSATION_TURN,)


@dataclass(frozen=True)
class RecalledTurn:
    memory: Memory
    relevance: float  # the search's fused relevance, 1 = best of its pool
    # The best cosine of the query and a memory of the turn's thread window (itself
    # included): the window is what the lexical side matches, so a turn whose neighbour
    # answers the query ("What is its name?" / "Her name is Biscuit") relates to it
    # through them.
    window_semantic: float
    lexical: float  # the search's BM25 of the turn (0: no query word in its window)

    @property
    def turn_number(self) -> int:
        return int(self.memory.thread_order or 0)


def session_turns_recall(
    *, tenant: Tenant, session: ChatSession, query: str, limit: int
) -> list[RecalledTurn]:
    """The session's own remembered turns that best answer `query`, best first."""
    filters = MemoryFilters(session_id=session.pk, sources=TURN_SOURCES)
    return _recall(tenant, session, query, limit, filters, agent_id=None)


def past_turns_recall(
    *, tenant: Tenant, session: ChatSession, query: str, limit: int
) -> list[RecalledTurn]:
    """The turns of the user's other sessions that best answer `query`, best first: of
    every agent's sessions unless ENGRAM_RECALL_ACROSS_AGENTS is off, then only of the
    session's agent."""
    filters = MemoryFilters(exclude_session_id=session.pk, sources=TURN_SOURCES)
    agent_id = None if settings.ENGRAM_RECALL_ACROSS_AGENTS else session.agent_id
    return _recall(tenant, session, query, limit, filters, agent_id=agent_id)


def _recall(
    tenant: Tenant,
    session: ChatSession,
    query: str,
    limit: int,
    filters: MemoryFilters,
    agent_id: str | None,
) -> list[RecalledTurn]:
    if not query.strip() or limit <= 0:
        return []
    vector = embed_query(query)
    hits = memory_search(
        tenant=tenant,
        actor=Actor(user_id=session.user_id),
        query=query,
        user_id=session.user_id,
        agent_id=agent_id or None,
        limit=limit,
        query_embedding=vector,
        filters=filters,
    ).hits
    around = _window_cosines(tenant.pk, session.user_id, [hit.memory for hit in hits], vector)
    return [
        RecalledTurn(
            memory=hit.memory,
            relevance=float(hit.parts.get("relevance", 0.0)),
            window_semantic=max(
                float(hit.parts.get("semantic", 0.0)), around.get(hit.memory.pk, 0.0)
            ),
            lexical=float(hit.parts.get("lexical", 0.0)),
        )
        for hit in hits
    ]


def _window_cosines(
    tenant_id: int, user_id: str, memories: list[Memory], vector: list[float]
) -> dict[uuid.UUID, float]:
    """For each memory, the best cosine of the query and the memories of its thread
    window (THREAD_BEFORE before it to THREAD_AFTER after it): one statement."""
    threaded = [m for m in memories if m.thread_key and m.thread_order is not None]
    if not threaded:
        return {}
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT hit.id, max(1 - (n.embedding <=> %(q)s::vector))
            FROM unnest(%(ids)s::uuid[], %(keys)s::varchar[], %(orders)s::bigint[])
                AS hit(id, thread_key, thread_order)
            JOIN memory n
              ON n.tenant_id = %(tenant)s AND n.user_id = %(user)s
             AND n.thread_key = hit.thread_key
             AND n.thread_order BETWEEN hit.thread_order - %(before)s
                                    AND hit.thread_order + %(after)s
            GROUP BY hit.id
            """,
            {
                "q": vector_literal(vector),
                "ids": [m.pk for m in threaded],
                "keys": [m.thread_key for m in threaded],
                "orders": [m.thread_order for m in threaded],
                "tenant": tenant_id,
                "user": user_id,
                "before": THREAD_BEFORE,
                "after": THREAD_AFTER,
            },
        )
        return {row[0]: float(row[1]) for row in cursor.fetchall()}
