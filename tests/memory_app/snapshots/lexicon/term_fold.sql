WITH picked AS (
    SELECT s.id, s.tenant_id, s.lexeme, s.df - s.folded_df AS change
    FROM memory_term_stat s
    WHERE s.df <> s.folded_df
    LIMIT %(batch)s
    FOR UPDATE SKIP LOCKED
),
marked AS (
    UPDATE memory_term_stat s SET folded_df = s.folded_df + picked.change
    FROM picked WHERE s.id = picked.id
),
summed AS (
    INSERT INTO memory_tenant_term_stat (tenant_id, lexeme, df)
    SELECT picked.tenant_id, picked.lexeme, sum(picked.change)
    FROM picked GROUP BY picked.tenant_id, picked.lexeme
    ORDER BY picked.tenant_id, picked.lexeme
    ON CONFLICT (tenant_id, lexeme)
    DO UPDATE SET df = memory_tenant_term_stat.df + EXCLUDED.df
)
SELECT count(*) FROM picked
