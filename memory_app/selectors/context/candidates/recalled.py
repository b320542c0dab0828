"""Context candidates recalled from the session's own earlier turns (compacted ones
included): the passage of each that answers the query, a line of the "recalled" section
labelled with its turn number and when it was said. The recall is the one memory search
over the turns' memories (`memory_app.selectors.context.recall`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from django.conf import settings

from memory_app.selectors.context.candidate import Candidate
from memory_app.selectors.context.lines import date_label
from memory_app.selectors.context.recall import RecalledTurn, session_turns_recall
from memory_app.window.passages import best_passage

if TYPE_CHECKING:
    from sessions_app.models import ChatSession, Tenant

MAX_RECALLED_TURNS = 10  # the session's own older turns found for the query


def supported(recalled: RecalledTurn) -> bool:
    """A recalled turn that shares a word with the query is related to it whatever its
    cosine: the search chose it, and a long message's vector (the model reads its first
    256 word pieces) says little of a detail inside it. Only a turn found by its vector
    alone must pass the semantic floor."""
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


def recalled_text(recalled: RecalledTurn, label: str, query: str) -> str:
    """`[label] passage`: the passage of the turn that best answers `query`, within
    ENGRAM_CONTEXT_RECALL_LINE_TOKENS."""
    text = " ".join(recalled.memory.content.split())
    size = int(settings.ENGRAM_CONTEXT_RECALL_LINE_TOKENS)
    return f"[{label}] {best_passage(text, query, size)}"


def recalled_turn_candidates(
    tenant: Tenant, session: ChatSession, query: str, offered: set[int], as_of: datetime
) -> RecallCandidates:
    """The session's own earlier turns that best answer `query`, verbatim (the passage
    that answers); turns already offered as window turns (`offered`) are left to the
    window. Their signal is the search's fused relevance and their semantic score the
    best cosine over the turn's window, so they need no second embedding."""
    found = session_turns_recall(
        tenant=tenant, session=session, query=query, limit=MAX_RECALLED_TURNS, as_of=as_of
    )
    out = RecallCandidates()
    for recalled in found:
        if recalled.turn_number in offered:
            continue
        at = recalled.memory.occurred_at
        label = f"turn {recalled.turn_number}, {date_label(at)}"
        out.add(
            Candidate(
                key=f"recalled:{recalled.turn_number}",
                kind="recalled_turn",
                section="recalled",
                text=recalled_text(recalled, label, query),
                role="system",
                at=at,
                signal=recalled.relevance,
                order=(recalled.turn_number,),
            ),
            recalled,
        )
    return out
