SET LOCAL plan_cache_mode = force_generic_plan; DO $prepare$BEGIN IF NOT EXISTS (SELECT FROM pg_prepared_statements WHERE name = 'engram_search_pool_2ef1f038edb7') THEN EXECUTE $statement$PREPARE engram_search_pool_2ef1f038edb7 AS 
        WITH 
            vector_ranked AS (
                SELECT NULL::uuid AS id, NULL::float8 AS semantic, NULL::bigint AS rank
                WHERE false
            ), 
            hits AS MATERIALIZED (SELECT m.id, m.lexical_vector, m.created_at FROM unnest(ARRAY(SELECT o.id FROM memory o WHERE memory_owner_lexemes(o.tenant_id, o.user_id, o.lexical_vector) && $1::text[] LIMIT $2)) AS owned (id) JOIN memory m ON m.id = owned.id WHERE TRUE LIMIT $2),
            lexical_ranked AS MATERIALIZED (
                SELECT id, score, rank FROM (
                    SELECT m.id, bm25.score, row_number() OVER (
                        ORDER BY bm25.score DESC, m.created_at DESC, m.id
                    ) AS rank
                    FROM hits m
                    CROSS JOIN LATERAL (SELECT (coalesce($3::float8 * $4::float8 / (1 + $5::float8 * (1 - $6::float8 + $6::float8 * length("m"."lexical_vector") / $7::float8) / nullif(round(1 / (1.64493406685 - 1.64493406685 * ts_rank('{1,1,1,1}'::float4[], "m"."lexical_vector", $8::tsquery)::float8) - 0.5), 0)), 0) + coalesce($9::float8 * $4::float8 / (1 + $5::float8 * (1 - $6::float8 + $6::float8 * length("m"."lexical_vector") / $7::float8) / nullif(round(1 / (1.64493406685 - 1.64493406685 * ts_rank('{1,1,1,1}'::float4[], "m"."lexical_vector", $10::tsquery)::float8) - 0.5), 0)), 0)) AS score) AS bm25
                ) AS scored
                WHERE rank <= $11
            ),
        pool AS (
            SELECT id, max(vector_rank) AS vector_rank, max(cosine) AS cosine,
                   max(lexical_rank) AS lexical_rank, max(bm25) AS bm25
            FROM (
                SELECT id, rank AS vector_rank, semantic AS cosine,
                       NULL::bigint AS lexical_rank, NULL::float8 AS bm25
                FROM vector_ranked
                UNION ALL
                SELECT id, NULL, NULL, rank, score FROM lexical_ranked
            ) AS sides
            GROUP BY id
        )
        SELECT m.id, pool.vector_rank, pool.lexical_rank, 0, coalesce(pool.bm25, (coalesce($3::float8 * $4::float8 / (1 + $5::float8 * (1 - $6::float8 + $6::float8 * length("m"."lexical_vector") / $7::float8) / nullif(round(1 / (1.64493406685 - 1.64493406685 * ts_rank('{1,1,1,1}'::float4[], "m"."lexical_vector", $8::tsquery)::float8) - 0.5), 0)), 0) + coalesce($9::float8 * $4::float8 / (1 + $5::float8 * (1 - $6::float8 + $6::float8 * length("m"."lexical_vector") / $7::float8) / nullif(round(1 / (1.64493406685 - 1.64493406685 * ts_rank('{1,1,1,1}'::float4[], "m"."lexical_vector", $10::tsquery)::float8) - 0.5), 0)), 0))),
               m.updated_at, m.importance, m.access_count, m.occurred_at,
               octet_length(m.content), false, m.thread_key, m.thread_order
        FROM pool JOIN memory m ON m.id = pool.id
    $statement$; END IF; END$prepare$; EXECUTE "engram_search_pool_2ef1f038edb7"(%(owner_keys)s, %(cap)s, %(bm25_idf0)s, %(k1_plus_one)s, %(k1)s, %(b)s, %(avgdl)s, %(bm25_q0)s, %(bm25_idf1)s, %(bm25_q1)s, %(k)s)
