"""A session's turns as long-term episodic memory of its user.

Every recorded turn becomes, after commit and off the request path (marked by the
`turn_recorded` hook, written in batches across sessions by the drain of
`memory_app.services.turn_queue`), one memory: type `episodic`, source
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
and the forgetter take the same per-session locks (several at once in one sorted
statement, `advisory_xact_locks`, so neither waits for the other in a cycle) and the
writer re-reads which turns are live under them, so a rollback that races a write never
leaves a rolled-back turn recallable.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from memory_app.embedding import embedder
from memory_app.models import Memory, MemoryScope, MemorySource, MemoryType
from memory_app.passage_vectors.vectors import embed_documents
from memory_app.passage_vectors.writes import passages_insert
from memory_app.services.memories import refresh_thread_window
from memory_app.services.thread_writes import thread_rows_insert
from sessions_app.locks import advisory_xact_locks
from sessions_app.selectors.turns import turn_ids_in_ranges, turns_for_memory

if TYPE_CHECKING:
    from sessions_app.models import ChatTurn

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


def _lock_names(session_ids: Sequence[Any]) -> list[str]:
    return [f"memory.conversation:{session_id}" for session_id in session_ids]


def conversation_lock(session_ids: Sequence[Any]) -> None:
    """Hold the sessions' conversation locks, the writer's, to the end of the transaction:
    whatever then deletes the sessions' memories waits for a write in flight to commit and
    sees its rows, and a write that comes after finds the turns gone."""
    advisory_xact_locks(_lock_names(session_ids))


def conversation_remember_session(*, session_id: uuid.UUID | str, up_to: int) -> int:
    """Remember the session's live turns numbered up to `up_to` that have no memory yet
    (`conversation_remember_marked` for one session). Returns how many were written."""
    return len(conversation_remember_marked(marks={uuid.UUID(str(session_id)): up_to}))


def conversation_remember_marked(*, marks: dict[uuid.UUID, int]) -> list[ChatTurn]:
    """Remember, for each session of `marks`, its live turns numbered up to its mark that
    have no memory yet (`conversation_pending_turns`). Every session at once: a few
    statements and one embedding call for the whole set. Returns the turns written."""
    return conversation_remember_turns(turns=conversation_pending_turns(marks=marks))


def conversation_pending_turns(
    *, marks: dict[uuid.UUID, int], skip: Collection[tuple[uuid.UUID, int]] = ()
) -> list[ChatTurn]:
    """For each session of `marks`, its live turns numbered up to its mark that have no
    memory yet, looking back as far as a batch reaches (ENGRAM_TURN_BATCH_MAX): a turn
    whose mark was lost is picked up with the session's next one. Leaves out the
    (session, number) pairs of `skip` (turns another batch is writing)."""
    ranges = {
        session_id: (max(1, last - settings.ENGRAM_TURN_BATCH_MAX + 1), last)
        for session_id, last in marks.items()
    }
    live = turn_ids_in_ranges(ranges=ranges)
    if not live:
        return []
    done = _remembered(ranges)
    pending = [pk for key, pk in live.items() if key not in done and key not in skip]
    if not pending:
        return []
    return turns_for_memory(turn_ids=pending)


def _remembered(ranges: dict[uuid.UUID, tuple[int, int]]) -> set[tuple[uuid.UUID, int]]:
    """(session, number) of the turns in these ranges that already have their memory."""
    if not ranges:
        return set()
    sessions = list(ranges)
    with connection.cursor() as cursor:
        cursor.execute(
            _REMEMBERED_SQL,
            [
                sessions,
                [ranges[s][0] for s in sessions],
                [ranges[s][1] for s in sessions],
                MemorySource.CONVERSATION_TURN,
            ],
        )
        return {(session, number) for session, number in cursor.fetchall()}


# By session and range, for every marked session in one statement.
_REMEMBERED_SQL = """
SELECT m.session_id, m.thread_order::int FROM memory m
  JOIN unnest(%s::uuid[], %s::int[], %s::int[]) AS r(session_id, first, last)
    ON m.session_id = r.session_id AND m.thread_order BETWEEN r.first AND r.last
 WHERE m.source = %s
"""


@dataclass
class EmbeddedTurns:
    """Turns ready to be written as memories: in writing order (session, number), with
    their memories' texts, vectors and passages' vectors."""

    turns: list[ChatTurn]
    texts: list[str]
    vectors: list[list[float]]
    passages: list[list[list[float]]]

    def keys(self) -> set[tuple[uuid.UUID, int]]:
        return {(turn.session_id, turn.turn_number) for turn in self.turns}


def conversation_remember_turns(*, turns: Sequence[ChatTurn]) -> list[ChatTurn]:
    """Write the memories of `turns` (any sessions', their `session` loaded): embedded in
    one call outside the transaction, then written (`conversation_write_embedded`).
    Returns the turns written."""
    return conversation_write_embedded(conversation_embed_turns(turns))


def conversation_embed_turns(turns: Sequence[ChatTurn]) -> EmbeddedTurns:
    """The memories' vectors of `turns` (those with any text), in one embedding call;
    touches no database, so it may run beside another batch's writing."""
    ordered = sorted(
        (turn for turn in turns if turn_memory_text(turn)),
        key=lambda turn: (str(turn.session_id), turn.turn_number),
    )
    texts = [turn_memory_text(turn) for turn in ordered]
    embedded = embed_documents(texts)
    return EmbeddedTurns(ordered, texts, embedded.vectors, embedded.passages)


def conversation_write_embedded(batch: EmbeddedTurns) -> list[ChatTurn]:
    """Under the sessions' locks (taken together, in a fixed order) and after checking
    again which turns are live and not yet remembered, insert the memories of `batch` in
    one statement with their thread windows, the neighbours whose window reaches them
    rewritten. Returns the turns written."""
    if not batch.turns:
        return []
    model_name = embedder().model_name
    now = timezone.now()
    ranges: dict[uuid.UUID, tuple[int, int]] = {}
    for turn in batch.turns:
        first, _ = ranges.get(turn.session_id, (turn.turn_number, 0))
        ranges[turn.session_id] = (min(first, turn.turn_number), turn.turn_number)
    with transaction.atomic():
        conversation_lock(list(ranges))
        live = turn_ids_in_ranges(ranges=ranges)
        done = _remembered(ranges)
        written = [
            (turn, _turn_memory(turn, text, vector, model_name, now), passages)
            for turn, text, vector, passages in zip(
                batch.turns, batch.texts, batch.vectors, batch.passages, strict=True
            )
            if (key := (turn.session_id, turn.turn_number)) in live and key not in done
        ]
        thread_rows_insert([row for _, row, _ in written])
        passages_insert([(row.pk, passages) for _, row, passages in written])
    return [turn for turn, _, _ in written]


def _turn_memory(
    turn: ChatTurn,
    text: str,
    vector: list[float],
    model_name: str,
    now: Any,
) -> Memory:
    session = turn.session
    return Memory(
        tenant_id=session.tenant_id,
        user_id=session.user_id,
        agent_id=session.agent_id,
        type=MemoryType.EPISODIC,
        scope=MemoryScope.PRIVATE,
        content=text,
        structured={"turn_number": turn.turn_number},
        content_hash=turn_memory_hash(turn.session_id, turn.turn_number),
        embedding=vector,
        embedding_model=model_name,
        source=MemorySource.CONVERSATION_TURN,
        session_id=turn.session_id,
        thread_key=session_thread_key(turn.session_id),
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
    conversation_lock(session_ids)
    for session_id in session_ids:
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
