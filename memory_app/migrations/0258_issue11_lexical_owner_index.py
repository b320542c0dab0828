"""The lexical step's index of one owner's memories: each (tenant, user, lexeme) is a key
of its own, `gin (memory_owner_lexemes(tenant_id, user_id, lexical_vector))`.

`memory_lexical_scope` (migration 0253) holds the tenant, the user and the lexemes as
separate keys, and GIN intersects their postings: a user's key lists their rows, but a
lexeme's key lists every row of the table that holds it, so a search of one user's
memories for a common word still read the word's postings across the whole table. On
B2's million memories (500 a user), the hits of one user's search read 1.0 / 3.3 ms
(p50 / p95 of 100 queries) through it, and 0.3 / 0.5 through this index, whose key for
"laptop" of `user-0` lists that user's rows only (bench/RESULTS.md, "Search latency
notes (issue 11, session 13)"). The work of a search of one user's memories (and of an
end user's own branch of a tenant-wide one) no longer grows with the table.

A key is `<tenant>/<length of the user id>/<user id>/<lexeme>`: the length makes it
unambiguous whatever the id holds (`memory_app.selectors.search.owner_lexeme_keys`
writes the same keys; a test holds the two together). `memory_lexical_scope` stays: a
tenant-wide search by an operator, which no user bounds, reads it by its tenant key.

The function is IMMUTABLE (an index expression must be) and uses only pg_catalog
functions, so it means the same under the restricted search_path of maintenance
commands. A call builds a string for each of the row's lexemes, ~25 us for a thread
window's forty: COST 1000 (units of a simple operator's cost) tells the planner so, and
it reads the index rather than computing the function on rows it reads another way
(`lexical_hits_sql`). PARALLEL RESTRICTED: with that cost on the bitmap scan's recheck,
the planner sent a lookup of 51 rows to a parallel worker, whose start cost 6 ms.
The index is built CONCURRENTLY, so writes go on during the build.
"""

from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations
from django.db.models import F

import memory_app.models

FUNCTION = """
CREATE OR REPLACE FUNCTION memory_owner_lexemes(tenant bigint, owner text, lexemes tsvector)
RETURNS text[] LANGUAGE sql IMMUTABLE STRICT PARALLEL RESTRICTED COST 1000 AS $$
    SELECT coalesce(
        array_agg(tenant::text || '/' || length(owner)::text || '/' || owner || '/' || lexeme),
        '{}'
    )
    FROM unnest(tsvector_to_array(lexemes)) AS lexeme
$$
"""


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run in a transaction

    dependencies = [("memory_app", "0257_issue11_lexical_vector_inline")]

    operations = [
        migrations.RunSQL(
            sql=FUNCTION,
            reverse_sql="DROP FUNCTION memory_owner_lexemes(bigint, text, tsvector)",
        ),
        AddIndexConcurrently(
            model_name="memory",
            index=GinIndex(
                memory_app.models.OwnerLexemes(F("tenant"), F("user_id"), F("lexical_vector")),
                name="memory_lexical_owner",
            ),
        ),
    ]
