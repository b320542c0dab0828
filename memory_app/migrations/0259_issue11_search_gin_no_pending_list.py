"""The GIN indexes a search's branches read keep no pending list (`fastupdate = off`).

With fast update on, a row's keys go to the index's pending list, an unsorted list that
autovacuum (or the insert that fills `gin_pending_list_limit`) merges later, and every
scan of the index reads the whole list whoever's rows it holds: a search of one user's
memories read the lexical postings of every row written since the last merge. On B2's
million, 2,055 pending tuples put the search statement's p95 at 10-12 ms against ~3; on
LoCoMo's table, a user who had just written 419 turns searched in 10.8 ms (statement
p50) through the owner index against 8.4 through the (tenant, user) btree, and the
difference was the list (bench/RESULTS.md, "Search latency notes (issue 11, session 14)").

Off, a write puts its keys into the index itself. On the million, 1,000-row inserts
took 2.45 ms a row against 2.36 with the list (+4 %), about what the deferred merge
costs anyway: the work moves from every search to the one write.

`ALTER INDEX … SET` is immediate (it takes a brief exclusive lock on the index); the
pending entries already there are merged by `gin_clean_pending_list`. The model's state
records the option (`GinIndex(fastupdate=False)`) without rebuilding the indexes.
"""

from django.contrib.postgres.indexes import GinIndex
from django.db import migrations
from django.db.models import F, Q

import memory_app.models

INDEXES = [
    GinIndex(
        memory_app.models.OwnerLexemes(F("tenant"), F("user_id"), F("lexical_vector")),
        name="memory_lexical_owner",
        fastupdate=False,
    ),
    GinIndex(
        fields=["tenant", "lexical_vector"],
        condition=Q(scope="public"),
        name="memory_lexical_public",
        fastupdate=False,
    ),
    GinIndex(
        fields=["tenant", "allowed_users", "allowed_roles"],
        condition=Q(scope="shared"),
        name="memory_shared_grants",
        fastupdate=False,
    ),
]
NAMES = [index.name for index in INDEXES]


class Migration(migrations.Migration):
    dependencies = [("memory_app", "0258_issue11_lexical_owner_index")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(
                    sql=[f"ALTER INDEX {name} SET (fastupdate = off)" for name in NAMES]
                    + [f"SELECT gin_clean_pending_list('{name}'::regclass)" for name in NAMES],
                    reverse_sql=[f"ALTER INDEX {name} RESET (fastupdate)" for name in NAMES],
                ),
            ],
            state_operations=[
                *(migrations.RemoveIndex(model_name="memory", name=name) for name in NAMES),
                *(migrations.AddIndex(model_name="memory", index=index) for index in INDEXES),
            ],
        ),
    ]
