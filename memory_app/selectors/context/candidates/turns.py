"""Context candidates from the session's own verbatim turns: the window proper (the
newest `keep_last_turns`) and the older turns still open (not yet compacted)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memory_app.selectors.context.candidate import TURNS, Candidate, turn_ref
from sessions_app.selectors.turns import turns_live, turns_open

if TYPE_CHECKING:
    from django.db.models import QuerySet

    from memory_app.selectors.context.candidates.said import SessionAt
    from sessions_app.models import ChatSession, ChatTurn

MAX_VERBATIM_TURNS = 50  # uncompacted turns offered verbatim, newest first
WINDOW_SIGNAL = 1.0
OPEN_TURN_SIGNAL = 0.3  # an open turn outside the window competes on its merits
TURN_COLUMNS = ("turn_number", "user_message", "assistant_response", "created_at")


def turn_candidates(
    session: ChatSession,
    keep_last: int,
    limit: int = MAX_VERBATIM_TURNS,
    include_compacted: bool = False,
    at: SessionAt | None = None,
) -> list[Candidate]:
    """The session's newest `limit` turns, newest first: its open turns, or with
    `include_compacted` (compression off, no summary stands in for them) every live
    turn; for a context asked in the past, the turns said by then (`at`). The
    first `keep_last` are the window and carry the full signal. A turn without any
    text has no message to give and is left out."""
    turns = [
        turn
        for turn in window_turns_query(session.pk, limit, include_compacted, at)
        if turn.user_message.strip() or turn.assistant_response.strip()
    ]
    return [
        Candidate(
            key=f"turn:{turn.turn_number}",
            kind="turn",
            section=TURNS,
            text=turn.user_message,
            reply=turn.assistant_response,
            role="user",
            at=turn.created_at,
            signal=WINDOW_SIGNAL if index < keep_last else OPEN_TURN_SIGNAL,
            order=(turn.turn_number,),
            shows=turn_ref(session.pk, turn.turn_number),
        )
        for index, turn in enumerate(turns)
    ]


def window_turns_query(
    session_id: Any, limit: int, include_compacted: bool, at: SessionAt | None = None
) -> QuerySet[ChatTurn]:
    """The statement `turn_candidates` reads (snapshot-tested): the columns a turn
    candidate is made of, not the turn's whole row. With `at`, the live turns that
    had happened by its moment and that no summary kept for it restates (compaction
    since then does not hide a turn its summary cannot stand in for)."""
    if at is None:
        live = (turns_live if include_compacted else turns_open)(session_id=session_id)
    else:
        live = turns_live(session_id=session_id).filter(
            occurred_at__lte=at.moment, turn_number__gt=at.summarised_through
        )
    return live.only(*TURN_COLUMNS).order_by("-turn_number")[:limit]


def turn_run(candidates: list[Candidate]) -> list[str]:
    """The keys of the session's verbatim turns among `candidates`, newest first: the
    run the packer keeps without a hole."""
    turns = sorted((c for c in candidates if c.kind == "turn"), key=lambda c: c.order, reverse=True)
    return [c.key for c in turns]
