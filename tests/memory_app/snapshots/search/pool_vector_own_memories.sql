SET LOCAL hnsw.iterative_scan = relaxed_order; SET LOCAL hnsw.ef_search = 200; SET LOCAL plan_cache_mode = force_custom_plan; DO $prepare$BEGIN IF NOT EXISTS (SELECT FROM pg_prepared_statements WHERE name = 'engram_search_pool_2ae191b54930') THEN EXECUTE $statement$PREPARE engram_search_pool_2ae191b54930(vector) AS 
        WITH 
            nearest AS MATERIALIZED (SELECT n.id, n.distance, 1 - ("n"."embedding" <=> $1::vector) AS semantic FROM (SELECT m.id, m.embedding::halfvec(384) <=> $1::halfvec(384) AS distance, m.embedding FROM memory m WHERE m.tenant_id = $2 AND m.user_id = $3 AND TRUE AND m.user_id BETWEEN (SELECT $4) AND (SELECT $4) ORDER BY m.embedding::halfvec(384) <=> $1::halfvec(384) LIMIT $5) AS n),
            vector_ranked AS MATERIALIZED (
                SELECT id, semantic, row_number() OVER (ORDER BY distance) AS rank
                FROM nearest
            ), 
            lexical_ranked AS (
                SELECT NULL::uuid AS id, NULL::float8 AS score, NULL::bigint AS rank WHERE false
            ),
        pool AS (SELECT id FROM vector_ranked UNION SELECT id FROM lexical_ranked)
        SELECT m.id, v.rank, l.rank, greatest(coalesce(v.semantic, 1 - ("m"."embedding" <=> $1::vector)), (SELECT max(1 - (p.embedding <=> $1::vector)) FROM memory_passage p WHERE p.memory_id = "m"."id")), coalesce(l.score, 0::float8),
               m.updated_at, m.importance, m.access_count, m.occurred_at,
               octet_length(m.content), false
        FROM pool JOIN memory m ON m.id = pool.id
        LEFT JOIN vector_ranked v ON v.id = m.id
        LEFT JOIN lexical_ranked l ON l.id = m.id
    $statement$; END IF; END$prepare$; EXECUTE "engram_search_pool_2ae191b54930"(%(q)s, %(tenant)s, %(user_id)s, %(owner)s, %(k)s)
