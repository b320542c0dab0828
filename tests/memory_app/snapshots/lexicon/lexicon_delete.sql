WITH gone AS (
    DELETE FROM memory_lexicon_stat s
    WHERE s.tenant_id = %(tenant)s AND s.user_id = %(user_id)s
    RETURNING s.folded_documents, s.folded_lexemes
)
INSERT INTO memory_tenant_lexicon_stat (tenant_id, documents, lexemes)
SELECT %(tenant)s, -sum(gone.folded_documents), -sum(gone.folded_lexemes)
FROM gone HAVING sum(gone.folded_documents) <> 0 OR sum(gone.folded_lexemes) <> 0
ON CONFLICT (tenant_id) DO UPDATE
SET documents = memory_tenant_lexicon_stat.documents + EXCLUDED.documents,
    lexemes = memory_tenant_lexicon_stat.lexemes + EXCLUDED.lexemes
