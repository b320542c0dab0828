"""The candidate pool: the vector top-k and the BM25 top-k, and for each member of their
union its rank in either list, its full-precision cosine and BM25, the fields of the
final score and, for a hybrid search, its lexemes (what the lead's words are matched
against: search.feedback), in one statement sent with its HNSW settings: one round trip,
and a lexical hit's BM25 is not computed twice.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

from psycopg import sql

from config.prepared_statements import PlanCacheMode, prepared_statement
from memory_app.selectors.search.bm25 import bm25_sql
from memory_app.selectors.search.filters import SearchWhere
from memory_app.selectors.search.lexical import LexicalQuery
from memory_app.selectors.search.lexical_hits import lexical_hits_sql
from memory_app.selectors.search.speaker import speaker_sql
from memory_app.selectors.search.tsvector_text import tsvector_lexemes
from memory_app.selectors.search.vector import (
    EF_SEARCH,
    cosine_sql,
    nearest_sql,
    passage_cosine_sql,
)


class Candidate(NamedTuple):
    """What ranking a pool member needs: its two signals and the fields of the final
    score. A named tuple: the pool builds one a member at every search, several times
    faster than a frozen dataclass's `__init__`."""

    semantic: float
    lexical: float
    updated_at: datetime
    importance: float
    access_count: int
    occurred_at: datetime | None = None
    size: int = 0  # the content's length in bytes (octet_length: no detoasting)
    speaker_named: bool = False  # the query names its speaker (search.speaker)
    thread_key: str = ""  # the conversation it belongs to ("" for none)
    thread_order: int | None = None  # its position in that conversation
    # The distinct lexemes of its `lexical_vector` (own text and window), in a hybrid
    # search's pool only (search.feedback); empty otherwise.
    lexemes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Pool:
    """The pool's members and the two rankings (ids, best first) they came from."""

    candidates: dict[uuid.UUID, Candidate]
    vector_ranking: list[uuid.UUID]
    lexical_ranking: list[uuid.UUID]


_VECTOR_RANKED = sql.SQL("""
            nearest AS MATERIALIZED ({nearest}),
            vector_ranked AS MATERIALIZED (
                SELECT id, semantic, row_number() OVER (ORDER BY distance) AS rank
                FROM nearest
            )""")
_NO_VECTOR = sql.SQL("""
            vector_ranked AS (
                SELECT NULL::uuid AS id, NULL::float8 AS semantic, NULL::bigint AS rank
                WHERE false
            )""")
_LEXICAL_RANKED = sql.SQL("""
            hits AS MATERIALIZED ({hits}),
            lexical_ranked AS MATERIALIZED (
                SELECT id, score, rank FROM (
                    SELECT m.id, bm25.score, row_number() OVER (
                        ORDER BY bm25.score DESC, m.created_at DESC, m.id
                    ) AS rank
                    FROM hits m
                    CROSS JOIN LATERAL (SELECT {bm25} AS score) AS bm25
                ) AS scored
                WHERE rank <= %(k)s
            )""")
_NO_LEXICAL = sql.SQL("""
            lexical_ranked AS (
                SELECT NULL::uuid AS id, NULL::float8 AS score, NULL::bigint AS rank WHERE false
            )""")
# The union of both lists, each member once with what either side brought: a side
# gives a member one row or none, so each max() is that row's value or NULL. One
# aggregate over both lists' rows: each list joined back to the union instead is run
# as a nested loop that compares every member with every row of the vector list.
_POOL = sql.SQL("""
        WITH {vector_ranked}, {lexical_ranked},
        pool AS (
            SELECT id, max(vector_rank) AS vector_rank, max(cosine) AS cosine,
                   max(lexical_rank) AS lexical_rank, max(bm25) AS bm25
            FROM (
                SELECT id, rank AS vector_rank, semantic AS cosine,
                       NULL::bigint AS lexical_rank, NULL::float8 AS bm25
                FROM vector_ranked
                UNION ALL
                SELECT id, NULL, NULL, rank, score FROM lexical_ranked
            ) AS sides
            GROUP BY id
        )
        SELECT m.id, pool.vector_rank, pool.lexical_rank, {semantic}, {bm25},
               m.updated_at, m.importance, m.access_count, m.occurred_at,
               octet_length(m.content), {speaker}, m.thread_key, m.thread_order{lexemes}
        FROM pool JOIN memory m ON m.id = pool.id
    """)
# The HNSW settings for the pool's statement only, in the same query string: several
# statements in one simple query run as one implicit transaction, so SET LOCAL holds for
# the SELECT after it and ends with it (inside a caller's transaction, with that). No
# BEGIN and COMMIT round trips of an atomic() block around it. Django's psycopg cursors
# bind client-side (DATABASES' server_side_binding is off), which is what lets one
# execute() carry the settings and the statement after them (the plan setting, the
# prepared statement's DO and EXECUTE).
_HNSW_SETTINGS = sql.SQL(
    "SET LOCAL hnsw.iterative_scan = relaxed_order; SET LOCAL hnsw.ef_search = {}; "
)


# A member's distinct lexemes, for the lead's words (search.feedback), as the text of
# its stripped tsvector (search.tsvector_text).
_LEXEMES = sql.SQL(", strip(m.lexical_vector)::text")


def pool_sql(
    where: SearchWhere,
    *,
    vector: bool,
    lexical: LexicalQuery | None,
    speakers: bool = False,
    lexemes: bool = False,
) -> sql.Composed:
    """The pool's SELECT. The lexical step reads the rows that hold a candidate term in
    each visibility branch (`lexical_hits_sql`), so only rows the actor may see; the
    vector step's branches bring their full-precision cosine along (`nearest_sql`), so
    the pool reads an embedding only for a row the lexical side alone found: COALESCE
    stops at its first non-null argument. A member's semantic signal is the greater of
    that cosine and its passages' best (`passage_cosine_sql`), so a memory that says the
    answer in one sentence among others is weighed by that sentence. With `lexemes`,
    each member's distinct lexemes come last."""
    vector_ranked: sql.Composable = (
        _VECTOR_RANKED.format(nearest=nearest_sql(where)) if vector else _NO_VECTOR
    )
    if lexical is not None and lexical.finds_candidates(where):  # BM25 top-k of their finds
        lexical_ranked: sql.Composable = _LEXICAL_RANKED.format(
            hits=lexical_hits_sql(where, lexical), bm25=bm25_sql("m", lexical)
        )
    else:  # no lexical step, or every term past the bound: the terms still score
        lexical_ranked = _NO_LEXICAL
    bm25 = sql.SQL("coalesce(pool.bm25, {})").format(bm25_sql("m", lexical))
    semantic: sql.Composable = (
        sql.SQL("greatest(coalesce(pool.cosine, {}), {})").format(
            cosine_sql("m"), passage_cosine_sql("m")
        )
        if vector
        else sql.SQL("0")
    )
    return _POOL.format(
        vector_ranked=vector_ranked,
        lexical_ranked=lexical_ranked,
        semantic=semantic,
        bm25=bm25,
        speaker=speaker_sql("m") if speakers else sql.SQL("false"),
        lexemes=_LEXEMES if lexemes else sql.SQL(""),
    )


# The pool's SELECT is a prepared statement of the connection (config.prepared_statements):
# parsed once, and the query vector sent once instead of four times in its text. Its text
# depends on the search's shape only (the visibility branches, the filters given, the
# number of query terms, whether the query names someone), never on a value. A query of
# more terms than this is sent as it is: it keeps the statements a connection holds
# bounded, and its run is long.
PREPARED_MAX_TERMS = 16
# A search of one user's memories without filters of the caller's runs a generic plan,
# made once a connection (`force_generic_plan`): its one vector branch is that owner's
# rows in exact order whatever the plan (`vector.nearest_sql`), and planning it for
# each run's values cost most of its run. Every other statement is planned at every run,
# with its values (`force_custom_plan`): a generic plan, made once for any tenant and
# filter, may read a branch of shared rows through the HNSW graph instead of their exact
# order, and choose the graph or an exact order for the public rows without knowing the
# tenant's size; so it may return other rows than the plan of the same statement for
# these values (docs/decisions/search-prepared-statements.md).


def pool_statement(
    where: SearchWhere,
    *,
    vector: bool,
    lexical: LexicalQuery | None,
    candidates: int,
    speakers: bool = False,
    lexemes: bool = False,
) -> sql.Composed:
    """What the search sends: the HNSW settings when the vector step runs (the list at
    least `candidates` long), then the pool's SELECT, as a prepared statement of the
    connection planned for this run's values when the query has at most
    PREPARED_MAX_TERMS terms. `read_pool` reads the last result.

    Composed once per process and shape (`_statement_shape`) when `where` has one."""
    shape = _statement_shape(where, vector, lexical, candidates, speakers, lexemes)
    statement = _STATEMENTS.get(shape) if shape is not None else None
    if statement is None:
        statement = _compose_statement(where, vector, lexical, candidates, speakers, lexemes)
        if shape is not None:
            if len(_STATEMENTS) >= _STATEMENTS_KEPT:
                _STATEMENTS.clear()
            _STATEMENTS[shape] = statement
    return statement


# The statements composed, by shape: composing one (its SQL objects, then its text for
# the prepared statement's name) costs most of a millisecond, many times the lookup.
# A tenant's searches come in a few dozen shapes; past the bound, all are dropped.
_STATEMENTS: dict[tuple[Any, ...], sql.Composed] = {}
_STATEMENTS_KEPT = 512


def _statement_shape(
    where: SearchWhere,
    vector: bool,
    lexical: LexicalQuery | None,
    candidates: int,
    speakers: bool,
    lexemes: bool,
) -> tuple[Any, ...] | None:
    """Everything the statement's text depends on, no value: the filters' shape (None,
    and so no shape, for filters written by hand), whether they name an owner, the
    steps that run, the number of query terms and which branches have candidate terms
    to read rows by, the HNSW list, whether the query names a speaker, whether the
    members' lexemes are read, whether it is prepared."""
    if where.shape is None:
        return None
    terms = len(lexical.lexemes) if lexical is not None else 0
    reading = (
        tuple(
            bool(lexical.branch_candidates(own=branch == where.own_branch))
            for branch in where.branches
        )
        if lexical is not None
        else None
    )
    owner = where.owner is not None
    return (
        where.shape, owner, vector, terms, reading, _ef_search(candidates), speakers, lexemes,
        _prepared(lexical),
    )  # fmt: skip


def _prepared(lexical: LexicalQuery | None) -> bool:
    """Whether the pool's SELECT is sent as a prepared statement: the query has at most
    PREPARED_MAX_TERMS terms."""
    return len(lexical.lexemes if lexical is not None else ()) <= PREPARED_MAX_TERMS


def _ef_search(candidates: int) -> int:
    """The HNSW candidate list for a vector step that must return `candidates` rows."""
    return max(EF_SEARCH, candidates)


def _compose_statement(
    where: SearchWhere,
    vector: bool,
    lexical: LexicalQuery | None,
    candidates: int,
    speakers: bool,
    lexemes: bool,
) -> sql.Composed:
    select = pool_sql(where, vector=vector, lexical=lexical, speakers=speakers, lexemes=lexemes)
    if _prepared(lexical):
        # The query vector is declared full-precision: PostgreSQL would infer its type
        # from the first cast it parses, which may be the vector step's halfvec.
        types = (("q", "vector"),) if vector else ()
        prepared = prepared_statement(select, prefix="engram_search_pool_", types=types)
        select = prepared.message(plan=plan_mode(where))
    if not vector:
        return select
    return _HNSW_SETTINGS.format(sql.Literal(_ef_search(candidates))) + select


def plan_mode(where: SearchWhere) -> PlanCacheMode:
    """How the pool's prepared statement is planned: once, for a search of one owner's
    memories without the caller's filters; else at every run, for its values."""
    one_owner = where.owner is not None and len(where.branches) == 1
    unfiltered = where.shape is not None and not where.shape.caller
    return "force_generic_plan" if one_owner and unfiltered else "force_custom_plan"


def read_pool(cursor: Any, statement: sql.Composed, params: dict[str, Any]) -> Pool:
    """Run the pool's statement and read its members and rankings."""
    cursor.execute(statement, params)
    while cursor.nextset():  # past the SETs' and the DO's results, to the SELECT's
        pass
    rows = cursor.fetchall()
    vector_ranking = [row[0] for row in sorted(
        (row for row in rows if row[1] is not None), key=lambda row: row[1]
    )]  # fmt: skip
    lexical_ranking = [row[0] for row in sorted(
        (row for row in rows if row[2] is not None), key=lambda row: row[2]
    )]  # fmt: skip
    candidates = {
        row[0]: Candidate(
            float(row[3]),
            float(row[4]),
            row[5],
            float(row[6]),
            int(row[7]),
            row[8],
            int(row[9]),
            bool(row[10]),
            row[11],
            row[12],
            tsvector_lexemes(row[13]) if len(row) > 13 else (),
        )
        for row in rows
    }
    return Pool(candidates, vector_ranking, lexical_ranking)
