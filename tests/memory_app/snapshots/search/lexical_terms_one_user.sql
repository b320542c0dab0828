
        WITH q AS (
            SELECT DISTINCT unnest(tsvector_to_array(to_tsvector('english', %(text)s))) AS lexeme
        ),
        totals AS (
            SELECT coalesce(sum(s.documents), 0) AS documents,
                   coalesce(sum(s.lexemes), 0) AS lexemes
            FROM memory_lexicon_stat s WHERE s.tenant_id = %(tenant)s AND s.user_id = %(user_id)s
        )
        SELECT q.lexeme,
               (SELECT coalesce(sum(s.df), 0) FROM memory_term_stat s
                WHERE s.tenant_id = %(tenant)s AND s.lexeme = q.lexeme
                  AND s.user_id = %(user_id)s),
               totals.documents, totals.lexemes
        FROM q CROSS JOIN totals
        
