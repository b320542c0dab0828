"""Keep a memory's embedding in its row: `toast_tuple_target = 4080` on `memory` and
`memory_turn_index`.

A memory row is about 3.5 kB (the 1,536-byte embedding, two tsvectors, the text and its
thread window), over PostgreSQL's default 2 kB target, and pgvector's `vector` has
EXTERNAL storage, so the toaster moved the embedding, the largest attribute, to the TOAST
table. Every row a search visits for its distance (the per-user exact scan, the HNSW
scan's filter check, the pool's cosine) then took a TOAST index probe and a TOAST heap
page on top of the row's own page: 4.6 buffers per row on a LoCoMo conversation, and at
a million memories, where those pages are not cached, three random reads instead of one.

With a target of half a page a usual row stays whole (two per page); a row with long text
still gets its text compressed and moved out first, as the largest attribute. Rows written
before this migration move in when next updated (`VACUUM FULL memory` moves all at once).
"""

from django.db import migrations

TABLES = ("memory", "memory_turn_index")


class Migration(migrations.Migration):
    dependencies = [("memory_app", "0252_issue11_hnsw_m32")]

    operations = [
        migrations.RunSQL(
            sql=[f"ALTER TABLE {table} SET (toast_tuple_target = 4080)" for table in TABLES],
            reverse_sql=[f"ALTER TABLE {table} RESET (toast_tuple_target)" for table in TABLES],
        )
    ]
