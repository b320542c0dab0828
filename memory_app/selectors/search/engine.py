"""`memory_search`: the memories that best answer a query, visible to the actor.

The round trips of a search: the query's lexical terms (`lexical_query`), the pool
(`read_pool`: both steps and their union in one statement), then the hits' rows with
their edges (`hit_rows`); the time boost, the subject the question asks for
(`asked_subject`) and the current-state weighting each add one when the query has a
time phrase, asks for an attribute of its user ("where do I live?") or asks about now.
The memories dated after the question, the speaker the query names and the length prior
are read from the pool's own rows (no round trip). A query ordered by an event ("before
I moved") first searches the event's words lexically to date it (`_event_dated`).
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import connection
from django.utils import timezone

from config.model_rows import load_timestamps_compiled
from memory_app.embedding import embed_query, vector_literal
from memory_app.models import Memory
from memory_app.selectors.currency import apply_currency
from memory_app.selectors.search.after_question import weigh_after_question
from memory_app.selectors.search.asked_subject import apply_asked_subject
from memory_app.selectors.search.bm25 import bm25_params
from memory_app.selectors.search.feedback import apply_feedback
from memory_app.selectors.search.filters import MemoryFilters, SearchWhere, search_where
from memory_app.selectors.search.fusion import Scored, SearchMode, best_first, score_pool
from memory_app.selectors.search.hydration import hit_rows
from memory_app.selectors.search.length_prior import apply_length_prior
from memory_app.selectors.search.lexical import LexicalQuery, lexical_query
from memory_app.selectors.search.lexical_hits import lexical_hits_params
from memory_app.selectors.search.pool import Pool, pool_statement, read_pool
from memory_app.selectors.search.speaker import apply_speaker_match, query_speaker_names
from memory_app.selectors.search.thread_neighbours import apply_thread_neighbours
from memory_app.selectors.search_time import apply_time_scope, query_time_scope, within_reach
from memory_app.selectors.validity import validity_start
from memory_app.timeq import TimeScope
from memory_app.timeq.time_only import asks_only_time

# A score held below the one before it is this much lower (scores have 6 decimals).
SCORE_STEP = 1e-6
# The candidates each list brings to the pool (at least; 3 x limit for a long page): the
# lead's words (search.feedback) lift lines from deep in either list.
POOL_PER_SIDE = 60

if TYPE_CHECKING:
    from memory_app.selectors.memories import Actor
    from sessions_app.models import Tenant


@dataclass
class SearchHit:
    memory: Memory
    score: float
    parts: dict[str, float]

    @property
    def beyond_vector(self) -> bool:
        """Whether the search relates the hit to the query by more than its cosine: it
        shares a word with the query (BM25 above 0), it is of the time the query names
        (part `time`), or it states the subject the query asks for (part `asked`). A
        vector says little of a detail inside a long text, of a date, or of "I moved to
        Porto" as the answer to "where do I live?"."""
        return any(self.parts.get(part, 0.0) > 0 for part in ("lexical", "time", "asked"))


@dataclass
class SearchOutcome:
    hits: list[SearchHit]
    vector_ranking: list[uuid.UUID] = field(default_factory=list)
    lexical_ranking: list[uuid.UUID] = field(default_factory=list)
    time_scope: TimeScope | None = None  # the query's time phrase, when `as_of` was given
    # The query named a time and nothing else (`_time_first`): its hits relate to it by
    # when they occurred (part `time`) more than by their cosine.
    time_only: bool = False

    def related(self, hit: SearchHit, semantic: float) -> float:
        """How near `hit` is to the query in meaning, as a context weighs it: `semantic`
        (its cosine), or for a query about a time alone its time credit where higher."""
        if self.time_only:
            return max(semantic, hit.parts.get("time", 0.0))
        return semantic


def memory_search(
    *,
    tenant: Tenant,
    actor: Actor,
    query: str,
    user_id: str | None = None,
    agent_id: str | None = None,
    types: Sequence[str] | None = None,
    tags: Sequence[str] | None = None,
    limit: int = 10,
    mode: SearchMode = "hybrid",
    now: datetime | None = None,
    query_embedding: list[float] | None = None,
    filters: MemoryFilters | None = None,
    as_of: datetime | None = None,
) -> SearchOutcome:
    """The memories that best answer `query`, visible to `actor`, best first. A read
    only: the caller records the access (`memory_record_access`) for the hits it uses.

    `as_of`, the moment the question is asked: the query's time phrases are read against
    it (a boost, memory_app.selectors.search_time) and it stands for `now`. A query that
    asks about a time and nothing else ("what happened last week?") answers with the
    memories of that time first (`_time_first`)."""
    scope = _query_scope(
        query, as_of, tenant=tenant, actor=actor, user_id=user_id, agent_id=agent_id,
        filters=filters,
    )  # fmt: skip
    if mode in ("hybrid", "vector") and query_embedding is None:
        query_embedding = embed_query(query)
    search = partial(
        _searched, tenant=tenant, actor=actor, query=query, user_id=user_id,
        agent_id=agent_id, types=types, tags=tags, limit=limit, mode=mode,
        now=now or as_of or timezone.now(), query_embedding=query_embedding, as_of=as_of,
        scope=scope,
    )  # fmt: skip
    if scope is not None and scope.has_interval and as_of and asks_only_time(query, as_of):
        return _time_first(search, scope, filters, limit)
    return search(filters=filters)


def _time_first(
    search: Callable[..., SearchOutcome],
    scope: TimeScope,
    filters: MemoryFilters | None,
    limit: int,
) -> SearchOutcome:
    """The search of a query that names a time and nothing else: the memories whose time
    (when what they tell began) lies in the time's interval or its told-after reach
    (`within_reach`), those of the interval first, then the others by how soon after it
    (part `time`), each by the search's score; when fewer than `limit` did, the rest of the
    ordinary ranking after them. The time orders before the score because a question
    without a subject has no meaning for the cosine and BM25 to match: "what did we
    discuss last Tuesday?" is answered by Tuesday's lines before Thursday's "we
    discussed ...". Each hit's score is held below the one before it
    (`scored_in_order`), so that the scores say this order. The rankings reported are
    the first search's."""
    # Read wider than `limit`, so that the interval's own memories are not cut for
    # told-after ones the score put ahead of them.
    inside = search(filters=within_reach(filters or MemoryFilters(), scope), limit=3 * limit)
    in_time_order = sorted(inside.hits, key=lambda hit: -hit.parts.get("time", 0.0))
    hits = in_time_order[:limit]
    if len(hits) < limit:
        found = {hit.memory.pk for hit in hits}
        rest = [hit for hit in search(filters=filters).hits if hit.memory.pk not in found]
        hits += rest[: limit - len(hits)]
    return dataclasses.replace(inside, hits=scored_in_order(hits), time_only=True)


def scored_in_order(hits: list[SearchHit]) -> list[SearchHit]:
    """`hits` in their order, each scored at most just below the hit before it: the score
    of an order that puts the time before the search's score (`_time_first`). A hit
    keeps its own score where that is already lower; its parts stay as they were."""
    out: list[SearchHit] = []
    for hit in hits:
        if out and hit.score >= out[-1].score:
            hit = dataclasses.replace(hit, score=round(out[-1].score - SCORE_STEP, 6))
        out.append(hit)
    return out


def _searched(
    *,
    tenant: Tenant,
    actor: Actor,
    query: str,
    user_id: str | None,
    agent_id: str | None,
    types: Sequence[str] | None,
    tags: Sequence[str] | None,
    limit: int,
    mode: SearchMode,
    now: datetime,
    query_embedding: list[float] | None,
    filters: MemoryFilters | None,
    as_of: datetime | None,
    scope: TimeScope | None,
) -> SearchOutcome:
    """One search under `filters`: the pool, its ranking, the hits' rows."""
    where, params = search_where(
        tenant=tenant, actor=actor, user_id=user_id, agent_id=agent_id, types=types, tags=tags,
        filters=filters,
    )  # fmt: skip
    if query_embedding is not None:
        params["q"] = vector_literal(query_embedding)
    with connection.cursor() as cursor:
        load_timestamps_compiled(cursor)  # the pool's two dates a candidate
        lexical = _lexical_terms(cursor, mode, query, tenant, actor, where, user_id)
        if "q" not in params and lexical is None:
            return SearchOutcome([], [], [], scope)
        pool = _pool(
            cursor, where, params, lexical, query,
            candidates=max(3 * limit, POOL_PER_SIDE), lexemes=mode == "hybrid",
        )  # fmt: skip
        if not pool.candidates:
            return SearchOutcome([], pool.vector_ranking, pool.lexical_ranking, scope)
        scored = _ranked(
            cursor, pool, query, mode=mode, now=now, as_of=as_of, scope=scope,
            valid_at=filters.valid_at if filters is not None else None,
        )  # fmt: skip
        scored.sort(key=best_first)
        scored = scored[:limit]
        memories = hit_rows([pk for pk, _, _ in scored])
    hits = [SearchHit(memories[pk], score, parts) for pk, score, parts in scored if pk in memories]
    return SearchOutcome(hits, pool.vector_ranking, pool.lexical_ranking, scope)


def _lexical_terms(
    cursor: Any,
    mode: SearchMode,
    query: str,
    tenant: Tenant,
    actor: Actor,
    where: SearchWhere,
    user_id: str | None,
) -> LexicalQuery | None:
    """The query's lexical terms, None in vector mode; an end user's tenant-wide search
    also weighs them for its own branch (`lexical_query`)."""
    if mode not in ("hybrid", "lexical"):
        return None
    own_user_id = actor.user_id if where.own_branch is not None else None
    return lexical_query(
        cursor, tenant=tenant, user_id=user_id, text=query, own_user_id=own_user_id
    )


def _query_scope(query: str, as_of: datetime | None, **where: Any) -> TimeScope | None:
    """The query's time phrase read against `as_of`, an event it orders by dated by the
    memories `where` may read (`_event_dated`)."""
    scope = query_time_scope(query, as_of)
    if scope is None or not scope.anchor or as_of is None:
        return scope
    return _event_dated(scope, as_of, **where)


def _event_dated(scope: TimeScope, as_of: datetime, **where: Any) -> TimeScope:
    """An event the query orders by ("before I moved") dated by the memory that best
    tells of it: the top hit of a lexical search for the event's words, among the
    memories this search may read, when it happened by `as_of`. Its time is when what it
    tells began (`validity_start`: valid_from, else occurred_at, else when it was noted).
    Else the scope stays undated and boosts nothing.

    BM25 alone: the memory must share a word with the event anyway, and a vector step of
    its own would add the event's embedding and a scan of the vectors to every such
    question (docs/decisions/search-event-lookup-lexical.md)."""
    assert scope.anchor is not None
    found = memory_search(query=scope.anchor, limit=1, mode="lexical", **where).hits
    if not found:
        return scope
    memory = found[0].memory
    when = validity_start(memory)
    return scope.around(when) if when <= as_of else scope


def _ranked(
    cursor: Any,
    pool: Pool,
    query: str,
    *,
    mode: SearchMode,
    now: datetime,
    as_of: datetime | None,
    scope: TimeScope | None,
    valid_at: datetime | None = None,
) -> list[Scored]:
    """The pool's members scored, unsorted: fusion and the final score (`score_pool`),
    the query's time phrase, the lead's words fused in (`feedback`), the lines around
    the lead in its thread, the speaker the query names, the memories dated after the
    question, the length prior, the memories that state the subject the question asks
    for (`asked_subject`), then the current-state weighting (at `valid_at` for a search
    filtered by it), which keeps each stale memory below its successor and so comes
    last."""
    scored = apply_time_scope(cursor, scope, score_pool(pool, mode=mode, now=now))
    scored = apply_feedback(
        scored, pool.candidates, hybrid=mode == "hybrid",
        semantic_weight=float(settings.ENGRAM_MEMORY_FUSION_SEMANTIC_WEIGHT),
    )  # fmt: skip
    scored = apply_thread_neighbours(scored, pool.candidates)
    scored = apply_speaker_match(scored, pool.candidates)
    scored = weigh_after_question(scored, pool.candidates, as_of)
    scored = apply_length_prior(scored, pool.candidates)
    scored = apply_asked_subject(
        cursor, query, scored, timed=scope is not None and scope.has_interval
    )
    return apply_currency(cursor, query, now, scored, scope, valid_at)


def _pool(
    cursor: Any,
    where: SearchWhere,
    params: dict[str, Any],
    lexical: LexicalQuery | None,
    query: str,
    *,
    candidates: int,
    lexemes: bool = False,
) -> Pool:
    """The candidate pool of a search whose vector step runs when `params` holds the
    query's vector (`q`), its lexical step when `lexical` is given; its members say
    whether `query` names their speaker when it names someone (`query_speaker_names`),
    and bring their lexemes with `lexemes` (a hybrid search's lead's words)."""
    vector = "q" in params
    params = params | {"k": candidates}
    speakers = query_speaker_names(query)
    if speakers:
        params["speakers"] = speakers
    if lexical is not None:
        params |= bm25_params(lexical) | lexical_hits_params(where, lexical)
    statement = pool_statement(
        where, vector=vector, lexical=lexical, candidates=candidates, speakers=bool(speakers),
        lexemes=lexemes,
    )  # fmt: skip
    return read_pool(cursor, statement, params)
