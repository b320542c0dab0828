"""Indexing a session's turns for context search (memory_app's own table, read back by
`memory_app.selectors.turn_search`). Runs after the turn is committed, from the
`index_turn` task; idempotent: indexing a turn again rewrites the same row."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.db import transaction

from memory_app.embedding import embed_texts, embedder
from memory_app.models import TurnIndexEntry
from sessions_app.selectors.turns import turn_by_id, turns_in_range

if TYPE_CHECKING:
    from sessions_app.models import ChatTurn

WINDOW_BEFORE = 1  # turns before a turn in its lexical window (a turn is two lines)
WINDOW_AFTER = 1


def turn_text(turn: ChatTurn) -> str:
    """What is embedded and shown for a turn: its user message, then its reply."""
    return "\n".join(part for part in (turn.user_message, turn.assistant_response) if part)


def turn_index_update(*, turn_id: int) -> int:
    """Index one turn (embedding its text outside the transaction) and rewrite the
    lexical windows it falls in: its own and its neighbours'. Windows are built from the
    turns themselves, so tasks running out of order still converge. Returns the number of
    rows written; 0 when the turn is gone or empty."""
    turn = turn_by_id(turn_id=turn_id)
    if turn is None or turn.rolled_back:
        return 0
    text = turn_text(turn)
    if not text.strip():
        return 0
    vector = embed_texts([text])[0]
    reach = WINDOW_BEFORE + WINDOW_AFTER
    around = turns_in_range(
        session_id=turn.session_id,
        first=turn.turn_number - reach,
        last=turn.turn_number + reach,
    )
    texts = {row.turn_number: turn_text(row) for row in around}
    with transaction.atomic():
        TurnIndexEntry.objects.update_or_create(
            turn_id=turn.pk,
            defaults={
                "tenant_id": turn.tenant_id,
                "session_id": turn.session_id,
                "turn_number": turn.turn_number,
                "text": text,
                "embedding": vector,
                "embedding_model": embedder().model_name,
                "thread_context": _window(texts, turn.turn_number),
            },
        )
        written = 1
        neighbours = TurnIndexEntry.objects.filter(
            session_id=turn.session_id,
            turn_number__gte=turn.turn_number - WINDOW_AFTER,
            turn_number__lte=turn.turn_number + WINDOW_BEFORE,
        ).exclude(turn_id=turn.pk)
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
