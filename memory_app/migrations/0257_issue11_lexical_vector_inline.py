"""Keep `lexical_vector` in the row: storage MAIN instead of EXTENDED, on `memory` and
`memory_turn_index`.

A memory in a thread indexes its window (`thread_context`), so its row is the embedding
(1.5 kB), the window, its text and two tsvectors: past the 2 kB at which PostgreSQL
starts moving values out of line. With EXTENDED storage the toaster moved whichever
was largest after the embedding, often `lexical_vector` (324 of 788 LoCoMo turns), and
BM25 reads it twice per query term (`bm25_sql`): each read of an out-of-line value is
a TOAST index lookup, so a 9-term query scoring 200 candidates spent most of its 5-7 ms
fetching the same values again. MAIN keeps the value inline and moves the others out
first (the embedding, the window, `search_vector`); it still goes out of line as a last
resort, so no row becomes too big.

A catalog change only, no rewrite: rows written from now on keep the vector inline. On
an existing database `VACUUM FULL memory, memory_turn_index` (or pg_repack) rewrites
the rows under the new storage (CHANGELOG, issue 11 session 11).
"""

from django.db import migrations

TABLES = ("memory", "memory_turn_index")


class Migration(migrations.Migration):
    dependencies = [("memory_app", "0255_issue11_lexical_public_index")]

    operations = [
        migrations.RunSQL(
            sql=[
                f"ALTER TABLE {table} ALTER COLUMN lexical_vector SET STORAGE MAIN"
                for table in TABLES
            ],
            reverse_sql=[
                f"ALTER TABLE {table} ALTER COLUMN lexical_vector SET STORAGE EXTENDED"
                for table in TABLES
            ],
        ),
    ]
