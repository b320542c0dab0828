"""What the memory search needs beyond the model's fields and indexes.

- `memory_lexicon_sync` keeps the BM25 statistics (`memory_term_stat`: document frequency
  per tenant, user and lexeme; `memory_lexicon_stat`: documents and total length per
  user) in step with every change of a memory's `lexical_vector`, whatever wrote it
  (service, bulk load, cascade, erasure). Lexemes are upserted in sorted order so that
  concurrent writers of one user lock them alike.
- `lexical_vector` is stored inline (STORAGE MAIN): the lexical step reads it for every
  candidate, and a TOASTed value costs a second fetch.
- The HNSW graphs over `embedding::halfvec(N)` (N = ENGRAM_EMBEDDING_DIMENSIONS): one over
  every memory and a partial one over public memories, with m = 32 and
  ef_construction = 128 so that groups of near-identical memories stay connected.
  Django cannot express an expression index with an operator class, so they are SQL.
  Evidence: docs/decisions/vector-index-halfvec-hnsw.md and lexical-search-indexes.md.
"""

from django.conf import settings
from django.db import migrations

LEXICON_SYNC = """
CREATE FUNCTION memory_lexicon_sync() RETURNS trigger LANGUAGE plpgsql AS $$
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
CREATE TRIGGER memory_lexicon_insert_delete AFTER INSERT OR DELETE ON memory
    FOR EACH ROW EXECUTE FUNCTION memory_lexicon_sync();
CREATE TRIGGER memory_lexicon_update AFTER UPDATE ON memory
    FOR EACH ROW WHEN (OLD.lexical_vector IS DISTINCT FROM NEW.lexical_vector)
    EXECUTE FUNCTION memory_lexicon_sync();
"""

DROP_LEXICON_SYNC = """
DROP TRIGGER memory_lexicon_update ON memory;
DROP TRIGGER memory_lexicon_insert_delete ON memory;
DROP FUNCTION memory_lexicon_sync();
"""

HALFVEC = f"(embedding::halfvec({settings.ENGRAM_EMBEDDING_DIMENSIONS})) halfvec_cosine_ops"
GRAPH = "WITH (m = 32, ef_construction = 128)"


class Migration(migrations.Migration):
    dependencies = [("memory_app", "0002_initial")]

    operations = [
        migrations.RunSQL(sql=LEXICON_SYNC, reverse_sql=DROP_LEXICON_SYNC),
        migrations.RunSQL(
            sql="ALTER TABLE memory ALTER COLUMN lexical_vector SET STORAGE MAIN",
            reverse_sql="ALTER TABLE memory ALTER COLUMN lexical_vector SET STORAGE EXTENDED",
        ),
        migrations.RunSQL(
            sql=f"CREATE INDEX memory_embedding_hnsw ON memory USING hnsw ({HALFVEC}) {GRAPH}",
            reverse_sql="DROP INDEX memory_embedding_hnsw",
        ),
        migrations.RunSQL(
            sql=(
                f"CREATE INDEX memory_embedding_public ON memory USING hnsw ({HALFVEC}) {GRAPH}"
                " WHERE scope = 'public'"
            ),
            reverse_sql="DROP INDEX memory_embedding_public",
        ),
    ]
