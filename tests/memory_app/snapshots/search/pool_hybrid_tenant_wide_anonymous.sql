SET LOCAL hnsw.iterative_scan = relaxed_order; SET LOCAL hnsw.ef_search = 200; SET LOCAL plan_cache_mode = force_custom_plan; DO $prepare$BEGIN IF NOT EXISTS (SELECT FROM pg_prepared_statements WHERE name = 'engram_search_pool_98c4f9b1e8cb') THEN EXECUTE $statement$PREPARE engram_search_pool_98c4f9b1e8cb(vector) AS 
        WITH 
            nearest AS MATERIALIZED (SELECT n.id, n.distance, 1 - ("n"."embedding" <=> $1::vector) AS semantic FROM (SELECT m.id, m.embedding::halfvec(384) <=> $1::halfvec(384) AS distance, m.embedding FROM memory m WHERE m.tenant_id = $2 AND "m"."scope" = 'public' ORDER BY m.embedding::halfvec(384) <=> $1::halfvec(384) LIMIT $3) AS n),
            vector_ranked AS MATERIALIZED (
                SELECT id, semantic, row_number() OVER (ORDER BY distance) AS rank
                FROM nearest
            ), 
            hits AS MATERIALIZED (SELECT m.id, m.lexical_vector, m.created_at FROM memory m WHERE memory_owner_lexemes(m.tenant_id, '', m.lexical_vector) && $4::text[] AND "m"."scope" = 'public' LIMIT $5),
            lexical_ranked AS MATERIALIZED (
                SELECT id, score, rank FROM (
                    SELECT m.id, bm25.score, row_number() OVER (
                        ORDER BY bm25.score DESC, m.created_at DESC, m.id
                    ) AS rank
                    FROM hits m
                    CROSS JOIN LATERAL (SELECT (coalesce($6::float8 * $7::float8 / (1 + $8::float8 * (1 - $9::float8 + $9::float8 * length("m"."lexical_vector") / $10::float8) / nullif(round(1 / (1.64493406685 - 1.64493406685 * ts_rank('{1,1,1,1}'::float4[], "m"."lexical_vector", $11::tsquery)::float8) - 0.5), 0)), 0) + coalesce($12::float8 * $7::float8 / (1 + $8::float8 * (1 - $9::float8 + $9::float8 * length("m"."lexical_vector") / $10::float8) / nullif(round(1 / (1.64493406685 - 1.64493406685 * ts_rank('{1,1,1,1}'::float4[], "m"."lexical_vector", $13::tsquery)::float8) - 0.5), 0)), 0)) AS score) AS bm25
                ) AS scored
                WHERE rank <= $3
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
        SELECT m.id, pool.vector_rank, pool.lexical_rank, greatest(coalesce(pool.cosine, 1 - ("m"."embedding" <=> $1::vector)), (SELECT max(1 - (p.embedding <=> $1::vector)) FROM memory_passage p WHERE p.memory_id = "m"."id")), coalesce(pool.bm25, (coalesce($6::float8 * $7::float8 / (1 + $8::float8 * (1 - $9::float8 + $9::float8 * length("m"."lexical_vector") / $10::float8) / nullif(round(1 / (1.64493406685 - 1.64493406685 * ts_rank('{1,1,1,1}'::float4[], "m"."lexical_vector", $11::tsquery)::float8) - 0.5), 0)), 0) + coalesce($12::float8 * $7::float8 / (1 + $8::float8 * (1 - $9::float8 + $9::float8 * length("m"."lexical_vector") / $10::float8) / nullif(round(1 / (1.64493406685 - 1.64493406685 * ts_rank('{1,1,1,1}'::float4[], "m"."lexical_vector", $13::tsquery)::float8) - 0.5), 0)), 0))),
               m.updated_at, m.importance, m.access_count, m.occurred_at,
               octet_length(m.content), false, m.thread_key, m.thread_order, strip(m.lexical_vector)::text
        FROM pool JOIN memory m ON m.id = pool.id
    $statement$; END IF; END$prepare$; EXECUTE "engram_search_pool_98c4f9b1e8cb"(%(q)s, %(tenant)s, %(k)s, %(public_keys)s, %(cap)s, %(bm25_idf0)s, %(k1_plus_one)s, %(k1)s, %(b)s, %(avgdl)s, %(bm25_q0)s, %(bm25_idf1)s, %(bm25_q1)s)
