SET LOCAL hnsw.iterative_scan = relaxed_order; SET LOCAL hnsw.ef_search = 200; SET LOCAL plan_cache_mode = force_generic_plan; DO $prepare$BEGIN IF NOT EXISTS (SELECT FROM pg_prepared_statements WHERE name = 'engram_search_pool_f80dcf0a3bf9') THEN EXECUTE $statement$PREPARE engram_search_pool_f80dcf0a3bf9(vector) AS 
        WITH 
            nearest AS MATERIALIZED (SELECT n.id, n.distance, 1 - ("n"."embedding" <=> $1::vector) AS semantic FROM (SELECT m.id, m.embedding::halfvec(384) <=> $1::halfvec(384) AS distance, m.embedding FROM memory m WHERE m.tenant_id = $2 AND m.user_id = $3 AND TRUE AND m.user_id BETWEEN (SELECT $4) AND (SELECT $4) ORDER BY (m.embedding::halfvec(384) <=> $1::halfvec(384)) + 0 LIMIT $5) AS n),
            vector_ranked AS MATERIALIZED (
                SELECT id, semantic, row_number() OVER (ORDER BY distance) AS rank
                FROM nearest
            ), 
            lexical_ranked AS (
                SELECT NULL::uuid AS id, NULL::float8 AS score, NULL::bigint AS rank WHERE false
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
        SELECT m.id, pool.vector_rank, pool.lexical_rank, greatest(coalesce(pool.cosine, 1 - ("m"."embedding" <=> $1::vector)), (SELECT max(1 - (p.embedding <=> $1::vector)) FROM memory_passage p WHERE p.memory_id = "m"."id")), coalesce(pool.bm25, 0::float8),
               m.updated_at, m.importance, m.access_count, m.occurred_at,
               octet_length(m.content), false, m.thread_key, m.thread_order
        FROM pool JOIN memory m ON m.id = pool.id
    $statement$; END IF; END$prepare$; EXECUTE "engram_search_pool_f80dcf0a3bf9"(%(q)s, %(tenant)s, %(user_id)s, %(owner)s, %(k)s)
