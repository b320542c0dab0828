"""What a bulk load of memories leaves to do before it is measured: the HNSW graphs it
dropped built again, the tenants' BM25 sums folded, the tables vacuumed and analysed,
the dirty pages checkpointed, and the pages read into the cache: the state a server that
has been answering for a while is in (bench.memory_data loads; the benchmarks prewarm).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from django.db import connection
from psycopg import sql

if TYPE_CHECKING:
    from bench.generate import Progress

# The HNSW graphs memory_app's migrations create (over all memories, and over the public
# ones), to rebuild them.
HNSW_INDEXES = {
    "memory_embedding_hnsw": (
        "CREATE INDEX IF NOT EXISTS memory_embedding_hnsw ON memory USING hnsw "
        "((embedding::halfvec(384)) halfvec_cosine_ops) WITH (m = 32, ef_construction = 128)"
    ),
    "memory_embedding_public": (
        "CREATE INDEX IF NOT EXISTS memory_embedding_public ON memory USING hnsw "
        "((embedding::halfvec(384)) halfvec_cosine_ops) WITH (m = 32, ef_construction = 128) "
        "WHERE scope = 'public'"
    ),
}


def missing_indexes() -> list[str]:
    """The graphs of HNSW_INDEXES the database lacks (dropped for a load, or by a run
    killed before it built them again)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT name FROM unnest(%s::text[]) AS name WHERE to_regclass(name) IS NULL",
            [list(HNSW_INDEXES)],
        )
        return [row[0] for row in cursor.fetchall()]


def build_indexes(progress: Progress, names: list[str]) -> float:
    """(Re)create the HNSW indexes `names` with the migrations' definitions; seconds."""
    started = time.monotonic()
    with connection.cursor() as cursor:
        cursor.execute("SET maintenance_work_mem = '1GB'")  # the graph fits: no disk phase
        for name in names:
            began = time.monotonic()
            cursor.execute(HNSW_INDEXES[name])
            progress(f"[generate] memories: {name} built in {time.monotonic() - began:.1f}s")
        cursor.execute("RESET maintenance_work_mem")
    return time.monotonic() - started


def checkpoint(progress: Progress) -> None:
    """Write the load's dirty pages out now. A million memories and their indexes are
    ~7 GB written in half an hour; without this, the checkpoint that follows spreads
    those writes over the next minutes, which is when the benchmark measures reads.
    CHECKPOINT needs superuser or pg_checkpoint: without them, say so and go on."""
    from django.db import DatabaseError

    started = time.monotonic()
    try:
        with connection.cursor() as cursor:
            cursor.execute("CHECKPOINT")
    except DatabaseError as exc:
        progress(f"[generate] memories: no CHECKPOINT ({exc.__class__.__name__}); measuring anyway")
        return
    progress(f"[generate] memories: CHECKPOINT in {time.monotonic() - started:.1f}s")


def vacuum_analyze() -> None:
    """VACUUM as well as ANALYZE the memory table and its BM25 statistics: a table that
    grew by bulk loads is where autovacuum would have it a few minutes later (visibility
    map set, so index-only scans skip the heap), and the benchmark should not measure
    whether it got there in time. Inside a transaction (the test suite's) VACUUM cannot
    run: ANALYZE alone."""
    command = sql.SQL("ANALYZE" if connection.in_atomic_block else "VACUUM (ANALYZE)")
    with connection.cursor() as cursor:
        for table in ("memory", "memory_term_stat", "memory_lexicon_stat"):
            cursor.execute(sql.SQL("{} {}").format(command, sql.Identifier(table)))


def fold_lexicon(progress: Progress) -> float:
    """The tenants' BM25 sums brought up to date, as the beat's fold does within its
    interval of a write (memory_app.lexicon.fold): a loaded tenant is measured as it
    serves, not in the seconds after the load."""
    from memory_app.lexicon.fold import lexicon_fold

    started = time.monotonic()
    report = lexicon_fold(max_seconds=3600.0)
    seconds = time.monotonic() - started
    if report.term_rows or report.lexicon_rows:
        progress(
            f"[generate] memories: BM25 statistics folded into the tenants' sums "
            f"({report.term_rows:,} term rows, {report.lexicon_rows:,} users) in {seconds:.1f}s"
        )
    return seconds


def prewarm_memory(progress: Progress) -> None:
    """Read the memory table, its TOAST and every index of both once, so that a benchmark
    measures searches of data in memory at every size, as a server that has been
    answering for a while would hold it (the million memories and their indexes are ~7 GB on a
    machine of 23 GB). Without this, B2's 1M "user" shape measured the first read of 600
    users' pages, and whether those came from the VM's page cache or its disk decided the
    figure: p95 45 ms in one run, 263 ms in the next, on the same code and data.

    pg_prewarm's 'read' mode reads through PostgreSQL into the OS page cache (not
    shared_buffers, which a million memories would not fit). The extension ships with
    PostgreSQL's contrib but needs a superuser to create it: without it, say so and go on."""
    from django.db import DatabaseError

    try:
        with connection.cursor() as cursor:
            cursor.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
            cursor.execute(
                """
                WITH t AS (SELECT 'memory'::regclass AS rel
                           UNION ALL SELECT reltoastrelid FROM pg_class
                           WHERE oid = 'memory'::regclass AND reltoastrelid <> 0)
                SELECT c.oid::regclass::text, pg_relation_size(c.oid) FROM pg_class c
                WHERE c.oid IN (SELECT rel FROM t)
                   OR c.oid IN (SELECT indexrelid FROM pg_index
                                WHERE indrelid IN (SELECT rel FROM t))
                ORDER BY pg_relation_size(c.oid) DESC
                """
            )
            relations = cursor.fetchall()
            started = time.monotonic()
            total = 0
            for name, size in relations:
                cursor.execute("SELECT pg_prewarm(%s::regclass, 'read')", [name])
                total += size
                if size > 64 << 20:
                    progress(f"[generate] prewarm: {name} ({size >> 20:,} MB) read")
    except DatabaseError as exc:
        progress(f"[generate] prewarm: not done ({exc.__class__.__name__}); measuring anyway")
        return
    progress(
        f"[generate] prewarm: {len(relations)} relations, {total >> 20:,} MB read into the "
        f"page cache in {time.monotonic() - started:.1f}s"
    )
