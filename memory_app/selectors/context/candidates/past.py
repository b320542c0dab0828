"""Context candidates from the user's other sessions: the turns that best answer the
query, as lines of the "past" section in the order they were said, each labelled with
its date, its session and its turn number, so the model can tell when and where it was
said, and each speaker's words after their name, so it can tell who said it."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from memory_app.selectors.context.candidate import Candidate, FoundCandidates, turn_ref
from memory_app.selectors.context.candidates.recalled import recalled_text
from memory_app.selectors.context.lines import date_label
from memory_app.selectors.context.recall import past_turns_recall

if TYPE_CHECKING:
    from memory_app.selectors.memories import Actor
    from sessions_app.models import ChatSession, Tenant

SESSION_LABEL_CHARS = 8  # of the session's id, enough to tell sessions apart


def past_turn_candidates(
    tenant: Tenant, session: ChatSession, query: str, limit: int, as_of: datetime, actor: Actor
) -> FoundCandidates:
    """At most `limit` turns of the user's earlier sessions that `actor` may see, best
    first."""
    found = past_turns_recall(
        tenant=tenant, session=session, query=query, limit=limit, as_of=as_of, actor=actor
    )
    out = FoundCandidates()
    for recalled in found:
        memory = recalled.memory
        at = memory.occurred_at
        session_label = str(memory.session_id)[:SESSION_LABEL_CHARS]
        label = (
            f"{date_label(at, as_of.tzinfo)}, session {session_label}, turn {recalled.turn_number}"
        )
        text, whole = recalled_text(recalled, label, query)
        out.add(
            Candidate(
                key=f"past:{memory.session_id}:{recalled.turn_number}",
                kind="past_turn",
                section="past",
                text=text,
                role="system",
                at=at,
                signal=recalled.relevance,
                order=(int(at.timestamp()) if at else 0, recalled.turn_number),
                shows=turn_ref(memory.session_id, recalled.turn_number),
                shows_whole=whole,
            ),
            semantic=recalled.window_semantic,
            supported=recalled.supported,
        )
    return out
