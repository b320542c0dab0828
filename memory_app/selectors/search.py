"""Hybrid memory search: vector top-k + BM25 top-k, fused by score, then seed 004's
final score.

1. Vector: HNSW over `embedding::halfvec(N)` with `hnsw.iterative_scan = relaxed_order`
   (SET LOCAL, this transaction only), so the hard filters (tenant, visibility, user, type,
   tags) applied after the index scan never starve the result; a MATERIALIZED CTE then
   restores exact distance order. A tenant-wide search looks in each visibility branch
   on its own (`nearest_sql`): the public memories in their own HNSW graph, the actor's
   own and those shared with the actor exactly (a few hundred rows, from indexes), merged
   by distance; one OR filter over the whole graph left the walk among mostly invisible
   neighbours. A search of one user's memories orders them exactly, read from the
   covering (tenant, user) index, and so does the full-precision cosine the fusion uses.
2. Lexical: BM25F inside PostgreSQL over `lexical_vector`: two fields, the memory's own
   text (weight A) and its window (B: for a memory in a thread, its neighbours around its
   own text, see `refresh_thread_window`; else its own text again), so a word it says
   itself counts twice in the term frequency and a neighbour's once (`_lexical_document`
   in memory_app.models). The
   query's English lexemes are looked up in `memory_term_stat` (document frequencies per
   user, kept by a trigger in the writing transaction) for their IDF; candidates come from
   the GIN indexes, ORing the query's terms, one visibility branch at a time like the
   vector step (public rows from a partial GIN of public memories, the actor's own from
   the (tenant, user, lexemes) GIN, those shared with the actor from the grants), so
   only rows the actor may see are read. The step is bounded: candidates come from the
   rarest terms whose postings fit ENGRAM_MEMORY_LEXICAL_MAX_POSTINGS (none if even the
   rarest does not), and at most that many rows are read a branch, so a query never
   scans the tenant's rows; the frequent terms left out (lowest IDF) still add to the
   score of every candidate either side found. The postings are counted where the
   branch reads: the actor's own branch by the actor's own statistics, the others by the
   tenant's (public postings are not counted apart: an upper bound).
   PostgreSQL's own ts_rank has no IDF and ranked LoCoMo turns below plain BM25.
3. Fusion by score: cosine and BM25 of every candidate in the pool (the union of both
   lists), each z-normalised over the pool, weighted ENGRAM_MEMORY_FUSION_SEMANTIC_WEIGHT
   and its complement; the fused score is then min-max scaled to [0, 1] ("relevance", 1 =
   best of the pool). Scores rank better than ranks: a query whose best lexical hit stands
   far above the rest keeps that margin, which RRF throws away.
4. Score: 0.6 * relevance + 0.2 * recency (half-life) + 0.1 * importance + 0.1 * access
   signal. The parts are returned: semantic (cosine), lexical (BM25), relevance, rrf (the
   reciprocal rank fusion of the two lists, kept for comparison), recency, importance,
   access.
5. Time: given `as_of`, a time phrase of the query ("last Saturday", "in May") adds a
   small boost to the candidates that occurred in its interval, part `time`
   (memory_app.selectors.search_time).
6. The current state: a query about "now" down-weights the candidates that no longer
   hold (superseded by a newer memory, or out of their validity interval), part
   `superseded` (memory_app.selectors.currency).

Steps 1-3's SQL is one statement (`_pool_sql`, sent with its SET LOCALs), after the IDF
lookup; then the hits' rows and their edges: four round trips per search.

Access statistics are recorded by the caller (`memory_record_access`) for the hits it
uses.
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from django.conf import settings
from django.db import connection
from django.utils import timezone

from memory_app.embedding import embed_query, vector_literal
from memory_app.models import EMBEDDING_DIMENSIONS, Memory
from memory_app.selectors.currency import apply_currency, valid_at_clause
from memory_app.selectors.memories import (
    Actor,
    own_branch_sql,
    visibility_branches_sql,
    visibility_sql,
)
from memory_app.selectors.search_time import apply_time_scope, query_time_scope

if TYPE_CHECKING:
    from memory_app.timeq import TimeScope
    from sessions_app.models import Tenant

SearchMode = Literal["hybrid", "vector", "lexical"]

WEIGHTS = {"relevance": 0.6, "recency": 0.2, "importance": 0.1, "access": 0.1}
ACCESS_SATURATION = 20  # reads after which the access signal is full
# BM25's term-frequency saturation and length normalisation: the usual range (k1 1.2-2,
# b 0.5-0.8); a thread window is four lines, so length matters a little less than in
# free text.
BM25_K1 = 1.2
BM25_B = 0.6
# HNSW candidate list. pgvector's default (40) gave recall@10 0.84 unfiltered and 0.92-0.94
# under the tenant + visibility filter at 100k clustered memories; 200 gives 0.97 for
# the same vector-step time (~4.5 ms: under a selective filter the iterative scan visits
# that many tuples anyway). docs/decisions/vector-index-halfvec-hnsw.md.
EF_SEARCH = 200


@dataclass
class SearchHit:
    memory: Memory
    score: float
    parts: dict[str, float]


@dataclass
class SearchOutcome:
    hits: list[SearchHit]
    vector_ranking: list[uuid.UUID] = field(default_factory=list)
    lexical_ranking: list[uuid.UUID] = field(default_factory=list)
    time_scope: TimeScope | None = None  # the query's time phrase, when `as_of` was given


@dataclass(frozen=True)
class MemoryFilters:
    """Hard filters beyond user, agent, types and tags; None means no filter. Applied in
    both rankings' WHERE, so a filtered search still returns `limit` hits if they exist."""

    session_id: uuid.UUID | None = None
    created_from: datetime | None = None  # inclusive
    created_to: datetime | None = None  # exclusive
    pinned: bool | None = None
    scope: str | None = None
    decay_below: float | None = None  # operators look for what is fading
    min_importance: float | None = None
    min_confidence: float | None = None
    metadata: dict[str, Any] | None = None  # the memory's metadata contains this object
    sources: tuple[str, ...] | None = None  # only memories from these sources
    exclude_sources: tuple[str, ...] | None = None
    exclude_session_id: uuid.UUID | None = None  # not those learnt in this session
    valid_at: datetime | None = None  # only those whose validity interval holds it

    def clauses(self, params: dict[str, Any]) -> list[str]:
        out: list[str] = []
        checks: list[tuple[str, Any, str]] = [
            ("session_id", self.session_id, "m.session_id = %(f_session_id)s"),
            ("sources", self.sources, "m.source = ANY(%(f_sources)s::varchar[])"),
            (
                "exclude_sources",
                self.exclude_sources,
                "m.source <> ALL(%(f_exclude_sources)s::varchar[])",
            ),
            (
                "exclude_session_id",
                self.exclude_session_id,
                "m.session_id IS DISTINCT FROM %(f_exclude_session_id)s",
            ),
            ("created_from", self.created_from, "m.created_at >= %(f_created_from)s"),
            ("created_to", self.created_to, "m.created_at < %(f_created_to)s"),
            ("pinned", self.pinned, "m.pinned = %(f_pinned)s"),
            ("scope", self.scope, "m.scope = %(f_scope)s"),
            ("decay_below", self.decay_below, "m.decay_score < %(f_decay_below)s"),
            ("min_importance", self.min_importance, "m.importance >= %(f_min_importance)s"),
            ("min_confidence", self.min_confidence, "m.confidence >= %(f_min_confidence)s"),
        ]
        for name, value, clause in checks:
            if value is not None:
                out.append(clause)
                params[f"f_{name}"] = list(value) if isinstance(value, tuple) else value
        if self.metadata:
            out.append("m.metadata @> %(f_metadata)s::jsonb")
            params["f_metadata"] = json.dumps(self.metadata)
        if self.valid_at is not None:
            out.append(valid_at_clause(params, self.valid_at))
        return out


@dataclass
class LexicalQuery:
    """The query's terms that occur, their IDF, the average document length, and the
    rarest of them that find the candidates (`candidate_lexemes`, within the postings
    bound). Every term scores a candidate: a frequent term found nothing by itself but
    still adds its (small) IDF to a row that a rarer term or the vector side found."""

    lexemes: list[str]
    idfs: list[float]
    average_length: float
    candidate_lexemes: list[str]
    # In a tenant-wide search by an end user, the candidates of the actor's own branch,
    # chosen by the actor's own document frequencies (`lexical_query`); None otherwise.
    own_candidate_lexemes: list[str] | None = None

    @property
    def tsquery(self) -> str:
        """The candidate terms ORed, each quoted as a literal lexeme (tsquery syntax)."""
        return _ored(self.candidate_lexemes)

    def branch_candidates(self, *, own: bool) -> list[str]:
        """The terms a branch reads rows by: the actor's own branch (`own`) its own
        candidates when they were chosen, every other branch `candidate_lexemes`."""
        if own and self.own_candidate_lexemes is not None:
            return self.own_candidate_lexemes
        return self.candidate_lexemes

    def finds_candidates(self, where: SearchWhere) -> bool:
        """Whether any branch of `where` has a candidate term to read rows by."""
        return any(
            self.branch_candidates(own=branch == where.own_branch) for branch in where.branches
        )


def _ored(lexemes: list[str]) -> str:
    return " | ".join(quote_lexeme(lexeme) for lexeme in lexemes)


@dataclass(frozen=True)
class SearchWhere:
    """A search's hard filters in two parts: `scope`, what the caller asked for (tenant,
    user, agent, types, tags, MemoryFilters), and `visible`, what the actor may see, also
    cut into `branches` that each step searches on its own: in a tenant-wide search most
    of the tenant's rows are other users' private memories, and a step that filtered
    them out after reading them read twenty rows for each it kept."""

    scope: str
    visible: str
    # `visible` as disjoint predicates that both steps search one at a time, then merge
    # (`visibility_branches_sql`); one branch, `visible` itself, when the caller named a
    # user: then the (tenant, user) indexes find a few hundred rows, and a partial index
    # of public memories under a one-user filter would not.
    branches: tuple[str, ...]
    tenant_id: int
    # The branch of the actor's own memories in a tenant-wide search (one of `branches`):
    # its lexical candidates come from the actor's own document frequencies, not the
    # tenant's, which in a large tenant put most words past the bound.
    own_branch: str | None = None
    # The one owner of a branch's rows, whose own lexical index (`memory_lexical_owner`)
    # its lexical step reads: the user the caller named (then there is one branch), or
    # in a tenant-wide search the actor, owner of `own_branch`. None: no such branch.
    owner: str | None = None
    # What a row of `owner`'s read through that index must still pass: the caller's
    # filters and the branch, without the tenant and user tests the index's keys already
    # made. With them, for rows no ANALYZE has counted yet (a user's first turns), the
    # planner reads the user's rows from the (tenant, user) btree and hashes them instead
    # of fetching the dozen ids.
    owned: str = "TRUE"

    @property
    def sql(self) -> str:
        return f"{self.scope} AND {self.visible}"

    def branch_owner(self, branch: str) -> str | None:
        """Whose memories `branch` holds when they are all one user's, else None."""
        if self.own_branch is None:  # the caller named a user: one branch, theirs
            return self.owner
        return self.owner if branch == self.own_branch else None


def search_where(
    *,
    tenant: Tenant,
    actor: Actor,
    user_id: str | None,
    agent_id: str | None,
    types: Sequence[str] | None,
    tags: Sequence[str] | None,
    filters: MemoryFilters | None = None,
) -> tuple[SearchWhere, dict[str, Any]]:
    visible, params = visibility_sql(actor)
    if user_id and user_id == actor.user_id:
        # Every memory of the actor's own is visible to the actor, whatever its scope: no
        # filter, so that the vector step can read its rows from an index alone.
        visible = "TRUE"
    owner_clauses = ["m.tenant_id = %(tenant)s"]
    params["tenant"] = tenant.pk
    if user_id:
        owner_clauses.append("m.user_id = %(user_id)s")
        params["user_id"] = user_id
    clauses: list[str] = []
    if agent_id:
        clauses.append("m.agent_id = %(agent_id)s")
        params["agent_id"] = agent_id
    if types:
        clauses.append("m.type = ANY(%(types)s::varchar[])")
        params["types"] = list(types)
    if tags:
        clauses.append("m.tags && %(tags)s::varchar[]")
        params["tags"] = list(tags)
    if filters is not None:
        clauses += filters.clauses(params)
    branches = (visible,) if user_id else tuple(visibility_branches_sql(actor))
    own = None if user_id else own_branch_sql(actor)
    owner = user_id or (actor.user_id if own is not None else None)
    owned_branch = visible if user_id else own_branch_sql(actor, owned=True)
    where = SearchWhere(
        scope=" AND ".join(owner_clauses + clauses),
        visible=visible,
        branches=branches,
        own_branch=own,
        owner=owner,
        tenant_id=tenant.pk,
        owned=" AND ".join([*clauses, owned_branch or "TRUE"]),
    )
    return where, params


# tsvector positions per lexeme and ts_rank's weight of each: all four labels weigh 1, so
# the own text (A) and the window (B) count alike and a word of the own text, which is in
# both, counts twice (BM25F with the own field weighted 2).
_FLAT_WEIGHTS = "'{1,1,1,1}'::float4[]"
# ts_rank's normaliser: the limit of sum(1/i^2), pi^2/6, as tsrank.c writes it.
_RANK_LIMIT = "1.64493406685"


def bm25_sql(alias: str, lexical: LexicalQuery | None) -> str:
    """BM25 of row `alias` for the query's lexemes (parameters: `bm25_params(lexical)`;
    0 without a lexical query), as one scalar expression: term frequency = positions of
    the lexeme in `lexical_vector`, document length = its distinct lexemes.

    The term frequency comes from `ts_rank` of the one-lexeme query with every weight 1,
    which is sum(1/i^2, i = 1..tf) / 1.64493406685 (tsrank.c's calc_rank_or): inverted,
    tf = round(1 / (1.64493406685 - rank * 1.64493406685) - 1/2), exact to tf = 256, the
    most positions a tsvector keeps. The plain reading of the same numbers, unnest() of the
    tsvector joined to the query's lexemes, is a set-returning function per row: 18 us a
    row against 4 here, which was most of the lexical step on a few thousand candidates.
    tests/memory_app/test_search_sql.py holds this to the definition, computed from unnest()."""
    terms = len(lexical.lexemes) if lexical is not None else 0
    if terms == 0:
        return "0::float8"
    vector = f"{alias}.lexical_vector"
    length_norm = (
        f"%(k1)s::float8 * (1 - %(b)s::float8 + %(b)s::float8 * length({vector}) "
        "/ %(avgdl)s::float8)"
    )
    parts = []
    for index in range(terms):
        rank = f"ts_rank({_FLAT_WEIGHTS}, {vector}, %(bm25_q{index})s::tsquery)::float8"
        tf = f"round(1 / ({_RANK_LIMIT} - {_RANK_LIMIT} * {rank}) - 0.5)"
        # idf * tf * (k1 + 1) / (tf + K), written with tf once: idf * (k1 + 1) / (1 + K / tf);
        # NULL (then 0) when the row does not hold the term.
        parts.append(
            f"coalesce(%(bm25_idf{index})s::float8 * %(k1_plus_one)s::float8 "
            f"/ (1 + {length_norm} / nullif({tf}, 0)), 0)"
        )
    return "(" + " + ".join(parts) + ")"


def bm25_params(lexical: LexicalQuery | None) -> dict[str, Any]:
    """The parameters of `bm25_sql(alias, lexical)`."""
    lexical = lexical or LexicalQuery([], [], 1.0, [])
    params: dict[str, Any] = {
        "avgdl": max(lexical.average_length, 1.0),
        "k1_plus_one": BM25_K1 + 1,
        "k1": BM25_K1,
        "b": BM25_B,
    }
    for index, (lexeme, idf) in enumerate(zip(lexical.lexemes, lexical.idfs, strict=True)):
        params[f"bm25_q{index}"] = quote_lexeme(lexeme)
        params[f"bm25_idf{index}"] = idf
    return params


# The lexical index of one user's memories (migration 0258): the row's lexemes, each
# keyed by its owner. `owner_lexeme_keys` writes the keys a query looks up.
OWNER_LEXEMES_SQL = "memory_owner_lexemes(o.tenant_id, o.user_id, o.lexical_vector)"


def owner_lexeme_keys(tenant_id: int, user_id: str, lexemes: Sequence[str]) -> list[str]:
    """The keys of `memory_owner_lexemes` (migration 0258) under which `user_id`'s rows
    holding `lexemes` are indexed: `<tenant>/<length of the id>/<id>/<lexeme>`, the
    length in characters, as PostgreSQL's length() counts them in a UTF-8 database."""
    prefix = f"{tenant_id}/{len(user_id)}/{user_id}/"
    return [prefix + lexeme for lexeme in lexemes]


def lexical_hits_params(where: SearchWhere, lexical: LexicalQuery) -> dict[str, Any]:
    """The parameters of `lexical_hits_sql(where, lexical)`: the candidate terms as a
    tsquery for the branches of many owners, as the owner's index keys for the branch of
    one (`SearchWhere.branch_owner`), and the bound of rows a branch reads."""
    keys: list[str] = []
    if where.owner is not None:
        own = where.own_branch is not None  # the actor's branch of a tenant-wide search
        keys = owner_lexeme_keys(where.tenant_id, where.owner, lexical.branch_candidates(own=own))
    return {
        "tsquery": lexical.tsquery,
        "owner_keys": keys,
        "cap": int(settings.ENGRAM_MEMORY_LEXICAL_MAX_POSTINGS),
    }


def quote_lexeme(lexeme: str) -> str:
    """One lexeme as a tsquery literal: quoted, so that nothing in it is an operator."""
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


def lexical_query(
    cursor: Any, *, tenant: Tenant, user_id: str | None, text: str, own_user_id: str | None = None
) -> LexicalQuery | None:
    """The query's English lexemes that occur in the searched memories, with their IDF
    from the per-user statistics (summed over the tenant's users when no user is given),
    the most frequent dropped until the postings left fit the bound. None when nothing
    of the query occurs.

    `own_user_id`, in a tenant-wide search (no `user_id`) by that end user: the
    candidates of their own branch are chosen again from their own statistics, as a
    search of their memories alone would. Chosen by the tenant's frequencies, a word a
    few thousand of a large tenant's memories hold found none of the actor's own, though
    the branch reads only theirs."""
    user_clause = "AND s.user_id = %(user_id)s" if user_id else ""
    own = own_user_id is not None
    # A subquery per lexeme, not a join: it is always an index probe on (tenant, user,
    # lexeme) or, across users, an index-only sum over (tenant, lexeme) INCLUDE df.
    # Joined, a table whose statistics are stale (just written) was read whole for the
    # user: 7,000 buffers and 3 ms for a two-word query on one conversation.
    own_columns = (
        """,
               (SELECT coalesce(sum(s.df), 0) FROM memory_term_stat s
                WHERE s.tenant_id = %(tenant)s AND s.user_id = %(own)s AND s.lexeme = q.lexeme),
               own.documents, own.lexemes"""
        if own
        else ""
    )
    own_totals = (
        """,
        own AS (
            SELECT coalesce(sum(s.documents), 0) AS documents,
                   coalesce(sum(s.lexemes), 0) AS lexemes
            FROM memory_lexicon_stat s WHERE s.tenant_id = %(tenant)s AND s.user_id = %(own)s
        )"""
        if own
        else ""
    )
    cursor.execute(
        f"""
        WITH q AS (
            SELECT DISTINCT unnest(tsvector_to_array(to_tsvector('english', %(text)s))) AS lexeme
        ),
        totals AS (
            SELECT coalesce(sum(s.documents), 0) AS documents,
                   coalesce(sum(s.lexemes), 0) AS lexemes
            FROM memory_lexicon_stat s WHERE s.tenant_id = %(tenant)s {user_clause}
        ){own_totals}
        SELECT q.lexeme,
               (SELECT coalesce(sum(s.df), 0) FROM memory_term_stat s
                WHERE s.tenant_id = %(tenant)s AND s.lexeme = q.lexeme {user_clause}),
               totals.documents, totals.lexemes{own_columns}
        FROM q CROSS JOIN totals{" CROSS JOIN own" if own else ""}
        """,  # noqa: S608 - fixed clauses; values are params
        {"text": text, "tenant": tenant.pk, "user_id": user_id, "own": own_user_id},
    )
    rows = cursor.fetchall()
    if not rows:
        return None
    lexical = bounded_lexical_query(
        [(row[0], int(row[1])) for row in rows], int(rows[0][2]), int(rows[0][3])
    )
    if lexical is None or not own:
        return lexical
    mine = bounded_lexical_query(
        [(row[0], int(row[4])) for row in rows], int(rows[0][5]), int(rows[0][6])
    )
    lexical.own_candidate_lexemes = mine.candidate_lexemes if mine is not None else []
    return lexical


def bounded_lexical_query(
    frequencies: list[tuple[str, int]], documents: int, length: int
) -> LexicalQuery | None:
    """BM25 terms from (lexeme, document frequency) pairs of a collection of `documents`
    documents totalling `length` lexemes: every term that occurs, rarest first, scores;
    the candidates come from the rarest ones whose postings together fit
    ENGRAM_MEMORY_LEXICAL_MAX_POSTINGS, so the step never reads the postings of a term
    many rows contain, whose IDF could barely move a ranking.

    Even the query's rarest term finds no candidates when its postings alone are past the
    bound: the step could only read an arbitrary `bound` of its rows (in table order, not
    by score), which in a tenant-wide search of a million memories was ~37,000 rows read
    to keep 2,000 the actor may see, 270 ms, for a sample no better than chance. The
    vector side still proposes, and every term still scores what it proposes.

    A term in more than half of the documents finds no candidates either (unless it is
    the rarest the query has and within the bound: a user's three memories and a word
    two of them say): in a conversation the speakers' names are in every thread window,
    so such a term would make every row a candidate while its IDF (below log 2, against
    log N for a rare term) cannot lift a row that nothing else found above one a rare
    term or the vector side found."""
    present = sorted((df, lexeme) for lexeme, df in frequencies if df > 0)
    if not present:
        return None
    documents = max(documents, present[-1][0])
    cap = int(settings.ENGRAM_MEMORY_LEXICAL_MAX_POSTINGS)
    candidates: list[str] = []
    postings = 0
    for df, lexeme in present:  # rarest first: they carry the most weight
        if postings + df > cap or (candidates and 2 * df > documents):
            break
        candidates.append(lexeme)
        postings += df
    return LexicalQuery(
        lexemes=[lexeme for _, lexeme in present],
        idfs=[math.log(1 + (documents - df + 0.5) / (df + 0.5)) for df, _ in present],
        average_length=length / documents if documents else 1.0,
        candidate_lexemes=candidates,
    )


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
    it (a boost, `search_time`) and it stands for `now`."""
    time_scope = query_time_scope(query, as_of)
    now = now or as_of or timezone.now()
    candidates = max(3 * limit, 30)
    where, params = search_where(
        tenant=tenant,
        actor=actor,
        user_id=user_id,
        agent_id=agent_id,
        types=types,
        tags=tags,
        filters=filters,
    )
    params["k"] = candidates
    vector: list[float] | None = None
    if mode in ("hybrid", "vector"):
        vector = query_embedding if query_embedding is not None else embed_query(query)
        params["q"] = vector_literal(vector)
    lexical: LexicalQuery | None = None

    with connection.cursor() as cursor:
        if mode in ("hybrid", "lexical"):
            lexical = lexical_query(
                cursor,
                tenant=tenant,
                user_id=user_id,
                text=query,
                own_user_id=actor.user_id if where.own_branch is not None else None,
            )
        if vector is None and lexical is None:
            return SearchOutcome([], [], [], time_scope)
        if lexical is not None:
            params |= bm25_params(lexical) | lexical_hits_params(where, lexical)
        pool = _pool_sql(where, vector=vector is not None, lexical=lexical)
        settings_first = 0
        if vector is not None:
            # The HNSW settings for this statement only, in the same query string: several
            # statements in one simple query run as one implicit transaction, so SET LOCAL
            # holds for the SELECT after it and ends with it (inside a caller's transaction,
            # with that). No BEGIN and COMMIT round trips of an atomic() block around it.
            # Django's psycopg cursors bind client-side (DATABASES' server_side_binding is
            # off), which is what lets one execute() carry the three statements.
            pool = (
                "SET LOCAL hnsw.iterative_scan = relaxed_order; "
                f"SET LOCAL hnsw.ef_search = {max(EF_SEARCH, candidates)}; {pool}"
            )
            settings_first = 2
        cursor.execute(pool, params)
        for _ in range(settings_first):
            cursor.nextset()  # past the SETs' results, to the SELECT's
        rows = cursor.fetchall()
        vector_ranking = [row[0] for row in sorted(
            (row for row in rows if row[1] is not None), key=lambda row: row[1]
        )]  # fmt: skip
        lexical_ranking = [row[0] for row in sorted(
            (row for row in rows if row[2] is not None), key=lambda row: row[2]
        )]  # fmt: skip
        candidates_of_pool = {
            row[0]: _Candidate(float(row[3]), float(row[4]), row[5], float(row[6]), int(row[7]))
            for row in rows
        }
        if not candidates_of_pool:
            return SearchOutcome([], vector_ranking, lexical_ranking, time_scope)
        weight = float(settings.ENGRAM_MEMORY_FUSION_SEMANTIC_WEIGHT)
        if mode == "vector":
            weight = 1.0
        elif mode == "lexical":
            weight = 0.0
        relevance = fuse_scores(
            {pk: (c.semantic, c.lexical) for pk, c in candidates_of_pool.items()}, weight
        )
        rrf = _rrf([ranking for ranking in (vector_ranking, lexical_ranking) if ranking])
        scored = sorted(
            apply_currency(
                cursor,
                query,
                now,
                apply_time_scope(
                    cursor,
                    time_scope,
                    [
                        _score(pk, candidate, relevance.get(pk, 0.0), rrf.get(pk, 0.0), now)
                        for pk, candidate in candidates_of_pool.items()
                    ],
                ),
            ),
            key=lambda hit: (-hit[1], -hit[2]["relevance"], str(hit[0])),
        )[:limit]
        memories = _hit_rows([pk for pk, _, _ in scored])
    hits = [SearchHit(memories[pk], score, parts) for pk, score, parts in scored if pk in memories]
    return SearchOutcome(hits, vector_ranking, lexical_ranking, time_scope)


# A hit's columns: all but the two tsvectors and the embedding, which no caller reads
# from a search hit (a deferred field still loads on access).
_HIT_COLUMNS = ", ".join(
    connection.ops.quote_name(field.column)
    for field in Memory._meta.concrete_fields
    if field.column and field.name not in ("search_vector", "lexical_vector", "embedding")
)


def _hit_rows(ids: list[uuid.UUID]) -> dict[uuid.UUID, Memory]:
    """Whole rows for the hits returned only, not for the pool (3x larger), in one
    hand-written SELECT: compiling the ORM's in_bulk() for a model of 30 fields cost more
    than the query itself (1.3 of 3 ms a search, py-spy on LoCoMo questions).

    Each row brings its edges to other memories (`search_edges`: [type, target id] pairs,
    by edge id; not its version edges), which the response lists: a prefetch of
    `relations` was one more round trip and, in Django's per-instance bookkeeping, ~1 ms a
    search of ten hits (memory_app.api.serializers reads them, `memory_edges`)."""
    rows = Memory.objects.raw(
        f"SELECT {_HIT_COLUMNS}, coalesce(("  # noqa: S608
        "SELECT json_agg(json_build_array(r.type, r.target_id) ORDER BY r.id)"
        " FROM memory_relation r WHERE r.source_id = memory.id AND r.target_version IS NULL"
        "), '[]') AS search_edges FROM memory WHERE id = ANY(%s::uuid[])",
        [ids],
    )
    return {row.pk: row for row in rows}


def fuse_scores(
    signals: dict[uuid.UUID, tuple[float, float]], semantic_weight: float
) -> dict[uuid.UUID, float]:
    """Cosine and BM25 z-normalised over the pool, weighted, then scaled to [0, 1] (1 =
    the pool's best). A side that does not vary over the pool contributes nothing."""
    ids = list(signals)
    if not ids:
        return {}

    def z(values: list[float]) -> list[float]:
        mean = sum(values) / len(values)
        spread = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
        return [(v - mean) / spread if spread > 1e-12 else 0.0 for v in values]

    semantic = z([signals[pk][0] for pk in ids])
    lexical = z([signals[pk][1] for pk in ids])
    fused = [
        semantic_weight * s + (1 - semantic_weight) * lex
        for s, lex in zip(semantic, lexical, strict=True)
    ]
    low, high = min(fused), max(fused)
    if high - low <= 1e-12:
        return dict.fromkeys(ids, 1.0)
    return {pk: (value - low) / (high - low) for pk, value in zip(ids, fused, strict=True)}


def _rrf(rankings: list[list[uuid.UUID]]) -> dict[uuid.UUID, float]:
    """Reciprocal rank fusion, normalised: 1.0 = first in every list that ran."""
    k = int(settings.ENGRAM_MEMORY_RRF_K)
    best = max(1, len(rankings)) / (k + 1)
    fused: dict[uuid.UUID, float] = {}
    for ranking in rankings:
        for rank, pk in enumerate(ranking, start=1):
            fused[pk] = fused.get(pk, 0.0) + 1.0 / (k + rank)
    return {pk: value / best for pk, value in fused.items()}


@dataclass(frozen=True)
class _Candidate:
    """What ranking a pool member needs: its two signals and the fields of seed 004's
    final score."""

    semantic: float
    lexical: float
    updated_at: datetime
    importance: float
    access_count: int


def _pool_sql(where: SearchWhere, *, vector: bool, lexical: LexicalQuery | None) -> str:
    """One statement for the whole candidate pool: the vector top-k (HNSW, then exact
    distance order), the BM25 top-k, and for each member of their union its rank in
    either list, its full-precision cosine and BM25, and the fields of the final score.
    One round trip instead of three, and a lexical hit's BM25 is not computed twice.

    The lexical step reads the rows that hold a candidate term in each visibility branch
    (`lexical_hits_sql`), so only rows the actor may see; the vector step's branches
    bring their full-precision cosine along (`nearest_sql`), so the pool reads an
    embedding only for a row the lexical side alone found."""
    if vector:
        vector_ranked = f"""
            nearest AS MATERIALIZED ({nearest_sql(where)}),
            vector_ranked AS MATERIALIZED (
                SELECT id, semantic, row_number() OVER (ORDER BY distance) AS rank
                FROM nearest
            )"""  # noqa: S608 - `where` is built from fixed clauses; values are params
    else:
        vector_ranked = """
            vector_ranked AS (
                SELECT NULL::uuid AS id, NULL::float8 AS semantic, NULL::bigint AS rank
                WHERE false
            )"""
    if lexical is not None and lexical.finds_candidates(where):  # BM25 top-k of their finds
        lexical_ranked = f"""
            hits AS MATERIALIZED ({lexical_hits_sql(where, lexical)}),
            lexical_ranked AS MATERIALIZED (
                SELECT id, score, rank FROM (
                    SELECT m.id, bm25.score, row_number() OVER (
                        ORDER BY bm25.score DESC, m.created_at DESC, m.id
                    ) AS rank
                    FROM hits m
                    CROSS JOIN LATERAL (SELECT {bm25_sql("m", lexical)} AS score) AS bm25
                ) AS scored
                WHERE rank <= %(k)s
            )"""  # noqa: S608
    else:  # no lexical step, or every term past the bound: the terms still score
        lexical_ranked = """
            lexical_ranked AS (
                SELECT NULL::uuid AS id, NULL::float8 AS score, NULL::bigint AS rank WHERE false
            )"""
    bm25 = f"coalesce(l.score, {bm25_sql('m', lexical)})"
    # COALESCE stops at its first non-null argument: the row's (TOASTed) embedding is read
    # only for a candidate of the lexical side alone.
    semantic = f"coalesce(v.semantic, {_cosine('m')})" if vector else "0"
    return f"""
        WITH {vector_ranked}, {lexical_ranked},
        pool AS (SELECT id FROM vector_ranked UNION SELECT id FROM lexical_ranked)
        SELECT m.id, v.rank, l.rank, {semantic}, {bm25},
               m.updated_at, m.importance, m.access_count
        FROM pool JOIN memory m ON m.id = pool.id
        LEFT JOIN vector_ranked v ON v.id = m.id
        LEFT JOIN lexical_ranked l ON l.id = m.id
    """  # noqa: S608


def _cosine(alias: str) -> str:
    """The full-precision cosine of row `alias`'s embedding and the query (`%(q)s`)."""
    return f"1 - ({alias}.embedding <=> %(q)s::vector)"


def nearest_sql(where: SearchWhere) -> str:
    """The vector top-k under `where` (id, halfvec distance, full-precision cosine): one
    ORDER BY … LIMIT per visibility branch, each planned on its own (HNSW, the partial HNSW
    of public memories, or an exact order of a btree's or GIN's few rows), merged by
    distance. Branches are disjoint, so no row comes twice.

    The cosine is computed on the k rows left, from the embedding the branch already read:
    in an index-only scan of the covering (tenant, user) index, from the index, not from
    the row's TOAST. In the branch's own SELECT list, PostgreSQL would compute it below
    the sort, for every row of the user."""
    halfvec = f"halfvec({EMBEDDING_DIMENSIONS:d})"
    distance = f"m.embedding::{halfvec} <=> %(q)s::{halfvec}"
    selects = [
        f"SELECT m.id, {distance} AS distance, m.embedding FROM memory m"  # noqa: S608
        f" WHERE {where.scope} AND {branch} ORDER BY {distance} LIMIT %(k)s"
        for branch in where.branches
    ]
    merged = _merged(selects, order="distance")
    return f"SELECT n.id, n.distance, {_cosine('n')} AS semantic FROM ({merged}) AS n"  # noqa: S608


def lexical_hits_sql(where: SearchWhere, lexical: LexicalQuery | None = None) -> str:
    """The rows under `where` that hold one of the query's candidate terms (id, lexical
    vector, created_at), read one visibility branch at a time, each through its own index
    (the partial GIN of public memories, the owner's GIN for one user's memories, the
    grants GIN for those shared with the actor), at most ENGRAM_MEMORY_LEXICAL_MAX_POSTINGS
    a branch (parameters: `lexical_hits_params`). Under one OR filter the step read every
    row of the tenant holding the term, mostly other users' private ones, to keep ~5%.

    A branch of one owner's memories (`SearchWhere.branch_owner`: the user the caller
    named, or the actor's own branch, whose candidates come from the actor's own
    statistics) looks its terms up by `%(owner_keys)s` in `memory_lexical_owner`, where
    a word's postings are that user's rows only, then fetches those rows by id and tests
    them against `SearchWhere.owned`; the others match `%(tsquery)s`. Given `lexical`, a
    branch without candidate terms is left out."""
    selects = []
    for branch in where.branches:
        own = branch == where.own_branch
        if lexical is not None and not lexical.branch_candidates(own=own):
            continue
        if where.branch_owner(branch) is not None:
            selects.append(
                "SELECT m.id, m.lexical_vector, m.created_at"  # noqa: S608
                f" FROM unnest(ARRAY({_OWNER_HITS})) AS owned (id)"
                f" JOIN memory m ON m.id = owned.id WHERE {where.owned}"
                " LIMIT %(cap)s"
            )
            continue
        selects.append(
            "SELECT m.id, m.lexical_vector, m.created_at FROM memory m"  # noqa: S608
            f" WHERE {where.scope} AND {branch}"
            " AND m.lexical_vector @@ %(tsquery)s::tsquery LIMIT %(cap)s"
        )
    return _merged(selects)


# The ids of one owner's rows holding a candidate term, by their keys alone, as an
# ARRAY(subquery): an InitPlan, run once and planned on its own; the rows are then
# fetched by id (the outer query names neither tenant nor user: `SearchWhere.owned`).
# With the key lookup among the outer query's filters, the (tenant, user)
# btree offered PostgreSQL a plan that read the owner's rows and computed the index's
# function on each, ~25 us a row; for rows written since the last ANALYZE, of which the
# planner thinks the user has none, it chose it (284 calls, 12 ms, for a 4 ms search).
# As a plain joined subquery, the same estimate ran it inside a nested loop, once for
# each of the user's 419 rows (90 ms). Here the index is the only way in but reading
# the table, which the function's declared cost (migration 0258) rules out.
_OWNER_HITS = (
    f"SELECT o.id FROM memory o WHERE {OWNER_LEXEMES_SQL} && %(owner_keys)s::text[] LIMIT %(cap)s"  # noqa: S608
)


def _merged(selects: list[str], *, order: str = "") -> str:
    """One SELECT per branch as one: UNION ALL (branches are disjoint), then, with `order`,
    the best `k` of all."""
    if len(selects) == 1:
        return selects[0]
    union = " UNION ALL ".join(f"({select})" for select in selects)
    if not order:
        return union
    return f"SELECT * FROM ({union}) AS branches ORDER BY {order} LIMIT %(k)s"  # noqa: S608


def _score(
    pk: uuid.UUID, candidate: _Candidate, relevance: float, rrf: float, now: datetime
) -> tuple[uuid.UUID, float, dict[str, float]]:
    """The final score (seed 004) of one candidate and its parts."""
    half_life = float(settings.ENGRAM_MEMORY_RECENCY_HALF_LIFE_DAYS)
    age_days = max(0.0, (now - candidate.updated_at).total_seconds() / 86400)
    recency = 0.5 ** (age_days / half_life)
    access = min(1.0, math.log1p(candidate.access_count) / math.log1p(ACCESS_SATURATION))
    parts = {
        "semantic": round(candidate.semantic, 6),
        "lexical": round(candidate.lexical, 6),
        "relevance": round(relevance, 6),
        "rrf": round(rrf, 6),
        "recency": round(recency, 6),
        "importance": round(candidate.importance, 6),
        "access": round(access, 6),
    }
    score = (
        WEIGHTS["relevance"] * relevance
        + WEIGHTS["recency"] * recency
        + WEIGHTS["importance"] * candidate.importance
        + WEIGHTS["access"] * access
    )
    return pk, round(score, 6), parts
