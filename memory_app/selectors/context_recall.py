"""Context candidates recalled from the user's conversations: the session's own earlier
turns (compacted ones included) and the turns of the user's other sessions, each a line
labelled with when it was said. Both come from `memory_app.selectors.recall`, the one
memory search over the turns' memories."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from django.conf import settings

from memory_app.selectors.recall import RecalledTurn, past_turns_recall, session_turns_recall
from memory_app.window.packing import Candidate
from memory_app.window.passages import best_passage

if TYPE_CHECKING:
    from sessions_app.models import ChatSession, Tenant

MAX_RECALLED_TURNS = 10  # the session's own older turns found for the query
# A recalled turn that shares a word with the query is related to it whatever its
# cosine: the search chose it (at most ENGRAM_CONTEXT_PAST_TURNS of them), and a long
# message's vector (the model reads its first 256 word pieces) says little of a detail
# inside it. Only a turn found by its vector alone must pass the semantic floor.


def supported(recalled: RecalledTurn) -> bool:
    return recalled.lexical > 0


@dataclass
class RecallCandidates:
    """Recalled turns as context candidates, with the semantic score of each (the best
    cosine over its window) and the keys the search supports lexically (`supported`),
    which the context's relevance floor lets through."""

    candidates: list[Candidate] = field(default_factory=list)
    semantic: dict[str, float] = field(default_factory=dict)
    supported: set[str] = field(default_factory=set)

    def add(self, candidate: Candidate, recalled: RecalledTurn) -> None:
        self.candidates.append(candidate)
        self.semantic[candidate.key] = recalled.window_semantic
        if supported(recalled):
            self.supported.add(candidate.key)


def date_label(at: datetime | None) -> str:
    return at.strftime("%Y-%m-%d %H:%M") if at is not None else "undated"


def _text(recalled: RecalledTurn, label: str, query: str) -> str:
    text = " ".join(recalled.memory.content.split())
    size = int(settings.ENGRAM_CONTEXT_RECALL_LINE_TOKENS)
    return f"[{label}] {best_passage(text, query, size)}"


def recalled_turn_candidates(
    tenant: Tenant, session: ChatSession, query: str, offered: set[int], as_of: datetime
) -> RecallCandidates:
    """The session's own earlier turns that best answer `query`, verbatim (the passage
    that answers), as lines of the "recalled" section; turns already offered as window
    turns are left to the window. Their signal is the search's fused relevance and their
    semantic score the best cosine over the turn's window, so they need no second
    embedding."""
    found = session_turns_recall(
        tenant=tenant, session=session, query=query, limit=MAX_RECALLED_TURNS, as_of=as_of
    )
    out = RecallCandidates()
    for recalled in found:
        if recalled.turn_number in offered:
            continue
        key = f"recalled:{recalled.turn_number}"
        at = recalled.memory.occurred_at
        label = f"turn {recalled.turn_number}, {date_label(at)}"
        out.add(
            Candidate(
                key=key,
                kind="recalled_turn",
                section="recalled",
                text=_text(recalled, label, query),
                role="system",
                at=at,
                signal=recalled.relevance,
                order=(recalled.turn_number,),
            ),
            recalled,
        )
    return out


def past_turn_candidates(
    tenant: Tenant, session: ChatSession, query: str, limit: int, as_of: datetime
) -> RecallCandidates:
    """The turns of the user's earlier sessions that best answer `query`, as lines of the
    "past" section in the order they were said, each labelled with its date, its session
    and its turn number, so the model can tell when and where it was said."""
    found = past_turns_recall(tenant=tenant, session=session, query=query, limit=limit, as_of=as_of)
    out = RecallCandidates()
    for recalled in found:
        memory = recalled.memory
        key = f"past:{memory.session_id}:{recalled.turn_number}"
        at = memory.occurred_at
        label = (
            f"{date_label(at)}, session {str(memory.session_id)[:8]}, turn {recalled.turn_number}"
        )
        out.add(
            Candidate(
                key=key,
                kind="past_turn",
                section="past",
                text=_text(recalled, label, query),
                role="system",
                at=at,
                signal=recalled.relevance,
                order=(int(at.timestamp()) if at else 0, recalled.turn_number),
            ),
            recalled,
        )
    return out
