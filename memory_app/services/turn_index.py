"""Indexing a session's turns for context search (memory_app's own table, read back by
`memory_app.selectors.turn_search`). Runs after the turn is committed, from the
`index_session_turns` task (one per session per batch); idempotent: indexing a turn
again rewrites the same row."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from django.conf import settings
from django.db import transaction

from memory_app.embedding import embed_texts, embedder
from memory_app.models import TurnIndexEntry
from sessions_app.locks import advisory_xact_lock
from sessions_app.selectors.turns import turn_get_by_id, turn_ids_by_number, turns_by_number

if TYPE_CHECKING:
    from sessions_app.models import ChatTurn

WINDOW_BEFORE = 1  # turns before a turn in its lexical window (a turn is two lines)
WINDOW_AFTER = 1


def turn_text(turn: ChatTurn) -> str:
    """What is embedded and shown for a turn: its user message, then its reply."""
    return "\n".join(part for part in (turn.user_message, turn.assistant_response) if part)


def turn_index_update(*, turn_id: int) -> int:
    """Index one turn and rewrite the lexical windows it falls in: its own and its
    neighbours'. Returns the number of rows written; 0 when the turn is gone or empty."""
    turn = turn_get_by_id(turn_id=turn_id)
    if turn is None or turn.rolled_back:
        return 0
    return _index_turns(session_id=turn.session_id, turns=[turn])


def turn_index_session(*, session_id: uuid.UUID | str, up_to: int) -> int:
    """Index the session's turns numbered up to `up_to` that have no entry yet, looking
    back as far as a batch reaches (`ENGRAM_TURN_BATCH_MAX`). One task then serves every
    turn of a session that a batch recorded (a publish per turn cost more than writing
    the turn), and a turn whose own task was lost is picked up by the next one. Turns
    already indexed are not read again: a turn's text never changes."""
    first = max(1, up_to - settings.ENGRAM_TURN_BATCH_MAX + 1)
    ids = turn_ids_by_number(session_id=session_id, first=first, last=up_to)
    if not ids:
        return 0
    indexed = set(
        TurnIndexEntry.objects.filter(turn_id__in=ids.values()).values_list("turn_id", flat=True)
    )
    pending = [number for number, turn_id in ids.items() if turn_id not in indexed]
    if not pending:
        return 0
    turns = turns_by_number(session_id=uuid.UUID(str(session_id)), numbers=pending)
    return _index_turns(session_id=session_id, turns=[turns[n] for n in sorted(turns)])


def _index_turns(*, session_id: uuid.UUID | str, turns: list[ChatTurn]) -> int:
    """Embed the turns' texts in one call (outside the transaction), then write their
    entries and rewrite their neighbours' windows under the session's index lock, so
    two tasks covering the same turns write one after the other. Windows are built
    from the turns themselves, so tasks running out of order still converge."""
    turns = [turn for turn in turns if turn_text(turn).strip()]
    if not turns:
        return 0
    vectors = embed_texts([turn_text(turn) for turn in turns])
    reach = WINDOW_BEFORE + WINDOW_AFTER
    numbers = {
        n for turn in turns for n in range(turn.turn_number - reach, turn.turn_number + reach + 1)
    }
    around = turns_by_number(session_id=uuid.UUID(str(session_id)), numbers=sorted(numbers))
    texts = {number: turn_text(row) for number, row in around.items()}
    own = {turn.pk for turn in turns}
    # Entries whose window holds one of these turns: WINDOW_AFTER before, WINDOW_BEFORE after.
    touched = {
        n
        for turn in turns
        for n in range(turn.turn_number - WINDOW_AFTER, turn.turn_number + WINDOW_BEFORE + 1)
    }
    model_name = embedder().model_name
    written = 0
    with transaction.atomic():
        advisory_xact_lock(f"memory.turn_index:{session_id}")
        for turn, vector in zip(turns, vectors, strict=True):
            TurnIndexEntry.objects.update_or_create(
                turn_id=turn.pk,
                defaults={
                    "tenant_id": turn.tenant_id,
                    "session_id": turn.session_id,
                    "turn_number": turn.turn_number,
                    "text": turn_text(turn),
                    "embedding": vector,
                    "embedding_model": model_name,
                    "thread_context": _window(texts, turn.turn_number),
                },
            )
            written += 1
        neighbours = TurnIndexEntry.objects.filter(
            session_id=session_id, turn_number__in=sorted(touched)
        ).exclude(turn_id__in=own)
        for entry in neighbours.only("turn_id", "turn_number", "thread_context"):
            window = _window(texts, entry.turn_number)
            if entry.thread_context != window:
                TurnIndexEntry.objects.filter(pk=entry.pk).update(thread_context=window)
                written += 1
    return written


def _window(texts: dict[int, str], number: int) -> str:
    return "\n".join(
        texts[n] for n in range(number - WINDOW_BEFORE, number + WINDOW_AFTER + 1) if n in texts
    )
