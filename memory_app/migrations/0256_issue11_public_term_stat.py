"""Document frequencies of public memories, apart (`memory_public_term_stat`): the
lexical step of a tenant-wide search reads public memories in a branch of their own
(`memory_app.selectors.search.lexical_hits_sql`) and chooses that branch's candidate
terms by how many public memories hold them. Summed over the users' own statistics, a
large tenant's private memories put nearly every word past the postings bound, though
the branch reads only the public ones.

The trigger function that keeps the BM25 statistics (migration 0111) counts public
memories too, and the update trigger fires on a change of scope as well as of the
lexical vector; counts are changed in lexeme order (INSERT … ORDER BY … ON CONFLICT), so
two transactions writing public memories lock the shared rows in the same order, and a
row whose count reaches zero is deleted (no word of an erased memory is kept). The
table is filled from the public memories there are.
"""

import django.db.models.deletion
from django.db import migrations, models

FUNCTION = """
CREATE OR REPLACE FUNCTION memory_lexicon_sync() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' OR (TG_OP = 'UPDATE'
                            AND OLD.lexical_vector IS DISTINCT FROM NEW.lexical_vector) THEN
        UPDATE memory_term_stat s SET df = s.df - 1
        WHERE s.tenant_id = OLD.tenant_id AND s.user_id = OLD.user_id
          AND s.lexeme = ANY (tsvector_to_array(OLD.lexical_vector));
        UPDATE memory_lexicon_stat s
        SET documents = s.documents - 1, lexemes = s.lexemes - length(OLD.lexical_vector)
        WHERE s.tenant_id = OLD.tenant_id AND s.user_id = OLD.user_id;
    END IF;
    IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.scope = 'public' THEN
        INSERT INTO memory_public_term_stat (tenant_id, lexeme, df)
        SELECT OLD.tenant_id, lexeme, 0
        FROM unnest(tsvector_to_array(OLD.lexical_vector)) AS lexeme ORDER BY lexeme
        ON CONFLICT (tenant_id, lexeme) DO UPDATE SET df = memory_public_term_stat.df - 1;
        DELETE FROM memory_public_term_stat s
        WHERE s.tenant_id = OLD.tenant_id AND s.df <= 0
          AND s.lexeme = ANY (tsvector_to_array(OLD.lexical_vector));
    END IF;
    IF TG_OP = 'INSERT' OR (TG_OP = 'UPDATE'
                            AND OLD.lexical_vector IS DISTINCT FROM NEW.lexical_vector) THEN
        INSERT INTO memory_term_stat (tenant_id, user_id, lexeme, df)
        SELECT NEW.tenant_id, NEW.user_id, lexeme, 1
        FROM unnest(tsvector_to_array(NEW.lexical_vector)) AS lexeme ORDER BY lexeme
        ON CONFLICT (tenant_id, user_id, lexeme) DO UPDATE SET df = memory_term_stat.df + 1;
        INSERT INTO memory_lexicon_stat (tenant_id, user_id, documents, lexemes)
        VALUES (NEW.tenant_id, NEW.user_id, 1, length(NEW.lexical_vector))
        ON CONFLICT (tenant_id, user_id) DO UPDATE
        SET documents = memory_lexicon_stat.documents + 1,
            lexemes = memory_lexicon_stat.lexemes + EXCLUDED.lexemes;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') AND NEW.scope = 'public' THEN
        INSERT INTO memory_public_term_stat (tenant_id, lexeme, df)
        SELECT NEW.tenant_id, lexeme, 1
        FROM unnest(tsvector_to_array(NEW.lexical_vector)) AS lexeme ORDER BY lexeme
        ON CONFLICT (tenant_id, lexeme) DO UPDATE SET df = memory_public_term_stat.df + 1;
    END IF;
    RETURN NULL;
END $$;
DROP TRIGGER IF EXISTS memory_lexicon_update ON memory;
CREATE TRIGGER memory_lexicon_update AFTER UPDATE ON memory
    FOR EACH ROW WHEN (OLD.lexical_vector IS DISTINCT FROM NEW.lexical_vector
                       OR OLD.scope IS DISTINCT FROM NEW.scope)
    EXECUTE FUNCTION memory_lexicon_sync();
INSERT INTO memory_public_term_stat (tenant_id, lexeme, df)
SELECT tenant_id, lexeme, count(*)
FROM memory, unnest(tsvector_to_array(lexical_vector)) AS lexeme
WHERE scope = 'public'
GROUP BY tenant_id, lexeme;
"""

# Migration 0111's function and update trigger, as they were.
REVERSE_FUNCTION = """
CREATE OR REPLACE FUNCTION memory_lexicon_sync() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        UPDATE memory_term_stat s SET df = s.df - 1
        WHERE s.tenant_id = OLD.tenant_id AND s.user_id = OLD.user_id
          AND s.lexeme = ANY (tsvector_to_array(OLD.lexical_vector));
        UPDATE memory_lexicon_stat s
        SET documents = s.documents - 1, lexemes = s.lexemes - length(OLD.lexical_vector)
        WHERE s.tenant_id = OLD.tenant_id AND s.user_id = OLD.user_id;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        INSERT INTO memory_term_stat (tenant_id, user_id, lexeme, df)
        SELECT NEW.tenant_id, NEW.user_id, lexeme, 1
        FROM unnest(tsvector_to_array(NEW.lexical_vector)) AS lexeme ORDER BY lexeme
        ON CONFLICT (tenant_id, user_id, lexeme) DO UPDATE SET df = memory_term_stat.df + 1;
        INSERT INTO memory_lexicon_stat (tenant_id, user_id, documents, lexemes)
        VALUES (NEW.tenant_id, NEW.user_id, 1, length(NEW.lexical_vector))
        ON CONFLICT (tenant_id, user_id) DO UPDATE
        SET documents = memory_lexicon_stat.documents + 1,
            lexemes = memory_lexicon_stat.lexemes + EXCLUDED.lexemes;
    END IF;
    RETURN NULL;
END $$;
DROP TRIGGER IF EXISTS memory_lexicon_update ON memory;
CREATE TRIGGER memory_lexicon_update AFTER UPDATE ON memory
    FOR EACH ROW WHEN (OLD.lexical_vector IS DISTINCT FROM NEW.lexical_vector)
    EXECUTE FUNCTION memory_lexicon_sync();
"""


class Migration(migrations.Migration):
    dependencies = [
        ("memory_app", "0255_issue11_lexical_public_index"),
        ("sessions_app", "0003_session_cost_indexes"),
    ]

    operations = [
        migrations.CreateModel(
            name="MemoryPublicTermStat",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("lexeme", models.TextField()),
                ("df", models.IntegerField(default=0)),
                (
                    "tenant",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="sessions_app.tenant",
                    ),
                ),
            ],
            options={
                "db_table": "memory_public_term_stat",
                "constraints": [
                    models.UniqueConstraint(
                        fields=("tenant", "lexeme"), name="memory_public_term_stat_unique"
                    )
                ],
            },
        ),
        migrations.RunSQL(sql=FUNCTION, reverse_sql=REVERSE_FUNCTION),
    ]
