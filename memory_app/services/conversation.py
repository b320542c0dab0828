"""A session's turns as long-term episodic memory of its user.

Every recorded turn becomes, after commit and off the request path (the
`remember_session_turns` task), one memory: type `episodic`, source
`conversation_turn`, the user's and the session's agent's, in the session's thread
(`session:<id>`, ordered by turn number) with the turn's own time (`occurred_at`). So the
one hybrid search (threads, BM25, vectors) recalls what the user said in this session and
in every earlier one.

Idempotent by construction: a turn's memory has a content hash derived from the session
and the turn number (`turn_memory_hash`), so writing it again is refused by the unique
constraint's lookup before any insert, and two identical lines in two sessions are two
memories (an event each), never a duplicate of one another.

A turn that is rolled back, or a session that is deleted, takes its memories with it
(`conversation_forget`, run inside the transaction that withdraws the turns). The writer
and the forgetter take the same per-session lock and the writer re-reads which turns are
live under it, so a rollback that races a write never leaves a rolled-back turn
recallable.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from memory_app.embedding import embed_texts, embedder
from memory_app.models import Memory, MemoryScope, MemorySource, MemoryType
from memory_app.services.memories import EMBED_BATCH, refresh_thread_window
from memory_app.services.thread_writes import thread_rows_insert
from sessions_app.locks import advisory_xact_lock
from sessions_app.selectors.sessions import session_get_by_id
from sessions_app.selectors.turns import turn_get_by_id, turn_ids_by_number, turns_by_number

if TYPE_CHECKING:
    from sessions_app.models import ChatSession, ChatTurn

# Sources whose memories hold a session's turns verbatim (or a digest of them): they live
# and die with the session's turns.
CONVERSATION_SOURCES = (MemorySource.CONVERSATION_TURN, MemorySource.SESSION_EPISODE)
MAX_TURN_MEMORY_CHARS = 32_000  # a turn's text past this is cut (a 5,000-word message fits)


def session_thread_key(session_id: Any) -> str:
    return f"session:{session_id}"


def turn_memory_text(turn: ChatTurn) -> str:
    """What a turn's memory holds: the user's message, then the reply."""
    text = "\n".join(part for part in (turn.user_message, turn.assistant_response) if part.strip())
    return text[:MAX_TURN_MEMORY_CHARS]


def turn_memory_hash(session_id: Any, turn_number: int) -> str:
    """The content hash of a turn's memory: one per turn of a session, whatever it says."""
    return hashlib.sha256(f"turn {session_id}:{turn_number}".encode()).hexdigest()


def _lock(session_id: Any) -> None:
    advisory_xact_lock(f"memory.conversation:{session_id}")


def conversation_remember_session(*, session_id: uuid.UUID | str, up_to: int) -> int:
    """Remember the session's live turns numbered up to `up_to` that have no memory yet,
    looking back as far as a batch reaches (ENGRAM_TURN_BATCH_MAX): one task serves every
    turn a batch recorded, and a turn whose task was lost is picked up by the next one.
    Returns how many memories were written."""
    first = max(1, up_to - settings.ENGRAM_TURN_BATCH_MAX + 1)
    ids = turn_ids_by_number(session_id=session_id, first=first, last=up_to)
    if not ids:
        return 0
    remembered = set(
        Memory.objects.filter(
            session_id=session_id,
            source=MemorySource.CONVERSATION_TURN,
            thread_order__in=list(ids),
        ).values_list("thread_order", flat=True)
    )
    pending = sorted(number for number in ids if number not in remembered)
    if not pending:
        return 0
    session = session_get_by_id(session_id=session_id)
    turns = turns_by_number(session_id=session.pk, numbers=pending)
    return conversation_remember_turns(session=session, turns=[turns[n] for n in sorted(turns)])


def conversation_remember_turn(*, turn_id: int) -> int:
    """Remember one turn (a sender that names only the turn); 0 when it is gone, rolled
    back, empty or already remembered."""
    turn = turn_get_by_id(turn_id=turn_id)
    if turn is None or turn.rolled_back:
        return 0
    return conversation_remember_session(session_id=turn.session_id, up_to=turn.turn_number)


def conversation_remember_turns(*, session: ChatSession, turns: Sequence[ChatTurn]) -> int:
    """Write the memories of `turns` (of `session`, in order): embedded in batches
    outside the transaction, then inserted in one statement under the session's lock,
    with their thread windows, and the neighbours whose window reaches them rewritten."""
    turns = [turn for turn in turns if turn_memory_text(turn)]
    if not turns:
        return 0
    texts = [turn_memory_text(turn) for turn in turns]
    vectors: list[list[float]] = []
    for start in range(0, len(texts), EMBED_BATCH):
        vectors.extend(embed_texts(texts[start : start + EMBED_BATCH]))
    model_name = embedder().model_name
    now = timezone.now()
    with transaction.atomic():
        _lock(session.pk)
        live = set(
            turn_ids_by_number(
                session_id=session.pk,
                first=turns[0].turn_number,
                last=turns[-1].turn_number,
            )
        )
        done = set(
            Memory.objects.filter(
                session_id=session.pk,
                source=MemorySource.CONVERSATION_TURN,
                thread_order__in=[turn.turn_number for turn in turns],
            ).values_list("thread_order", flat=True)
        )
        rows = [
            _turn_memory(session, turn, text, vector, model_name, now)
            for turn, text, vector in zip(turns, texts, vectors, strict=True)
            if turn.turn_number in live and turn.turn_number not in done
        ]
        if not rows:
            return 0
        thread_rows_insert(rows)
    return len(rows)


def _turn_memory(
    session: ChatSession,
    turn: ChatTurn,
    text: str,
    vector: list[float],
    model_name: str,
    now: Any,
) -> Memory:
    return Memory(
        tenant_id=session.tenant_id,
        user_id=session.user_id,
        agent_id=session.agent_id,
        type=MemoryType.EPISODIC,
        scope=MemoryScope.PRIVATE,
        content=text,
        structured={"turn_number": turn.turn_number},
        content_hash=turn_memory_hash(session.pk, turn.turn_number),
        embedding=vector,
        embedding_model=model_name,
        source=MemorySource.CONVERSATION_TURN,
        session_id=session.pk,
        thread_key=session_thread_key(session.pk),
        thread_order=turn.turn_number,
        occurred_at=turn.occurred_at,
        created_at=now,
        updated_at=now,
        last_accessed_at=now,
    )


@transaction.atomic
def conversation_forget(
    *, tenant_id: int, session_ids: Sequence[Any], turn_numbers: Sequence[int] | None
) -> int:
    """Delete the memories holding these sessions' turns (all of them when `turn_numbers`
    is None, with the sessions' episodes; else those turns'), and close the thread's
    window over the gap. Runs inside the transaction that withdraws the turns."""
    deleted = 0
    for session_id in session_ids:
        _lock(session_id)
        rows = Memory.objects.filter(tenant_id=tenant_id, session_id=session_id)
        if turn_numbers is None:
            deleted += rows.filter(source__in=CONVERSATION_SOURCES).delete()[0]
            continue
        turn_rows = rows.filter(
            source=MemorySource.CONVERSATION_TURN, thread_order__in=list(turn_numbers)
        )
        deleted += turn_rows.delete()[0]
        _close_window(tenant_id, session_id, min(turn_numbers, default=None))
    return deleted


def _close_window(tenant_id: int, session_id: Any, first_gone: int | None) -> None:
    if first_gone is None:
        return
    last = (
        Memory.objects.filter(
            tenant_id=tenant_id,
            session_id=session_id,
            source=MemorySource.CONVERSATION_TURN,
            thread_order__lt=first_gone,
        )
        .order_by("-thread_order")
        .first()
    )
    if last is not None:
        refresh_thread_window(last)
