"""Where a context's candidates come from, one module per source: the session's
`state`, its window and open `turns`, its `summaries` and their milestones, the
`recalled` turns of the session and the `past` turns of the user's other sessions, the
`predecessors` of a rotated session, long-term `memories`, `failures` and `tools`
outputs. `context_candidates` gathers them all, in that fixed order; asked in the past,
what each source held then (`said`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from django.conf import settings

from memory_app.selectors.context.candidate import Candidate, FoundCandidates
from memory_app.selectors.context.candidates.failures import failure_candidates
from memory_app.selectors.context.candidates.memories import memory_candidates
from memory_app.selectors.context.candidates.past import past_turn_candidates
from memory_app.selectors.context.candidates.predecessors import predecessor_candidates
from memory_app.selectors.context.candidates.recalled import recalled_turn_candidates
from memory_app.selectors.context.candidates.said import session_at
from memory_app.selectors.context.candidates.state import state_candidates
from memory_app.selectors.context.candidates.summaries import summary_candidates
from memory_app.selectors.context.candidates.tools import tool_output_candidates
from memory_app.selectors.context.candidates.turns import turn_candidates
from memory_app.window.selectors import active_summaries

if TYPE_CHECKING:
    from memory_app.selectors.memories import Actor
    from memory_app.window.policies import ContextPolicy
    from sessions_app.models import ChatSession, Tenant


@dataclass
class Gathered:
    """Every candidate, with the semantic scores the memory search already gave and the
    keys it supports by more than a vector (see `FoundCandidates`)."""

    candidates: list[Candidate] = field(default_factory=list)
    semantic: dict[str, float] = field(default_factory=dict)
    supported: set[str] = field(default_factory=set)
    # Asked in the past: what the session has today that no version dates back to then
    # (`candidates.state`), reported as left out with reason `no_history`.
    undated: list[Candidate] = field(default_factory=list)


@dataclass(frozen=True)
class ContextRequest:
    """What the candidates are gathered for: the session, the query asked at `as_of`,
    the acting `actor`, the `budget`, and the limits of the policy `rules`."""

    tenant: Tenant
    session: ChatSession
    query: str
    as_of: datetime
    actor: Actor
    budget: int
    rules: ContextPolicy
    memory_limit: int
    turn_limit: int
    # Asked in the past: the moment after which the session's own words are left out
    # (`candidates.said`); None: asked now.
    said_by: datetime | None = None


def context_candidates(request: ContextRequest) -> Gathered:
    """The candidates of every source for `request`; the recall of turns only with a
    query."""
    session, query, rules = request.session, request.query, request.rules
    summaries, at = session_at(
        session.pk, active_summaries(session) if rules.compression else [], request.said_by
    )
    window = turn_candidates(
        session, rules.keep_last_turns, request.turn_limit, not rules.compression, at
    )
    recalled, past = FoundCandidates(), FoundCandidates()
    if query.strip():
        offered = {int(c.order[0]) for c in window}
        recalled = recalled_turn_candidates(
            request.tenant, session, query, offered, request.as_of, request.said_by
        )
        past_limit = settings.ENGRAM_CONTEXT_PAST_TURNS
        past = past_turn_candidates(
            request.tenant, session, query, past_limit, request.as_of, request.actor
        )
    memories = memory_candidates(
        request.tenant, request.actor, query, request.memory_limit, request.as_of, session.pk,
        request.said_by,
    )  # fmt: skip
    state = state_candidates(session, request.said_by)
    candidates = [
        *state.offered,
        *window,
        *summary_candidates(session, summaries),
        *recalled.candidates,
        *past.candidates,
        *predecessor_candidates(
            session,
            compression=rules.compression,
            depth=rules.predecessor_depth,
            budget=request.budget,
            said_by=request.said_by,
        ),
        *memories.candidates,
        *failure_candidates(session, request.said_by),
        *tool_output_candidates(session, request.said_by),
    ]
    return Gathered(
        candidates=candidates,
        semantic=recalled.semantic | past.semantic | memories.semantic,
        supported=recalled.supported | past.supported | memories.supported,
        undated=state.undated,
    )
