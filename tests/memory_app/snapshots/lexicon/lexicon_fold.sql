WITH picked AS (
    SELECT s.id, s.tenant_id, s.documents - s.folded_documents AS documents,
           s.lexemes - s.folded_lexemes AS lexemes
    FROM memory_lexicon_stat s
    WHERE s.documents <> s.folded_documents OR s.lexemes <> s.folded_lexemes
    LIMIT %(batch)s
    FOR UPDATE SKIP LOCKED
),
marked AS (
    UPDATE memory_lexicon_stat s
    SET folded_documents = s.folded_documents + picked.documents,
        folded_lexemes = s.folded_lexemes + picked.lexemes
    FROM picked WHERE s.id = picked.id
),
summed AS (
    INSERT INTO memory_tenant_lexicon_stat (tenant_id, documents, lexemes)
    SELECT picked.tenant_id, sum(picked.documents), sum(picked.lexemes)
    FROM picked GROUP BY picked.tenant_id ORDER BY picked.tenant_id
    ON CONFLICT (tenant_id) DO UPDATE
    SET documents = memory_tenant_lexicon_stat.documents + EXCLUDED.documents,
        lexemes = memory_tenant_lexicon_stat.lexemes + EXCLUDED.lexemes
)
SELECT count(*) FROM picked
