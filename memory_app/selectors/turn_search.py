"""Searching a session's own turns (compacted ones included) for the context: the same
hybrid retrieval as memory search (exact cosine on the turn's text, BM25F on the turn's
own text and its window, fused by z-normalised score), over `memory_turn_index`.

A session holds hundreds to a few thousand turns, so both sides are exact scans of the
session's rows through the (session_id, turn_number) index: no HNSW approximation, and
BM25's document frequencies are counted over the session at query time (no statistics
table to maintain for a collection this small).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import connection

from memory_app.embedding import vector_literal
from memory_app.selectors.search import (
    LexicalQuery,
    bm25_params,
    bm25_sql,
    bounded_lexical_query,
    fuse_scores,
)
from memory_app.services.turn_index import WINDOW_AFTER, WINDOW_BEFORE


@dataclass(frozen=True)
class TurnHit:
    turn_number: int
    relevance: float  # fused, 1 = best of the pool
    semantic: float  # cosine of query and turn text
    # The best cosine of query and a turn of its window (the turn itself included): the
    # window is what the lexical side matches, so a turn whose neighbour answers the
    # query ("What is its name?" / "Her name is Biscuit") relates to it through them.
    window_semantic: float


def session_turn_search(
    *, session_id: Any, query: str, query_vector: list[float], limit: int, weight: float
) -> list[TurnHit]:
    """The session's indexed turns that best answer `query`, best first."""
    pool_size = max(3 * limit, 30)
    literal = vector_literal(query_vector)  # both statements send it
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT turn_id FROM memory_turn_index
            WHERE session_id = %s ORDER BY embedding <=> %s::vector LIMIT %s
            """,
            [session_id, literal, pool_size],
        )
        vector_ranking = [row[0] for row in cursor.fetchall()]
        lexical = _lexical_query(cursor, session_id, query)
        lexical_ranking: list[int] = []
        if lexical is not None and lexical.candidate_lexemes:
            cursor.execute(
                f"""
                SELECT m.turn_id FROM memory_turn_index m
                WHERE m.session_id = %(session)s AND m.lexical_vector @@ %(tsquery)s::tsquery
                ORDER BY {bm25_sql("m", lexical)} DESC, m.turn_number DESC
                LIMIT %(k)s
                """,  # noqa: S608 - fixed SQL; values are params
                {
                    **bm25_params(lexical),
                    "session": session_id,
                    "tsquery": lexical.tsquery,
                    "k": pool_size,
                },
            )
            lexical_ranking = [row[0] for row in cursor.fetchall()]
        pool = list(dict.fromkeys([*vector_ranking, *lexical_ranking]))
        if not pool:
            return []
        cursor.execute(
            f"""
            SELECT m.turn_id, m.turn_number, 1 - (m.embedding <=> %(q)s::vector),
                   {bm25_sql("m", lexical)},
                   (SELECT max(1 - (n.embedding <=> %(q)s::vector)) FROM memory_turn_index n
                    WHERE n.session_id = m.session_id
                      AND n.turn_number BETWEEN m.turn_number - %(before)s
                                            AND m.turn_number + %(after)s)
            FROM memory_turn_index m
            WHERE m.turn_id = ANY(%(ids)s::bigint[])
            """,  # noqa: S608
            {
                **bm25_params(lexical),
                "q": literal,
                "ids": pool,
                "before": WINDOW_BEFORE,
                "after": WINDOW_AFTER,
            },
        )
        rows = cursor.fetchall()
    numbers = {row[0]: int(row[1]) for row in rows}
    signals = {row[0]: (float(row[2]), float(row[3])) for row in rows}
    around = {row[0]: float(row[4]) for row in rows}
    relevance = fuse_scores(signals, weight)
    ranked = sorted(signals, key=lambda pk: (-relevance[pk], -numbers[pk]))
    return [
        TurnHit(numbers[pk], relevance[pk], signals[pk][0], around[pk]) for pk in ranked[:limit]
    ]


def _lexical_query(cursor: Any, session_id: Any, query: str) -> LexicalQuery | None:
    cursor.execute(
        r"""
        WITH q AS (
            -- each lexeme as a one-term tsquery, quoted as `quote_lexeme` quotes it
            SELECT lexeme,
                   ('''' || replace(replace(lexeme, '\', '\\'), '''', '''''') || '''')::tsquery
                       AS term
            FROM (
                SELECT DISTINCT unnest(tsvector_to_array(to_tsvector('english', %(text)s)))
                    AS lexeme
            ) AS lexemes
        ),
        docs AS MATERIALIZED (
            SELECT lexical_vector FROM memory_turn_index WHERE session_id = %(session)s
        )
        SELECT q.lexeme,
               (SELECT count(*) FROM docs WHERE docs.lexical_vector @@ q.term),
               (SELECT count(*) FROM docs),
               (SELECT coalesce(sum(length(lexical_vector)), 0) FROM docs)
        FROM q
        """,
        {"text": query, "session": session_id},
    )
    rows = cursor.fetchall()
    if not rows:
        return None
    return bounded_lexical_query(
        [(lexeme, int(df)) for lexeme, df, _, _ in rows], int(rows[0][2]), int(rows[0][3])
    )
