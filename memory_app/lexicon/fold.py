"""The tenant's BM25 sums brought up to date with its users' statistics, and a user's
statistics removed from both.

A tenant-wide search needs each query lexeme's document frequency over the tenant's
users and the tenant's document count and length. Summed from the per-user rows at
every search, that costs a row per user holding the lexeme. The sums are kept apart
instead (`MemoryTenantTermStat`, `MemoryTenantLexiconStat`), and each per-user row
records how much of it they hold (`folded_*`). The trigger that writes the per-user rows
never touches the sums, so writers of different users never queue on one row.

`lexicon_fold` moves what the per-user rows hold beyond their folded part into the sums,
in batches of one transaction each: the rows it takes are locked with SKIP LOCKED, so it
never waits for a writer and two folds never take the same row; the sums are upserted in
key order, as every writer of them does (`user_statistics_delete` too), so two such
transactions cannot wait for each other in a cycle. A search reads the sums plus the
unfolded rest (`memory_app.selectors.search.lexical`), which is exact before, during
and after a fold.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from django.db import connection, transaction
from psycopg import sql

# Per-user term rows whose df moved past their folded part: the change goes into the
# tenant's sum and the row is marked folded, in one statement.
TERM_FOLD_SQL = sql.SQL("""
WITH picked AS (
    SELECT s.id, s.tenant_id, s.lexeme, s.df - s.folded_df AS change
    FROM memory_term_stat s
    WHERE s.df <> s.folded_df
    LIMIT %(batch)s
    FOR UPDATE SKIP LOCKED
),
marked AS (
    UPDATE memory_term_stat s SET folded_df = s.folded_df + picked.change
    FROM picked WHERE s.id = picked.id
),
summed AS (
    INSERT INTO memory_tenant_term_stat (tenant_id, lexeme, df)
    SELECT picked.tenant_id, picked.lexeme, sum(picked.change)
    FROM picked GROUP BY picked.tenant_id, picked.lexeme
    ORDER BY picked.tenant_id, picked.lexeme
    ON CONFLICT (tenant_id, lexeme)
    DO UPDATE SET df = memory_tenant_term_stat.df + EXCLUDED.df
)
SELECT count(*) FROM picked
""")
# The same for the per-user document counts and lengths.
LEXICON_FOLD_SQL = sql.SQL("""
WITH picked AS (
    SELECT s.id, s.tenant_id, s.documents - s.folded_documents AS documents,
           s.lexemes - s.folded_lexemes AS lexemes
    FROM memory_lexicon_stat s
    WHERE s.documents <> s.folded_documents OR s.lexemes <> s.folded_lexemes
    LIMIT %(batch)s
    FOR UPDATE SKIP LOCKED
),
marked AS (
    UPDATE memory_lexicon_stat s
    SET folded_documents = s.folded_documents + picked.documents,
        folded_lexemes = s.folded_lexemes + picked.lexemes
    FROM picked WHERE s.id = picked.id
),
summed AS (
    INSERT INTO memory_tenant_lexicon_stat (tenant_id, documents, lexemes)
    SELECT picked.tenant_id, sum(picked.documents), sum(picked.lexemes)
    FROM picked GROUP BY picked.tenant_id ORDER BY picked.tenant_id
    ON CONFLICT (tenant_id) DO UPDATE
    SET documents = memory_tenant_lexicon_stat.documents + EXCLUDED.documents,
        lexemes = memory_tenant_lexicon_stat.lexemes + EXCLUDED.lexemes
)
SELECT count(*) FROM picked
""")
# A user's term rows deleted, and what of them the tenant's sums hold taken out.
TERM_DELETE_SQL = sql.SQL("""
WITH gone AS (
    DELETE FROM memory_term_stat s
    WHERE s.tenant_id = %(tenant)s AND s.user_id = %(user_id)s
    RETURNING s.lexeme, s.folded_df
)
INSERT INTO memory_tenant_term_stat (tenant_id, lexeme, df)
SELECT %(tenant)s, gone.lexeme, -sum(gone.folded_df)
FROM gone GROUP BY gone.lexeme HAVING sum(gone.folded_df) <> 0 ORDER BY gone.lexeme
ON CONFLICT (tenant_id, lexeme) DO UPDATE SET df = memory_tenant_term_stat.df + EXCLUDED.df
""")
LEXICON_DELETE_SQL = sql.SQL("""
WITH gone AS (
    DELETE FROM memory_lexicon_stat s
    WHERE s.tenant_id = %(tenant)s AND s.user_id = %(user_id)s
    RETURNING s.folded_documents, s.folded_lexemes
)
INSERT INTO memory_tenant_lexicon_stat (tenant_id, documents, lexemes)
SELECT %(tenant)s, -sum(gone.folded_documents), -sum(gone.folded_lexemes)
FROM gone HAVING sum(gone.folded_documents) <> 0 OR sum(gone.folded_lexemes) <> 0
ON CONFLICT (tenant_id) DO UPDATE
SET documents = memory_tenant_lexicon_stat.documents + EXCLUDED.documents,
    lexemes = memory_tenant_lexicon_stat.lexemes + EXCLUDED.lexemes
""")

BATCH_SIZE = 5000


@dataclass
class FoldReport:
    """Per-user rows folded (term and lexicon rows) and the transactions it took."""

    term_rows: int = 0
    lexicon_rows: int = 0
    batches: int = 0


def lexicon_fold(*, batch_size: int = BATCH_SIZE, max_seconds: float = 60.0) -> FoldReport:
    """Fold the per-user rows into the tenants' sums until none is left (rows a writer
    holds locked are left for the next run) or `max_seconds` have passed."""
    report = FoldReport()
    started = time.monotonic()
    for statement, field in ((TERM_FOLD_SQL, "term_rows"), (LEXICON_FOLD_SQL, "lexicon_rows")):
        while time.monotonic() - started < max_seconds:
            folded = _fold_batch(statement, batch_size)
            report.batches += 1
            setattr(report, field, getattr(report, field) + folded)
            if folded < batch_size:
                break
    return report


def _fold_batch(statement: sql.Composable, batch_size: int) -> int:
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(statement, {"batch": batch_size})
        return int(cursor.fetchone()[0])


def user_statistics_delete(*, tenant_id: int, user_id: str) -> None:
    """Delete the user's per-user statistics and take their folded parts out of the
    tenant's sums (the erasure's part; its memories are deleted first, which brings
    their rows to zero)."""
    params: dict[str, int | str] = {"tenant": tenant_id, "user_id": user_id}
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(TERM_DELETE_SQL, params)
        cursor.execute(LEXICON_DELETE_SQL, params)
