"""The context assembled for a session's next LLM call. When a session is due for
compaction is `memory_app.window.selectors`' business."""

from __future__ import annotations

import json
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np
from django.conf import settings
from django.utils import timezone

from memory_app.embedding import embed_query, embed_texts
from memory_app.selectors.context_recall import (
    RecallCandidates,
    past_turn_candidates,
    recalled_turn_candidates,
)
from memory_app.selectors.memories import Actor, memory_neighbours
from memory_app.selectors.recall import TURN_SOURCES
from memory_app.selectors.search import MemoryFilters, memory_search
from memory_app.window.milestones import KINDS, milestone_lines
from memory_app.window.models import ContextSummary
from memory_app.window.packing import Candidate, Score, content_tokens, pack, score_candidate
from memory_app.window.policies import DEFAULT_POLICY, context_policy_get
from memory_app.window.predecessors import predecessor_candidates
from memory_app.window.selectors import active_summaries
from memory_app.window.tokens import truncate_to_tokens
from memory_app.window.tools import eviction_reason, tool_output_candidates
from sessions_app.selectors.sessions import session_get
from sessions_app.selectors.turns import (
    steps_failed_recent,
    turn_times,
    turns_live,
    turns_open,
)
from sessions_app.selectors.workspace import components_by_mpn, selection_list

if TYPE_CHECKING:
    from sessions_app.models import ChatSession, Tenant

MAX_VERBATIM_TURNS = 50  # uncompacted turns offered verbatim, newest first
DEFAULT_MEMORY_LIMIT = 12  # long-term memories searched for a context (seed 004's k=12)
# With a query, these kinds go in only if they relate to it (ENGRAM_CONTEXT_MIN_SEMANTIC):
# a context is read by a model whose attention and price grow with every token, so the
# budget is a ceiling, not a target. Session state, the reserved window and failures are
# always offered.
RELEVANCE_FLOORED = frozenset(
    {"summary", "milestone", "recalled_turn", "past_turn", "memory", "turn"}
)
MAX_FAILURES = 5
MAX_LINE_TOKENS = 300  # one state/result line never crowds out everything else
MILESTONE_SIGNAL = {
    "selections": 0.9,
    "constraints": 0.8,
    "commitments": 0.8,
    "open_questions": 0.8,
    "decisions": 0.7,
    "ids": 0.7,
    "items": 0.5,
}


# --- Context assembly --------------------------------------------------------------------

_VECTOR_CACHE: OrderedDict[str, np.ndarray] = OrderedDict()
_VECTOR_CACHE_SIZE = 8192  # ~12 MB of float32 vectors; texts repeat across requests


def _vectors(texts: list[str]) -> dict[str, np.ndarray]:
    """Embeddings of distinct texts in one batch; cached per process (LRU), since a
    session's summaries and milestones come back on every request."""
    out: dict[str, np.ndarray] = {}
    missing: list[str] = []
    for text in dict.fromkeys(texts):
        cached = _VECTOR_CACHE.get(text)
        if cached is None:
            missing.append(text)
        else:
            _VECTOR_CACHE.move_to_end(text)
            out[text] = cached
    if missing:
        for text, vector in zip(missing, embed_texts(missing), strict=True):
            array = np.asarray(vector, dtype=np.float32)
            out[text] = array
            _VECTOR_CACHE[text] = array
        while len(_VECTOR_CACHE) > _VECTOR_CACHE_SIZE:
            _VECTOR_CACHE.popitem(last=False)
    return out


def _line(text: str) -> str:
    return truncate_to_tokens(" ".join(text.split()), MAX_LINE_TOKENS)


def _session_candidates(session: ChatSession) -> list[Candidate]:
    at = session.last_active_at
    out: list[Candidate] = []
    if session.state:
        state = json.dumps(session.state, sort_keys=True, separators=(",", ":"), default=str)
        out.append(
            Candidate("state", "state", "state", _line(f"state: {state}"), "system", at, 0.8, (0,))
        )
    components = components_by_mpn(
        session=session, mpns=[session.focus_mpn or "", *(session.last_results or [])]
    )

    def describe(mpn: str) -> str:
        component = components.get(mpn)
        return f"{mpn} ({component.name})" if component and component.name else mpn

    if session.focus_mpn:
        component = components.get(session.focus_mpn)
        detail = f" — {component.summary}" if component and component.summary else ""
        out.append(
            Candidate(
                "focus",
                "focus",
                "state",
                _line(f"focus: {describe(session.focus_mpn)}{detail}"),
                "system",
                at,
                1.0,
                (1,),
            )
        )
    if session.last_results or session.last_query:
        results = "; ".join(
            f"{i}. {describe(mpn)}" for i, mpn in enumerate(session.last_results[:10], 1)
        )
        query = f'for "{session.last_query}"' if session.last_query else ""
        out.append(
            Candidate(
                "results",
                "results",
                "state",
                _line(f"last results {query}: {results or 'none'}"),
                "system",
                at,
                0.6,
                (2,),
            )
        )
    cart = selection_list(session=session)
    if cart:
        items = "; ".join(
            f"{row.position}. {row.mpn} x{row.quantity}" + (f" ({row.note})" if row.note else "")
            for row in cart
        )
        out.append(
            Candidate("cart", "cart", "state", _line(f"cart: {items}"), "system", at, 1.0, (3,))
        )
    return out


def _turn_candidates(
    session: ChatSession,
    keep_last: int,
    limit: int = MAX_VERBATIM_TURNS,
    include_compacted: bool = False,
) -> list[Candidate]:
    # Compression on: summaries stand in for compacted turns; off: every live turn.
    live = (turns_live if include_compacted else turns_open)(session_id=session.pk)
    turns = list(live.order_by("-turn_number")[:limit])
    return [
        Candidate(
            key=f"turn:{turn.turn_number}",
            kind="turn",
            section="turns",
            text=turn.user_message,
            reply=turn.assistant_response,
            role="user",
            at=turn.created_at,
            # The last keep_last_turns are the window proper; older open turns (not yet
            # compacted) compete on their merits.
            signal=1.0 if index < keep_last else 0.3,
            order=(turn.turn_number,),
        )
        for index, turn in enumerate(turns)
    ]


def _summary_candidates(session: ChatSession, summaries: list[ContextSummary]) -> list[Candidate]:
    out: list[Candidate] = []
    seen: set[str] = set()
    # A milestone is as recent as the turn it came from, not as the summary holding it.
    compacted_at = turn_times(session_id=session.pk, compacted=True)
    for summary in summaries:
        out.append(
            Candidate(
                key=f"summary:{summary.pk}",
                kind="summary",
                section="summaries",
                text=f"[turns {summary.first_turn}-{summary.last_turn}] {summary.summary}",
                role="system",
                at=summary.last_turn_at,
                signal=0.5,
                order=(summary.first_turn,),
            )
        )
        for index, (key, turn, line) in enumerate(milestone_lines(summary.milestones)):
            if key in seen:
                continue
            seen.add(key)
            kind = key.split(":", 1)[0]
            out.append(
                Candidate(
                    key=f"milestone:{key}",
                    kind="milestone",
                    section="milestones",
                    text=line,
                    role="milestone",
                    at=compacted_at.get(turn, summary.last_turn_at),
                    signal=MILESTONE_SIGNAL.get(kind, 0.6),
                    order=(turn, KINDS.index(kind) if kind in KINDS else 99, index),
                )
            )
    return out


def _failure_candidates(session: ChatSession) -> list[Candidate]:
    steps = steps_failed_recent(session_id=session.pk, limit=MAX_FAILURES)
    return [
        Candidate(
            key=f"failure:{step.pk}",
            kind="failure",
            section="failures",
            text=_line(
                f"[t{step.turn.turn_number}] {step.step_type}"
                + (f" ({step.model})" if step.model else "")
                + f" failed: {step.error or 'no error given'}"
            ),
            role="tool",
            at=step.created_at,
            signal=0.7,
            order=(step.turn.turn_number, step.step_order),
        )
        for step in steps
    ]


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


def _row(candidate: Candidate, score: Score, tokens: int) -> dict[str, Any]:
    return {
        "key": candidate.key,
        "kind": candidate.kind,
        "tokens": tokens,
        "score": round(score.total, 4),
        "score_parts": {
            "recency": round(score.recency, 4),
            "semantic": round(score.semantic, 4),
            "role": score.role,
            "signal": round(score.signal, 4),
        },
    }


def _memory_candidates(
    tenant: Tenant,
    session: ChatSession,
    query: str,
    acting_user_id: str | None,
    acting_roles: list[str],
    limit: int = DEFAULT_MEMORY_LIMIT,
) -> list[Candidate]:
    """Long-term memories that answer `query`, as the acting user (by default the
    session's user) may see them: visibility is the search's, the context only ranks."""
    if not query.strip() or limit <= 0:
        return []
    actor = Actor(user_id=acting_user_id or session.user_id, roles=tuple(acting_roles))
    # The user's conversation turns are recalled on their own (`context_recall`).
    hits = memory_search(
        tenant=tenant,
        actor=actor,
        query=query,
        limit=limit,
        filters=MemoryFilters(exclude_sources=TURN_SOURCES),
    ).hits
    # Two memories that read the same (a preference stated in two turns) are one line.
    by_text: dict[str, Any] = {}
    for hit in hits:
        by_text.setdefault(_line(hit.memory.summary or hit.memory.content), hit)
    return _related_memory_candidates(tenant, actor, list(by_text.values())) + [
        Candidate(
            f"memory:{hit.memory.pk}",
            "memory",
            "memories",
            text,
            "memory",
            hit.memory.last_accessed_at or hit.memory.updated_at,
            float(hit.memory.importance),
            (index,),
        )
        for index, (text, hit) in enumerate(by_text.items())
    ]


def _related_memory_candidates(tenant: Tenant, actor: Actor, hits: list[Any]) -> list[Candidate]:
    """A found memory's direct relations come with it (seed 001: "supersedes",
    "derived_from", "related_to"), as kind `related_memory` with a little less signal
    than their anchor, so the breakdown shows why they are there."""
    anchors = {hit.memory.pk: hit.memory for hit in hits}
    out: list[Candidate] = []
    for index, (anchor, kind, memory) in enumerate(
        memory_neighbours(tenant=tenant, actor=actor, memory_ids=list(anchors))
    ):
        out.append(
            Candidate(
                f"memory:{memory.pk}",
                "related_memory",
                "memories",
                _line(f"({kind.replace('_', ' ')}) {memory.summary or memory.content}"),
                "memory",
                memory.last_accessed_at or memory.updated_at,
                0.8 * min(float(memory.importance), float(anchors[anchor].importance)),
                (100 + index,),
            )
        )
    return out


def _relevant(
    candidates: list[Candidate], semantic: dict[str, float], exempt: set[str], query: str
) -> tuple[list[Candidate], list[Candidate]]:
    """(offered, left out as unrelated to the query): see RELEVANCE_FLOORED. `exempt`:
    the reserved window and the recalled turns the search supports lexically."""
    floor = float(settings.ENGRAM_CONTEXT_MIN_SEMANTIC)
    if not query.strip() or floor <= 0:
        return candidates, []
    offered, unrelated = [], []
    for candidate in candidates:
        low = semantic.get(candidate.key, 0.0) < floor
        if low and candidate.kind in RELEVANCE_FLOORED and candidate.key not in exempt:
            unrelated.append(candidate)
        else:
            offered.append(candidate)
    return offered, unrelated


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
    """The messages for the session's next LLM call, packed under `budget` tokens, from
    at most `memory_limit` found memories (default: the policy's K) and `turn_limit` open
    turns, under the named context `policy` (default: the session's). `as_of`: when the
    question is asked (default now); the recall of turns reads the query's time phrases
    against it ("last month", "in May") and prefers the turns said then."""
    session = session_get(tenant=tenant, session_id=session_id)
    now = now or timezone.now()
    rules = context_policy_get(
        policy or session.context_policy or DEFAULT_POLICY,
        default_memory_limit=DEFAULT_MEMORY_LIMIT,
        session_keep_last_turns=session.compact_keep_last_turns,
        tenant_id=tenant.pk,
    )
    keep_last = rules.keep_last_turns
    summaries = active_summaries(session) if rules.compression else []
    window_turns = _turn_candidates(session, keep_last, turn_limit, not rules.compression)
    has_query = bool(query.strip())
    recalled = (
        recalled_turn_candidates(
            tenant, session, query, {int(c.order[0]) for c in window_turns}, as_of or now
        )
        if has_query
        else RecallCandidates()
    )
    past = (
        past_turn_candidates(
            tenant, session, query, settings.ENGRAM_CONTEXT_PAST_TURNS, as_of or now
        )
        if has_query
        else RecallCandidates()
    )
    semantic = recalled.semantic | past.semantic
    candidates = [
        *_session_candidates(session),
        *window_turns,
        *_summary_candidates(session, summaries),
        *recalled.candidates,
        *past.candidates,
        *predecessor_candidates(
            session,
            summary_candidates=_summary_candidates,
            active_summaries=active_summaries if rules.compression else lambda _: [],
            line=_line,
            depth=rules.predecessor_depth,
            budget=budget,
        ),
        *_memory_candidates(
            tenant,
            session,
            query,
            acting_user_id,
            acting_roles or [],
            rules.memory_limit if memory_limit is None else memory_limit,
        ),
        *_failure_candidates(session),
        *tool_output_candidates(session, _line),
    ]

    if query.strip():

        def embed_text_of(c: Candidate) -> str:
            return f"{c.text}\n{c.reply}".strip() if c.reply else c.text

        to_embed = [c for c in candidates if c.key not in semantic]
        vectors = _vectors([embed_text_of(c) for c in to_embed])
        # The query's vector from the query cache, which the turn recall and the memory
        # search above have filled, not from `_vectors` (whose cache holds the session's
        # texts; the query is new).
        query_vector = np.asarray(embed_query(query), dtype=np.float32)
        semantic |= {c.key: float(vectors[embed_text_of(c)] @ query_vector) for c in to_embed}
    half_life = settings.ENGRAM_CONTEXT_HALF_LIFE_MINUTES
    scores = {
        c.key: score_candidate(
            c, now=now, semantic=semantic.get(c.key, 0.0), half_life_minutes=half_life
        )
        for c in candidates
    }
    window = [
        c.key
        for c in sorted(
            (c for c in candidates if c.kind == "turn"), key=lambda c: c.order, reverse=True
        )
    ][:keep_last]
    evicted: list[tuple[Candidate, str]] = []
    kept: list[Candidate] = []
    for candidate in candidates:
        reason = eviction_reason(
            candidate, window=set(window), semantic=semantic, has_query=bool(query.strip()),
            now=now,
        )  # fmt: skip
        if reason is None:
            kept.append(candidate)
        else:
            evicted.append((candidate, reason))
    offered, unrelated = _relevant(
        kept, semantic, set(window) | recalled.supported | past.supported, query
    )
    packed = pack(
        offered,
        scores,
        budget,
        reserved=window,
        reserve_tokens=int(budget * settings.ENGRAM_CONTEXT_WINDOW_SHARE),
    )

    packed.excluded.extend((c, scores[c.key], content_tokens(c), "not_relevant") for c in unrelated)

    # Parts add up to total_tokens exactly: each candidate's own text, then "framing"
    # (section headers, joining newlines, per-message overhead, reply priming).
    parts: dict[str, dict[str, int]] = {}
    for candidate in candidates:
        parts.setdefault(candidate.kind, {"included": 0, "excluded": 0, "tokens": 0})
    own = {c.key: content_tokens(c) for c, _, _ in packed.included}
    for candidate, _, _ in packed.included:
        parts[candidate.kind]["included"] += 1
        parts[candidate.kind]["tokens"] += own[candidate.key]
    for candidate, *_ in packed.excluded:
        parts[candidate.kind]["excluded"] += 1
    for candidate, _ in evicted:
        parts[candidate.kind]["excluded"] += 1
    parts["framing"] = {
        "included": 0,
        "excluded": 0,
        "tokens": packed.total_tokens - sum(own.values()),
    }
    return AssembledContext(
        session_id=session.pk,
        query=query,
        budget=budget,
        messages=packed.messages,
        total_tokens=packed.total_tokens,
        included=[
            {**_row(c, s, own[c.key]), "reserved": c.key in packed.reserved}
            for c, s, _ in packed.included
        ],
        excluded=[
            *({**_row(c, s, t), "reason": reason} for c, s, t, reason in packed.excluded),
            *(
                {**_row(c, scores[c.key], content_tokens(c)), "reason": reason}
                for c, reason in evicted
            ),
        ],
        parts=parts,
        policy=rules.as_dict(),
    )
