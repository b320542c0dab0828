"""Keep a memory's (and an indexed turn's) embedding in the row.

A memory row is ~2.4 kB: the 384-float vector (1,540 bytes) plus two tsvectors and the
text. PostgreSQL starts moving attributes out of line above 2,032 bytes, and pgvector's
type defaults to EXTERNAL storage, so every embedding went to TOAST (B2 at 100k: 86 MB of
heap, 156 MB of TOAST). Every distance the search recomputes from the heap (the vector
step's exact re-ranking, the per-user sort, the fusion's cosines) then costs a TOAST
index lookup and a second page: at 1M memories the per-user vector step took ~30 ms
against ~4 ms with the rows cached.

toast_tuple_target 4080 keeps rows up to ~4 kB whole (two or more to a page); MAIN on the
embedding makes it the last attribute moved out when a long row must shrink (the text
goes first). Existing rows keep their layout until rewritten (any update, or
`VACUUM FULL memory` in a maintenance window); new rows are stored inline.
"""

from django.db import migrations

TABLES = ["memory", "memory_turn_index"]

FORWARD = "".join(
    f"ALTER TABLE {table} SET (toast_tuple_target = 4080); "
    f"ALTER TABLE {table} ALTER COLUMN embedding SET STORAGE MAIN; "
    for table in TABLES
)
BACKWARD = "".join(
    f"ALTER TABLE {table} RESET (toast_tuple_target); "
    f"ALTER TABLE {table} ALTER COLUMN embedding SET STORAGE EXTERNAL; "
    for table in TABLES
)


class Migration(migrations.Migration):
    dependencies = [("memory_app", "0251_issue11_term_stat_covering")]

    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
