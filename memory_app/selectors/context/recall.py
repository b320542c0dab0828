"""Recalling a user's conversation turns for a context: the session's own earlier turns
and those of the user's other sessions, both through the one memory search over the
turns' memories (written by `memory_app.services.conversation`), then one statement of
its own for the cosine over each found turn's thread window (`window_cosines_statement`,
snapshot-tested) and one of the turn log for where each turn's user message ends in its
memory's text (`user_message_lengths`): the memory holds the user's message and the
reply as one text, which is what the search reads; the context tells them apart."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from django.conf import settings
from django.db import connection
from psycopg import sql

from memory_app.embedding import embed_query, vector_literal
from memory_app.models import Memory, MemorySource
from memory_app.selectors.memories import Actor
from memory_app.selectors.search import MemoryFilters, memory_search
from memory_app.selectors.search.after_question import happened_by
from memory_app.selectors.thread_window import THREAD_AFTER, THREAD_BEFORE
from sessions_app.selectors.turns import user_message_lengths

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
    # through them. For a query about a time alone, the turn's time credit where higher
    # (`SearchOutcome.related`).
    window_semantic: float
    # The search relates it to the query by more than its vector (a query word in its
    # window, or the time the query names): `SearchHit.beyond_vector`.
    supported: bool
    # How many characters of the memory's text are the user's message (0: the turn has
    # none); None when the turn log does not say (no such live turn).
    user_chars: int | None = None

    @property
    def turn_number(self) -> int:
        return int(self.memory.thread_order or 0)

    @property
    def said(self) -> tuple[str, str] | None:
        """(the user's message, the reply) as the memory's text holds them (the one
        after the other, joined by a newline, the one without text left out:
        `turn_memory_text`), or None when the text cannot be split so."""
        content, length = self.memory.content, self.user_chars
        if length is None:
            return None
        if length == 0:
            return "", content
        if length >= len(content):
            return content, ""
        if content[length] != "\n":
            return None
        return content[:length], content[length + 1 :]


def session_turns_recall(
    *,
    tenant: Tenant,
    session: ChatSession,
    query: str,
    limit: int,
    as_of: datetime,
    said_by: datetime | None = None,
) -> list[RecalledTurn]:
    """The session's own remembered turns that best answer `query` asked at `as_of`
    (its time phrases boost the turns said then), best first; only those that had
    happened by `said_by` when given (the session as it stood then), else by
    `happened_by(as_of)`."""
    filters = MemoryFilters(
        session_id=session.pk, sources=TURN_SOURCES, occurred_by=said_by or happened_by(as_of)
    )
    actor = Actor(user_id=session.user_id)
    return _recall(tenant, session, query, limit, filters, None, as_of, actor)


def past_turns_recall(
    *,
    tenant: Tenant,
    session: ChatSession,
    query: str,
    limit: int,
    as_of: datetime,
    actor: Actor,
) -> list[RecalledTurn]:
    """The turns of the user's other sessions that best answer `query`, best first: of
    every agent's sessions unless ENGRAM_RECALL_ACROSS_AGENTS is off, then only of the
    session's agent. Only those `actor` may see (another acting user sees none of the
    user's private turns), and for a question asked in the past only those that had
    happened by then (`happened_by`)."""
    filters = MemoryFilters(
        exclude_session_id=session.pk, sources=TURN_SOURCES, occurred_by=happened_by(as_of)
    )
    agent_id = None if settings.ENGRAM_RECALL_ACROSS_AGENTS else session.agent_id
    return _recall(tenant, session, query, limit, filters, agent_id, as_of, actor)


def _recall(
    tenant: Tenant,
    session: ChatSession,
    query: str,
    limit: int,
    filters: MemoryFilters,
    agent_id: str | None,
    as_of: datetime,
    actor: Actor,
) -> list[RecalledTurn]:
    if not query.strip() or limit <= 0:
        return []
    vector = embed_query(query)
    outcome = memory_search(
        tenant=tenant,
        actor=actor,
        query=query,
        user_id=session.user_id,
        agent_id=agent_id or None,
        limit=limit,
        query_embedding=vector,
        filters=filters,
        as_of=as_of,
    )
    hits = outcome.hits
    around = _window_cosines(tenant.pk, session.user_id, [hit.memory for hit in hits], vector)
    user_chars = _user_chars([hit.memory for hit in hits])
    return [
        RecalledTurn(
            memory=hit.memory,
            relevance=float(hit.parts.get("relevance", 0.0)),
            window_semantic=outcome.related(
                hit, max(float(hit.parts.get("semantic", 0.0)), around.get(hit.memory.pk, 0.0))
            ),
            supported=hit.beyond_vector,
            user_chars=user_chars.get(hit.memory.pk),
        )
        for hit in hits
    ]


def _user_chars(memories: list[Memory]) -> dict[uuid.UUID, int]:
    """By memory, the characters of its turn's user message (one statement)."""
    turns = {
        memory.pk: (memory.session_id, int(memory.thread_order or 0))
        for memory in memories
        if memory.session_id is not None
    }
    lengths = user_message_lengths(turns=list(turns.values()))
    return {pk: lengths[turn] for pk, turn in turns.items() if turn in lengths}


def window_cosines_statement() -> sql.Composed:
    """For each hit (`ids`, `keys`, `orders`: its id, thread and place in it), the best
    cosine of the query vector `q` and the memories of the user's thread window from
    `before` turns before it to `after` turns after it (the hit itself included)."""
    return sql.SQL(
        """SELECT hit.id, max(1 - (n.embedding <=> {q}::vector))
FROM unnest({ids}::uuid[], {keys}::varchar[], {orders}::bigint[])
    AS hit(id, thread_key, thread_order)
JOIN {memory} n
  ON n.tenant_id = {tenant} AND n.user_id = {user}
 AND n.thread_key = hit.thread_key
 AND n.thread_order BETWEEN hit.thread_order - {before} AND hit.thread_order + {after}
GROUP BY hit.id"""
    ).format(
        memory=sql.Identifier(Memory._meta.db_table),
        **{
            name: sql.Placeholder(name)
            for name in ("q", "ids", "keys", "orders", "tenant", "user", "before", "after")
        },
    )


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
            window_cosines_statement(),
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
