WITH gone AS (
    DELETE FROM memory_term_stat s
    WHERE s.tenant_id = %(tenant)s AND s.user_id = %(user_id)s
    RETURNING s.lexeme, s.folded_df
)
INSERT INTO memory_tenant_term_stat (tenant_id, lexeme, df)
SELECT %(tenant)s, gone.lexeme, -sum(gone.folded_df)
FROM gone GROUP BY gone.lexeme HAVING sum(gone.folded_df) <> 0 ORDER BY gone.lexeme
ON CONFLICT (tenant_id, lexeme) DO UPDATE SET df = memory_tenant_term_stat.df + EXCLUDED.df
