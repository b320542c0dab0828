"""An episode per session: when a session stops taking turns (rotated, expired,
archived, imported), a memory of its user summarises it, so "what did we do last time"
has an answer even when no single turn matches. Extractive without an LLM, rewritten by
the LLM when one is configured (`compaction.summary_draft`, whose call is recorded as a
step of the session's last turn). Compaction already leaves an episode per compacted
span (`extraction.memories_extract_from_span`); this one covers the whole session.

One episode per session (its content hash is derived from the session id): writing it
again replaces its text as a new version when the session gained turns, else does
nothing. It lives and dies with the session's turns (source `session_episode`).
"""

from __future__ import annotations

import hashlib
from typing import Any

from django.db import transaction
from django.utils import timezone

from memory_app.embedding import embedder
from memory_app.models import Memory, MemoryScope, MemorySource, MemoryType
from memory_app.passage_vectors.vectors import embed_documents
from memory_app.passage_vectors.writes import passages_insert
from memory_app.services.compaction import summary_draft
from memory_app.services.memories import memory_update
from memory_app.window.summarize import extractive_summary
from memory_app.window.text import TurnText
from sessions_app.locks import advisory_xact_lock
from sessions_app.selectors.sessions import session_get_by_id
from sessions_app.selectors.turns import turns_live

EPISODE_TOKENS = 250


def episode_hash(session_id: Any) -> str:
    return hashlib.sha256(f"episode {session_id}".encode()).hexdigest()


def session_episode_write(*, session_id: Any) -> str:
    """Write or refresh the session's episode. Returns `created`, `updated`,
    `unchanged` or `empty` (a session without conversation)."""
    session = session_get_by_id(session_id=session_id)
    turns = list(turns_live(session_id=session.pk).order_by("turn_number"))
    episode = _episode_text(session, turns)
    if episode is None:
        return "empty"
    content, structured = episode
    digest = episode_hash(session.pk)
    with transaction.atomic():
        advisory_xact_lock(f"memory.episode:{session.pk}")
        existing = Memory.objects.filter(
            tenant_id=session.tenant_id, user_id=session.user_id, content_hash=digest
        ).first()
        if existing is not None:
            if existing.structured.get("turns") == structured["turns"]:
                return "unchanged"
            memory_update(memory=existing, changes={"content": content, "structured": structured})
            Memory.objects.filter(pk=existing.pk).update(content_hash=digest)
            return "updated"
        _episode_create(session, content, structured, digest, occurred_at=turns[-1].occurred_at)
    return "created"


def _episode_text(session: Any, turns: list[Any]) -> tuple[str, dict[str, Any]] | None:
    """The episode's content and structured fields from the session's live turns (None
    when none holds conversation); the summary is drafted before any lock is taken."""
    texts = [
        TurnText(t.turn_number, t.user_message, t.assistant_response)
        for t in turns
        if (t.user_message or t.assistant_response).strip()
    ]
    if not texts:
        return None
    first, last = turns[0], turns[-1]
    draft = summary_draft(
        extractive_summary(texts, EPISODE_TOKENS), max_tokens=EPISODE_TOKENS, turn_id=last.pk
    )
    day = first.occurred_at.strftime("%Y-%m-%d")
    content = (
        f"Session of {day} with {session.agent_id or 'an agent'} ({len(texts)} turns): {draft.text}"
    )
    structured = {
        "turns": len(texts),
        "first_turn_at": first.occurred_at.isoformat(),
        "last_turn_at": last.occurred_at.isoformat(),
        "method": str(draft.method),
    }
    return content, structured


def _episode_create(
    session: Any, content: str, structured: dict[str, Any], digest: str, *, occurred_at: Any
) -> None:
    now = timezone.now()
    embedded = embed_documents([content])
    memory = Memory.objects.create(
        tenant_id=session.tenant_id,
        user_id=session.user_id,
        agent_id=session.agent_id,
        type=MemoryType.EPISODIC,
        scope=MemoryScope.PRIVATE,
        content=content,
        structured=structured,
        content_hash=digest,
        embedding=embedded.vectors[0],
        embedding_model=embedder().model_name,
        tags=["episode", "session"],
        importance=0.5,
        confidence=0.8,
        source=MemorySource.SESSION_EPISODE,
        session_id=session.pk,
        occurred_at=occurred_at,
        created_at=now,
        updated_at=now,
        last_accessed_at=now,
    )
    passages_insert([(memory.pk, embedded.passages[0])])
