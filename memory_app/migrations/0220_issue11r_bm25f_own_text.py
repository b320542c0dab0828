"""BM25F for the lexical side (issue 11, recall): `lexical_vector` of memories and of the
turn index becomes the item's own text (weight A) followed by its window (weight B), so
a word of its own text counts twice in BM25's term frequency and a neighbour's once.

PostgreSQL cannot change a generated column's expression before version 17, so the
column is dropped and added again (its values recomputed from the rows). The trigger that
keeps the BM25 statistics watches `lexical_vector` in its WHEN clause, so it is dropped
first and created again after; the statistics are recomputed from the new column (a
memory's summary now belongs to its own field even in a thread).
"""

import django.contrib.postgres.indexes
import django.contrib.postgres.search
import django.db.models.functions.text
from django.db import migrations, models

UPDATE_TRIGGER = """
CREATE TRIGGER memory_lexicon_update AFTER UPDATE ON memory
    FOR EACH ROW WHEN (OLD.lexical_vector IS DISTINCT FROM NEW.lexical_vector)
    EXECUTE FUNCTION memory_lexicon_sync();
"""
DROP_UPDATE_TRIGGER = "DROP TRIGGER IF EXISTS memory_lexicon_update ON memory;"

RECOMPUTE_STATS = """
DELETE FROM memory_term_stat;
DELETE FROM memory_lexicon_stat;
INSERT INTO memory_term_stat (tenant_id, user_id, lexeme, df)
SELECT tenant_id, user_id, lexeme, count(*)
FROM memory, unnest(tsvector_to_array(lexical_vector)) AS lexeme
GROUP BY tenant_id, user_id, lexeme;
INSERT INTO memory_lexicon_stat (tenant_id, user_id, documents, lexemes)
SELECT tenant_id, user_id, count(*), sum(length(lexical_vector)) FROM memory
GROUP BY tenant_id, user_id;
"""

_OWN = django.db.models.functions.text.Concat(
    models.F("content"), models.Value(" "), models.F("summary"), output_field=models.TextField()
)


class Migration(migrations.Migration):
    dependencies = [
        ("memory_app", "0151_issue15_memory_metadata_types"),
    ]

    operations = [
        # Reversed last: the statistics of the restored column.
        migrations.RunSQL(sql=migrations.RunSQL.noop, reverse_sql=RECOMPUTE_STATS),
        migrations.RunSQL(sql=DROP_UPDATE_TRIGGER, reverse_sql=UPDATE_TRIGGER),
        migrations.RemoveIndex(model_name="memory", name="memory_lexical_vector"),
        migrations.RemoveField(model_name="memory", name="lexical_vector"),
        migrations.AddField(
            model_name="memory",
            name="lexical_vector",
            field=models.GeneratedField(
                db_persist=True,
                expression=django.contrib.postgres.search.CombinedSearchVector(
                    django.contrib.postgres.search.SearchVector(_OWN, config="english", weight="A"),
                    "||",
                    django.contrib.postgres.search.SearchVector(
                        models.Case(
                            models.When(
                                models.Q(("thread_context", ""), _negated=True),
                                then=models.F("thread_context"),
                            ),
                            default=_OWN,
                            output_field=models.TextField(),
                        ),
                        config="english",
                        weight="B",
                    ),
                    django.contrib.postgres.search.SearchConfig("english"),
                ),
                output_field=django.contrib.postgres.search.SearchVectorField(),
            ),
        ),
        migrations.AddIndex(
            model_name="memory",
            index=django.contrib.postgres.indexes.GinIndex(
                fields=["lexical_vector"], name="memory_lexical_vector"
            ),
        ),
        migrations.RunSQL(sql=UPDATE_TRIGGER, reverse_sql=DROP_UPDATE_TRIGGER),
        migrations.RunSQL(sql=RECOMPUTE_STATS, reverse_sql=migrations.RunSQL.noop),
        migrations.RemoveIndex(model_name="turnindexentry", name="memory_turn_index_lexical"),
        migrations.RemoveField(model_name="turnindexentry", name="lexical_vector"),
        migrations.AddField(
            model_name="turnindexentry",
            name="lexical_vector",
            field=models.GeneratedField(
                db_persist=True,
                expression=django.contrib.postgres.search.CombinedSearchVector(
                    django.contrib.postgres.search.SearchVector(
                        "text", config="english", weight="A"
                    ),
                    "||",
                    django.contrib.postgres.search.SearchVector(
                        "thread_context", config="english", weight="B"
                    ),
                    django.contrib.postgres.search.SearchConfig("english"),
                ),
                output_field=django.contrib.postgres.search.SearchVectorField(),
            ),
        ),
        migrations.AddIndex(
            model_name="turnindexentry",
            index=django.contrib.postgres.indexes.GinIndex(
                fields=["lexical_vector"], name="memory_turn_index_lexical"
            ),
        ),
    ]
