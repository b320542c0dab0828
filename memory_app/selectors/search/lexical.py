"""The query's lexical terms: its English lexemes that occur in the searched memories, their
IDF, and the rarest of them, within a postings bound, that find the lexical candidates.

The statistics are `memory_term_stat` (document frequency per user and lexeme) and
`memory_lexicon_stat` (documents and lexemes per user), kept by a trigger in the writing
transaction, and their sums per tenant (`memory_app.lexicon.models`). The step is
bounded: candidates come from the rarest terms whose postings fit
ENGRAM_MEMORY_LEXICAL_MAX_POSTINGS (none if even the rarest does not), so a query
never scans the tenant's rows; the frequent terms left out (lowest IDF) still add to the
score of every candidate either side found. The postings are counted where the branch
reads: the actor's own branch by the actor's own statistics, the others by the tenant's
(public postings are not counted apart: an upper bound).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from django.conf import settings
from psycopg import sql

from config.prepared_statements import prepared_statement

if TYPE_CHECKING:
    from memory_app.selectors.search.filters import SearchWhere
    from sessions_app.models import Tenant


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
        return " | ".join(quote_lexeme(lexeme) for lexeme in self.candidate_lexemes)

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


def quote_lexeme(lexeme: str) -> str:
    """One lexeme as a tsquery literal: quoted, so that nothing in it is an operator."""
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


# The document frequency of each of the query's lexemes and the collection's totals.
# A subquery per lexeme, not a join: it is always an index probe. Joined, a table whose
# statistics are stale (just written) is read whole for the user.
_TERMS_SQL = sql.SQL("""
        WITH q AS (
            SELECT DISTINCT unnest(tsvector_to_array(to_tsvector('english', %(text)s))) AS lexeme
        ),
        totals AS ({totals}){own_totals}
        SELECT q.lexeme,
               {df},
               totals.documents, totals.lexemes{own_columns}
        FROM q CROSS JOIN totals{own_join}
        """)
# One user's figures: their rows of the statistics.
_USER_TOTALS = sql.SQL("""
            SELECT coalesce(sum(s.documents), 0) AS documents,
                   coalesce(sum(s.lexemes), 0) AS lexemes
            FROM memory_lexicon_stat s WHERE s.tenant_id = %(tenant)s AND s.user_id = %(user_id)s
        """)
_USER_DF = sql.SQL("""(SELECT coalesce(sum(s.df), 0) FROM memory_term_stat s
                WHERE s.tenant_id = %(tenant)s AND s.lexeme = q.lexeme
                  AND s.user_id = %(user_id)s)""")
# The tenant's figures: its folded sums (memory_app.lexicon.models) plus what the users'
# rows hold that is not folded yet, read from the index of those rows only. Exact
# whatever the fold has done; once it has, as cheap for a tenant of many users as of one.
_TENANT_TOTALS = sql.SQL("""
            SELECT coalesce(t.documents, 0) + unfolded.documents AS documents,
                   coalesce(t.lexemes, 0) + unfolded.lexemes AS lexemes
            FROM (
                SELECT coalesce(sum(s.documents - s.folded_documents), 0) AS documents,
                       coalesce(sum(s.lexemes - s.folded_lexemes), 0) AS lexemes
                FROM memory_lexicon_stat s
                WHERE s.tenant_id = %(tenant)s
                  AND (s.documents <> s.folded_documents OR s.lexemes <> s.folded_lexemes)
            ) AS unfolded
            LEFT JOIN memory_tenant_lexicon_stat t ON t.tenant_id = %(tenant)s
        """)
_TENANT_DF = sql.SQL("""(SELECT coalesce(sum(t.df), 0) FROM memory_tenant_term_stat t
                WHERE t.tenant_id = %(tenant)s AND t.lexeme = q.lexeme)
               + (SELECT coalesce(sum(s.df - s.folded_df), 0) FROM memory_term_stat s
                  WHERE s.tenant_id = %(tenant)s AND s.lexeme = q.lexeme
                    AND s.df <> s.folded_df)""")
# The same figures from the actor's own statistics (`lexical_query`'s `own_user_id`).
_OWN_TOTALS = sql.SQL(""",
        own AS (
            SELECT coalesce(sum(s.documents), 0) AS documents,
                   coalesce(sum(s.lexemes), 0) AS lexemes
            FROM memory_lexicon_stat s WHERE s.tenant_id = %(tenant)s AND s.user_id = %(own)s
        )""")
_OWN_COLUMNS = sql.SQL(""",
               (SELECT coalesce(sum(s.df), 0) FROM memory_term_stat s
                WHERE s.tenant_id = %(tenant)s AND s.user_id = %(own)s AND s.lexeme = q.lexeme),
               own.documents, own.lexemes""")


def terms_sql(*, user: bool, own: bool) -> sql.Composed:
    """The statement of `lexical_query`: of one user's statistics (`user`) or the
    tenant's, with the actor's own beside them (`own`)."""
    empty = sql.SQL("")
    return _TERMS_SQL.format(
        totals=_USER_TOTALS if user else _TENANT_TOTALS,
        df=_USER_DF if user else _TENANT_DF,
        own_totals=_OWN_TOTALS if own else empty,
        own_columns=_OWN_COLUMNS if own else empty,
        own_join=sql.SQL(" CROSS JOIN own") if own else empty,
    )


@cache
def _prepared_terms(*, user: bool, own: bool) -> sql.Composed:
    """`terms_sql` as a prepared statement of the connection (config.prepared_statements)
    with a plan made once: every subquery reads rows by their key, so any plan returns
    the same figures, and planning it for each query's words cost more than its run.
    PostgreSQL's own choice kept planning it: its generic estimate of a text's lexemes
    is above what a custom plan counts."""
    statement = terms_sql(user=user, own=own)
    return prepared_statement(statement, prefix="engram_search_terms_").message(
        plan="force_generic_plan"
    )


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
    few thousand of a large tenant's memories hold would find none of the actor's own,
    though the branch reads only theirs."""
    own = own_user_id is not None
    cursor.execute(
        _prepared_terms(user=bool(user_id), own=own),
        {"text": text, "tenant": tenant.pk, "user_id": user_id, "own": own_user_id},
    )
    while cursor.nextset():  # past the SET's and the DO's results, to the SELECT's
        pass
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
    by score), a sample no better than chance that in a tenant-wide search of a million
    memories means tens of thousands of rows read. The vector side still proposes, and
    every term still scores what it proposes.

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
