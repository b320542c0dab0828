"""PostgreSQL extensions and SQL functions the memory tables and their indexes use.

`vector` stores embeddings; `pg_trgm` backs the fuzzy name lookups;
`btree_gin` lets a GIN index hold the tenant and user beside the lexemes. The function
`memory_owner_lexemes` builds the keys of the `memory_lexical_owner` GIN index (one key
per tenant, user and lexeme, so a user's lexical search reads only that user's postings;
docs/decisions/lexical-search-indexes.md). `memory_app.selectors.search.lexical_hits.owner_lexeme_keys`
writes the same keys; a test holds the two together. The function is IMMUTABLE (an index
expression must be) and uses only pg_catalog functions, so it means the same under the
restricted search_path of maintenance commands; COST 1000 makes the planner read the index
rather than compute the function on rows it reads another way.
"""

from django.contrib.postgres.operations import BtreeGinExtension, TrigramExtension
from django.db import migrations
from pgvector.django import VectorExtension

OWNER_LEXEMES = """
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
    initial = True

    dependencies: list[tuple[str, str]] = []

    operations = [
        VectorExtension(),
        TrigramExtension(),
        BtreeGinExtension(),
        migrations.RunSQL(
            sql=OWNER_LEXEMES,
            reverse_sql="DROP FUNCTION memory_owner_lexemes(bigint, text, tsvector)",
        ),
    ]
