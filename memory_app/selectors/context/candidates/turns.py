"""Context candidates from the session's own verbatim turns: the window proper (the
newest `keep_last_turns`) and the older turns still open (not yet compacted)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memory_app.selectors.context.candidate import TURNS, Candidate
from sessions_app.selectors.turns import turns_live, turns_open

if TYPE_CHECKING:
    from sessions_app.models import ChatSession

MAX_VERBATIM_TURNS = 50  # uncompacted turns offered verbatim, newest first
WINDOW_SIGNAL = 1.0
OPEN_TURN_SIGNAL = 0.3  # an open turn outside the window competes on its merits


def turn_candidates(
    session: ChatSession,
    keep_last: int,
    limit: int = MAX_VERBATIM_TURNS,
    include_compacted: bool = False,
) -> list[Candidate]:
    """The session's newest `limit` turns, newest first: its open turns, or with
    `include_compacted` (compression off, no summary stands in for them) every live
    turn. The first `keep_last` are the window and carry the full signal."""
    live = (turns_live if include_compacted else turns_open)(session_id=session.pk)
    turns = list(live.order_by("-turn_number")[:limit])
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
        )
        for index, turn in enumerate(turns)
    ]


def window_keys(candidates: list[Candidate], keep_last: int) -> list[str]:
    """The keys of the window's turns among `candidates`, newest first: the turns the
    packer reserves room for and the page-out and relevance floor leave alone."""
    turns = sorted((c for c in candidates if c.kind == "turn"), key=lambda c: c.order, reverse=True)
    return [c.key for c in turns][:keep_last]
