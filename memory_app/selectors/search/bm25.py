"""BM25F inside PostgreSQL over `lexical_vector`, as one scalar SQL expression per row.

`lexical_vector` has two fields: the memory's own text (weight A) and its window (B: for
a memory in a thread, its neighbours around its own text, see `refresh_thread_window`;
else its own text again), so a word it says itself counts twice in the term frequency
and a neighbour's once (`_lexical_document` in memory_app.models). PostgreSQL's own
ts_rank has no IDF and ranks conversation turns below plain BM25.
"""

from __future__ import annotations

from typing import Any

from psycopg import sql

from memory_app.selectors.search.lexical import LexicalQuery, quote_lexeme

# BM25's term-frequency saturation and length normalisation: the usual range (k1 1.2-2,
# b 0.5-0.8); a thread window is four lines, so length matters a little less than in
# free text.
BM25_K1 = 1.2
BM25_B = 0.6

# tsvector positions per lexeme and ts_rank's weight of each: all four labels weigh 1, so
# the own text (A) and the window (B) count alike and a word of the own text, which is in
# both, counts twice (BM25F with the own field weighted 2).
_FLAT_WEIGHTS = sql.SQL("'{1,1,1,1}'::float4[]")
# ts_rank's normaliser: the limit of sum(1/i^2), pi^2/6, as tsrank.c writes it.
_RANK_LIMIT = sql.SQL("1.64493406685")
# One term's share: idf * tf * (k1 + 1) / (tf + K), written with tf once,
# idf * (k1 + 1) / (1 + K / tf); NULL (then 0) when the row does not hold the term.
_TERM = sql.SQL(
    "coalesce({idf}::float8 * %(k1_plus_one)s::float8 / (1 + {norm} / nullif({tf}, 0)), 0)"
)
_LENGTH_NORM = sql.SQL(
    "%(k1)s::float8 * (1 - %(b)s::float8 + %(b)s::float8 * length({vector}) / %(avgdl)s::float8)"
)
_TF = sql.SQL("round(1 / ({limit} - {limit} * {rank}) - 0.5)")
_RANK = sql.SQL("ts_rank({weights}, {vector}, {lexeme}::tsquery)::float8")


def bm25_sql(alias: str, lexical: LexicalQuery | None) -> sql.Composable:
    """BM25 of row `alias` for the query's lexemes (parameters: `bm25_params(lexical)`;
    0 without a lexical query): term frequency = positions of the lexeme in
    `lexical_vector`, document length = its distinct lexemes.

    The term frequency comes from `ts_rank` of the one-lexeme query with every weight 1,
    which is sum(1/i^2, i = 1..tf) / 1.64493406685 (tsrank.c's calc_rank_or): inverted,
    tf = round(1 / (1.64493406685 - rank * 1.64493406685) - 1/2), exact to tf = 256, the
    most positions a tsvector keeps. The plain reading of the same numbers, unnest() of
    the tsvector joined to the query's lexemes, is a set-returning function per row,
    several times slower a row. tests/memory_app/test_search_sql.py holds this to the
    definition, computed from unnest()."""
    terms = len(lexical.lexemes) if lexical is not None else 0
    if terms == 0:
        return sql.SQL("0::float8")
    vector = sql.Identifier(alias, "lexical_vector")
    norm = _LENGTH_NORM.format(vector=vector)
    parts = []
    for index in range(terms):
        rank = _RANK.format(
            weights=_FLAT_WEIGHTS, vector=vector, lexeme=sql.Placeholder(f"bm25_q{index}")
        )
        tf = _TF.format(limit=_RANK_LIMIT, rank=rank)
        parts.append(_TERM.format(idf=sql.Placeholder(f"bm25_idf{index}"), norm=norm, tf=tf))
    return sql.SQL("({})").format(sql.SQL(" + ").join(parts))


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
