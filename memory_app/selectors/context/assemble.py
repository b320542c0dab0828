"""The context for a session's next LLM call: gather the candidates of every source,
score them against the query, leave out what the page-out and the relevance floor drop,
pack the rest under the budget, and say what went in and what did not."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.utils import timezone

from memory_app.selectors.context.candidates import ContextRequest, context_candidates
from memory_app.selectors.context.candidates.memories import DEFAULT_MEMORY_LIMIT
from memory_app.selectors.context.candidates.said import said_moment
from memory_app.selectors.context.candidates.turns import MAX_VERBATIM_TURNS, turn_run
from memory_app.selectors.context.eligibility import eligible
from memory_app.selectors.context.explanation import explain
from memory_app.selectors.context.packing import pack
from memory_app.selectors.context.scoring import candidate_scores, semantic_scores
from memory_app.selectors.memories import Actor
from memory_app.window.policies import DEFAULT_POLICY, ContextPolicy, context_policy_get
from sessions_app.selectors.sessions import session_get

if TYPE_CHECKING:
    from sessions_app.models import ChatSession, Tenant

# The reason given for a part of the session's state that, asked in the past, has no
# version then (`candidates.state`).
NO_HISTORY = "no_history"


@dataclass
class AssembledContext:
    session_id: uuid.UUID
    query: str
    budget: int
    messages: list[dict[str, str]]
    total_tokens: int
    included: list[dict[str, Any]] = field(default_factory=list)
    excluded: list[dict[str, Any]] = field(default_factory=list)
    parts: dict[str, dict[str, int]] = field(default_factory=dict)
    policy: dict[str, Any] = field(default_factory=dict)


def context_assemble(
    *,
    tenant: Tenant,
    session_id: Any,
    query: str = "",
    budget: int,
    acting_user_id: str | None = None,
    acting_roles: list[str] | None = None,
    now: datetime | None = None,
    memory_limit: int | None = None,
    turn_limit: int = MAX_VERBATIM_TURNS,
    policy: str | None = None,
    as_of: datetime | None = None,
) -> AssembledContext:
    """The messages for the session's next LLM call under `budget` tokens, from at most
    `memory_limit` memories the acting user may see (default: the policy's K, the
    session's user) and `turn_limit` open turns, under `policy` (default: the session's).
    `as_of` (default now) is when the query is asked: its time phrases are read against
    it ("last month", "in May") and the turns said then preferred; asked in the past,
    the context shows what was said and known by `as_of` (`candidates.said`), and what
    of the session's state has no version then is reported as left out (`NO_HISTORY`)."""
    session = session_get(tenant=tenant, session_id=session_id)
    now = now or timezone.now()
    rules = _rules(tenant, session, policy)
    actor = Actor(user_id=acting_user_id or session.user_id, roles=tuple(acting_roles or []))
    gathered = context_candidates(
        ContextRequest(
            tenant=tenant, session=session, query=query, as_of=as_of or now, actor=actor,
            budget=budget, rules=rules, turn_limit=turn_limit,
            memory_limit=rules.memory_limit if memory_limit is None else memory_limit,
            said_by=said_moment(as_of, now),
        )
    )  # fmt: skip
    candidates, undated = gathered.candidates, gathered.undated
    semantic = semantic_scores(candidates, query, known=gathered.semantic)
    scores = candidate_scores(candidates + undated, semantic, now)
    run = turn_run(candidates)
    window = run[: rules.keep_last_turns]
    split = eligible(
        candidates, window=window, semantic=semantic, exempt=gathered.supported, query=query,
        now=now,
    )  # fmt: skip
    split.evicted.extend((candidate, NO_HISTORY) for candidate in undated)
    reserve = int(budget * settings.ENGRAM_CONTEXT_WINDOW_SHARE)
    packed = pack(
        split.offered, scores, budget, run=run, window=len(window), reserve_tokens=reserve
    )
    explained = explain(candidates + undated, packed, split, scores)
    return AssembledContext(
        session_id=session.pk, query=query, budget=budget, messages=packed.messages,
        total_tokens=packed.total_tokens, included=explained.included,
        excluded=explained.excluded, parts=explained.parts, policy=rules.as_dict(),
    )  # fmt: skip


def _rules(tenant: Tenant, session: ChatSession, policy: str | None) -> ContextPolicy:
    """The named context policy, by default the session's, else the default one."""
    return context_policy_get(
        policy or session.context_policy or DEFAULT_POLICY,
        default_memory_limit=DEFAULT_MEMORY_LIMIT,
        session_keep_last_turns=session.compact_keep_last_turns,
        tenant_id=tenant.pk,
    )
