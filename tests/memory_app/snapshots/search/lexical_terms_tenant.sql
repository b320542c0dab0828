
        WITH q AS (
            SELECT DISTINCT unnest(tsvector_to_array(to_tsvector('english', %(text)s))) AS lexeme
        ),
        totals AS (
            SELECT coalesce(t.documents, 0) + unfolded.documents AS documents,
                   coalesce(t.lexemes, 0) + unfolded.lexemes AS lexemes
            FROM (
                SELECT coalesce(sum(s.documents - s.folded_documents), 0) AS documents,
                       coalesce(sum(s.lexemes - s.folded_lexemes), 0) AS lexemes
                FROM memory_lexicon_stat s
                WHERE s.tenant_id = %(tenant)s
                  AND (s.documents <> s.folded_documents OR s.lexemes <> s.folded_lexemes)
            ) AS unfolded
            LEFT JOIN memory_tenant_lexicon_stat t ON t.tenant_id = %(tenant)s
        )
        SELECT q.lexeme,
               (SELECT coalesce(sum(t.df), 0) FROM memory_tenant_term_stat t
                WHERE t.tenant_id = %(tenant)s AND t.lexeme = q.lexeme)
               + (SELECT coalesce(sum(s.df - s.folded_df), 0) FROM memory_term_stat s
                  WHERE s.tenant_id = %(tenant)s AND s.lexeme = q.lexeme
                    AND s.df <> s.folded_df),
               totals.documents, totals.lexemes
        FROM q CROSS JOIN totals
        
