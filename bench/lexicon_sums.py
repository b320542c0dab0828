"""`python -m bench.lexicon_sums`: what a tenant-wide search pays for its BM25 figures as
the tenant gains users, read from the per-user rows (as before the tenant's sums, and
as now for rows the fold has not reached) and from the folded sums
(memory_app.lexicon.fold), in one run.

For each size in `--users`, a tenant of that many users is made with synthetic per-user
statistics: each user holds about `--lexemes` distinct lexemes, drawn with a 1/rank
law from the English lexemes of the B2 generator's texts (so a common word is held by
most users, as in conversation), with a document count and length. Then the shipped
terms step (`lexical_query`, tenant-wide with the actor's own figures) runs for
`--queries` B2 questions, `--rounds` times: first with every row unfolded, then after
`lexicon_fold` (timed: rows folded a second) and VACUUM ANALYZE, as autovacuum would
leave the tables. The figures of both readings must be equal query by query (parity).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from psycopg import sql

from bench.harness import command_line

ID = "LEXSUMS"
TITLE = "Tenant-wide BM25 figures: per-user rows against the tenant's folded sums"
SEED = 21

# One user's rows: `draws` lexemes drawn by rank r = floor(V ** random()) (a 1/r law over
# the vocabulary), kept once each, with df 1-4; and the user's totals. The draw names
# `u` (`WHERE u > 0`) so that PostgreSQL draws again for each user instead of once.
_USERS_SQL = sql.SQL("""
INSERT INTO memory_term_stat (tenant_id, user_id, lexeme, df)
SELECT %(tenant)s, 'u-' || u, drawn.lexeme, 1 + floor(random() * 4)::int
FROM generate_series(1, %(users)s) AS u
CROSS JOIN LATERAL (
    SELECT DISTINCT (%(vocabulary)s::text[])[floor(power(%(size)s, random()))::int] AS lexeme
    FROM generate_series(1, %(draws)s) AS draw WHERE u > 0
) AS drawn
""")
_TOTALS_SQL = sql.SQL("""
INSERT INTO memory_lexicon_stat (tenant_id, user_id, documents, lexemes)
SELECT %(tenant)s, 'u-' || u, 40 + u %% 20, 1600 + u %% 400
FROM generate_series(1, %(users)s) AS u
""")
_VOCABULARY_SQL = sql.SQL("""
SELECT lexeme FROM (
    SELECT unnest(tsvector_to_array(to_tsvector('english', text))) AS lexeme
    FROM unnest(%(texts)s::text[]) AS text
) AS words GROUP BY lexeme ORDER BY count(*) DESC, lexeme
""")


def _vocabulary() -> list[str]:
    from django.db import connection

    from bench.memory_data import distinct_texts

    texts = [text for _, text in distinct_texts(SEED, 5000)]
    with connection.cursor() as cursor:
        cursor.execute(_VOCABULARY_SQL, {"texts": texts})
        return [row[0] for row in cursor.fetchall()]


def _make_tenant(users: int, lexemes: int, vocabulary: list[str]) -> Any:
    from django.db import connection

    from sessions_app.models import Tenant

    tenant = Tenant.objects.create(name=f"lexicon-sums-{users}-{time.strftime('%H%M%S')}")
    params = {
        "tenant": tenant.pk,
        "users": users,
        "vocabulary": vocabulary,
        "size": len(vocabulary),
        "draws": lexemes,
    }
    with connection.cursor() as cursor:
        cursor.execute("SELECT setseed(0.21)")
        cursor.execute(_USERS_SQL, params)
        cursor.execute(_TOTALS_SQL, params)
        cursor.execute("VACUUM (ANALYZE) memory_term_stat")
        cursor.execute("VACUUM (ANALYZE) memory_lexicon_stat")
    return tenant


def _terms(tenant: Any, questions: list[str], rounds: int) -> tuple[list[float], list[Any]]:
    """The shipped terms step for each question, `rounds` times: times (ms) and the
    figures of the last round."""
    from django.db import connection

    from memory_app.selectors.search.lexical import lexical_query

    times: list[float] = []
    figures: list[Any] = []
    with connection.cursor() as cursor:
        for round_ in range(rounds + 1):  # the first round warms the pages and the plan
            figures = []
            for question in questions:
                began = time.perf_counter()
                figures.append(
                    lexical_query(
                        cursor, tenant=tenant, user_id=None, text=question, own_user_id="u-1"
                    )
                )
                if round_:
                    times.append((time.perf_counter() - began) * 1000)
    return times, figures


def _drop_tenant(tenant: Any) -> None:
    """The synthetic tenant and its rows removed: other benchmarks share the database."""
    from django.db import connection

    with connection.cursor() as cursor:
        for table in (
            "memory_term_stat",
            "memory_lexicon_stat",
            "memory_tenant_term_stat",
            "memory_tenant_lexicon_stat",
        ):
            cursor.execute(
                sql.SQL("DELETE FROM {} WHERE tenant_id = %s").format(sql.Identifier(table)),
                [tenant.pk],
            )
    tenant.delete()


def _fold() -> tuple[int, float]:
    from django.db import connection

    from memory_app.lexicon.fold import lexicon_fold

    began = time.perf_counter()
    report = lexicon_fold(max_seconds=3600.0)
    seconds = time.perf_counter() - began
    with connection.cursor() as cursor:
        cursor.execute("VACUUM (ANALYZE) memory_term_stat")
        cursor.execute("VACUUM (ANALYZE) memory_lexicon_stat")
    return report.term_rows + report.lexicon_rows, seconds


def measure(
    sizes: list[int], lexemes: int, queries: int, rounds: int, log: Callable[[str], None]
) -> dict[str, Any]:
    from bench.memory_data import query_texts
    from bench.percentiles import percentile

    vocabulary = _vocabulary()
    questions = query_texts(SEED, queries)
    out: dict[str, Any] = {"vocabulary": len(vocabulary), "sizes": {}}
    for users in sizes:
        tenant = _make_tenant(users, lexemes, vocabulary)
        try:
            rows_before, figures_before = _terms(tenant, questions, rounds)
            folded, seconds = _fold()
            rows_after, figures_after = _terms(tenant, questions, rounds)
        finally:
            _drop_tenant(tenant)
        parity = sum(a == b for a, b in zip(figures_before, figures_after, strict=True))
        size = {
            "rows": {
                "p50": round(statistics.median(rows_before), 3),
                "p95": round(percentile(rows_before, 95), 3),
            },
            "sums": {
                "p50": round(statistics.median(rows_after), 3),
                "p95": round(percentile(rows_after, 95), 3),
            },
            "folded_rows": folded,
            "fold_rows_per_s": round(folded / seconds) if seconds else None,
            "parity": parity,
            "queries": len(questions),
        }
        out["sizes"][users] = size
        log(f"[lexicon-sums] {users:,} users: {size}")
    return out


def _table(figures: dict[str, Any]) -> str:
    lines = [
        "| users | per-user rows | rows p50 / p95 ms | sums p50 / p95 ms | rows / sums (p50) "
        "| fold, rows a second | parity |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for users, size in figures["sizes"].items():
        rows, sums = size["rows"], size["sums"]
        lines.append(
            f"| {users:,} | {size['folded_rows']:,} | {rows['p50']} / {rows['p95']} "
            f"| {sums['p50']} / {sums['p95']} | {rows['p50'] / sums['p50']:.1f}x "
            f"| {size['fold_rows_per_s']:,} | {size['parity']} of {size['queries']} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.lexicon_sums", description=__doc__)
    parser.add_argument("--users", default="1000,10000,30000", help="tenant sizes, in users")
    parser.add_argument("--lexemes", type=int, default=200, help="draws per user")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args(argv)
    command = command_line("bench.lexicon_sums", argv)
    sizes = [int(size) for size in args.users.split(",")]

    from bench.harness import BenchResult, log, record
    from bench.run import django_on_data_services

    with django_on_data_services(log):
        load_before = os.getloadavg()[0]
        figures = measure(sizes, args.lexemes, args.queries, args.rounds, log)
        load_after = os.getloadavg()[0]
        markdown = f"""
The terms step of a tenant-wide search (`lexical_query` with the actor's own figures,
in process, the shipped prepared statement), {args.queries} B2 questions x
{args.rounds} rounds, over a tenant of synthetic per-user statistics: each user about
{args.lexemes} draws of a 1/rank law over {figures["vocabulary"]:,} English lexemes of
the B2 texts. "rows": every per-user row unfolded, so the step sums a row per user
holding each word (the cost before the tenant's sums; now, that of rows the fold has
not reached). "sums": after `lexicon_fold` and VACUUM ANALYZE. Parity: questions whose
figures (terms, IDFs, average length, candidates) are equal both ways. 1-minute load
average {load_before:.1f} before, {load_after:.1f} after.

{_table(figures)}
"""
        result = BenchResult(ID, TITLE, markdown, figures)
        path = record(result, command, update=not args.no_record)
        log(f"[lexicon-sums] raw: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
