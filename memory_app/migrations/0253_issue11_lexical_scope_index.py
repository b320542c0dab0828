"""The lexical step's GIN index holds the tenant and the user next to the lexemes:
`gin (tenant_id, user_id, lexical_vector)` with btree_gin, replacing
`gin (lexical_vector)`.

With the lexemes alone, a per-user search for common words ("run", "hike") had the
planner AND the user's rows (500) with the whole table's postings of those words: on
B2's million memories the GIN returned 124,783 row pointers for a user who has 500
memories, 37 ms of a 46 ms search statement. With the user a key of the same index, GIN
intersects the lists itself: 131 pointers, 1.3 ms (bench/RESULTS.md, "Search latency notes
(issue 11, session 7)").

btree_gin ships with PostgreSQL's contrib and is a trusted extension (PostgreSQL 13+): a
database owner without superuser rights may create it. Built CONCURRENTLY, so writes go
on during the build on a large table.
"""

from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.operations import (
    AddIndexConcurrently,
    BtreeGinExtension,
    RemoveIndexConcurrently,
)
from django.db import migrations


class Migration(migrations.Migration):
    atomic = False  # CREATE/DROP INDEX CONCURRENTLY cannot run in a transaction

    dependencies = [("memory_app", "0252_issue11_hnsw_m32")]

    operations = [
        BtreeGinExtension(),
        AddIndexConcurrently(
            model_name="memory",
            index=GinIndex(
                fields=["tenant", "user_id", "lexical_vector"], name="memory_lexical_scope"
            ),
        ),
        RemoveIndexConcurrently(model_name="memory", name="memory_lexical_vector"),
    ]
