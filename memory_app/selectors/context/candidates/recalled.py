"""Context candidates recalled from the session's own earlier turns (compacted ones
included): the passage of each that answers the query, a line of the "recalled" section
labelled with its turn number and when it was said, the words of each speaker after
their name (`user: … / assistant: …`): a reply's "I live in Madrid" is not the user's.
The recall is the one memory search over the turns' memories
(`memory_app.selectors.context.recall`)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from django.conf import settings

from memory_app.selectors.context.candidate import Candidate, FoundCandidates, turn_ref
from memory_app.selectors.context.lines import date_label
from memory_app.selectors.context.recall import RecalledTurn, session_turns_recall
from memory_app.window.passages import best_passage, speakers_passage

if TYPE_CHECKING:
    from sessions_app.models import ChatSession, Tenant

MAX_RECALLED_TURNS = 10  # the session's own older turns found for the query


def recalled_text(recalled: RecalledTurn, label: str, query: str) -> tuple[str, bool]:
    """`[label] user: … / assistant: …`: the passage of the turn that best answers
    `query`, within ENGRAM_CONTEXT_RECALL_LINE_TOKENS, each speaker's words after their
    name (unnamed when the turn log no longer tells them apart); and whether the passage
    is the whole turn."""
    size = int(settings.ENGRAM_CONTEXT_RECALL_LINE_TOKENS)
    said = recalled.said
    if said is None:
        text = " ".join(recalled.memory.content.split())
        passage = best_passage(text, query, size)
        return f"[{label}] {passage}", passage == text
    user, reply = said
    passage, whole = speakers_passage([("user", user), ("assistant", reply)], query, size)
    return f"[{label}] {passage}", whole


def recalled_turn_candidates(
    tenant: Tenant,
    session: ChatSession,
    query: str,
    offered: set[int],
    as_of: datetime,
    said_by: datetime | None = None,
) -> FoundCandidates:
    """The session's own earlier turns that best answer `query`, verbatim (the passage
    that answers); turns already offered as window turns (`offered`) are left to the
    window, and with `said_by` those that happened after it. Their signal is the
    search's fused relevance and their semantic score the best cosine over the turn's
    window, so they need no second embedding."""
    found = session_turns_recall(
        tenant=tenant,
        session=session,
        query=query,
        limit=MAX_RECALLED_TURNS,
        as_of=as_of,
        said_by=said_by,
    )
    out = FoundCandidates()
    for recalled in found:
        if recalled.turn_number in offered:
            continue
        at = recalled.memory.occurred_at
        label = f"turn {recalled.turn_number}, {date_label(at, as_of.tzinfo)}"
        text, whole = recalled_text(recalled, label, query)
        out.add(
            Candidate(
                key=f"recalled:{recalled.turn_number}",
                kind="recalled_turn",
                section="recalled",
                text=text,
                role="system",
                at=at,
                signal=recalled.relevance,
                order=(recalled.turn_number,),
                shows=turn_ref(session.pk, recalled.turn_number),
                shows_whole=whole,
            ),
            semantic=recalled.window_semantic,
            supported=recalled.supported,
        )
    return out
