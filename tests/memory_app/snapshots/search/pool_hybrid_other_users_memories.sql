SET LOCAL hnsw.iterative_scan = relaxed_order; SET LOCAL hnsw.ef_search = 200; SET LOCAL plan_cache_mode = force_generic_plan; DO $prepare$BEGIN IF NOT EXISTS (SELECT FROM pg_prepared_statements WHERE name = 'engram_search_pool_91b3f91617bd') THEN EXECUTE $statement$PREPARE engram_search_pool_91b3f91617bd(vector) AS 
        WITH 
            nearest AS MATERIALIZED (SELECT n.id, n.distance, 1 - ("n"."embedding" <=> $1::vector) AS semantic FROM (SELECT m.id, m.embedding::halfvec(384) <=> $1::halfvec(384) AS distance, m.embedding FROM memory m WHERE m.tenant_id = $2 AND m.user_id = $3 AND ("m"."scope" = 'public' OR ("m"."user_id" = $4 AND "m"."scope" <> 'public') OR ("m"."scope" = 'shared' AND "m"."user_id" IS DISTINCT FROM $4 AND ("m"."allowed_users" @> ARRAY[$4]::varchar[] OR "m"."allowed_roles" && $5::varchar[]))) AND m.user_id BETWEEN (SELECT $6) AND (SELECT $6) ORDER BY (m.embedding::halfvec(384) <=> $1::halfvec(384)) + 0 LIMIT $7) AS n),
            vector_ranked AS MATERIALIZED (
                SELECT id, semantic, row_number() OVER (ORDER BY distance) AS rank
                FROM nearest
            ), 
            hits AS MATERIALIZED (SELECT m.id, m.lexical_vector, m.created_at FROM unnest(ARRAY(SELECT o.id FROM memory o WHERE memory_owner_lexemes(o.tenant_id, o.user_id, o.lexical_vector) && $8::text[] LIMIT $9)) AS owned (id) JOIN memory m ON m.id = owned.id WHERE ("m"."scope" = 'public' OR ("m"."user_id" = $4 AND "m"."scope" <> 'public') OR ("m"."scope" = 'shared' AND "m"."user_id" IS DISTINCT FROM $4 AND ("m"."allowed_users" @> ARRAY[$4]::varchar[] OR "m"."allowed_roles" && $5::varchar[]))) LIMIT $9),
            lexical_ranked AS MATERIALIZED (
                SELECT id, score, rank FROM (
                    SELECT m.id, bm25.score, row_number() OVER (
                        ORDER BY bm25.score DESC, m.created_at DESC, m.id
                    ) AS rank
                    FROM hits m
                    CROSS JOIN LATERAL (SELECT (coalesce($10::float8 * $11::float8 / (1 + $12::float8 * (1 - $13::float8 + $13::float8 * length("m"."lexical_vector") / $14::float8) / nullif(round(1 / (1.64493406685 - 1.64493406685 * ts_rank('{1,1,1,1}'::float4[], "m"."lexical_vector", $15::tsquery)::float8) - 0.5), 0)), 0) + coalesce($16::float8 * $11::float8 / (1 + $12::float8 * (1 - $13::float8 + $13::float8 * length("m"."lexical_vector") / $14::float8) / nullif(round(1 / (1.64493406685 - 1.64493406685 * ts_rank('{1,1,1,1}'::float4[], "m"."lexical_vector", $17::tsquery)::float8) - 0.5), 0)), 0)) AS score) AS bm25
                ) AS scored
                WHERE rank <= $7
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
        SELECT m.id, pool.vector_rank, pool.lexical_rank, greatest(coalesce(pool.cosine, 1 - ("m"."embedding" <=> $1::vector)), (SELECT max(1 - (p.embedding <=> $1::vector)) FROM memory_passage p WHERE p.memory_id = "m"."id")), coalesce(pool.bm25, (coalesce($10::float8 * $11::float8 / (1 + $12::float8 * (1 - $13::float8 + $13::float8 * length("m"."lexical_vector") / $14::float8) / nullif(round(1 / (1.64493406685 - 1.64493406685 * ts_rank('{1,1,1,1}'::float4[], "m"."lexical_vector", $15::tsquery)::float8) - 0.5), 0)), 0) + coalesce($16::float8 * $11::float8 / (1 + $12::float8 * (1 - $13::float8 + $13::float8 * length("m"."lexical_vector") / $14::float8) / nullif(round(1 / (1.64493406685 - 1.64493406685 * ts_rank('{1,1,1,1}'::float4[], "m"."lexical_vector", $17::tsquery)::float8) - 0.5), 0)), 0))),
               m.updated_at, m.importance, m.access_count, m.occurred_at,
               octet_length(m.content), false, m.thread_key, m.thread_order, strip(m.lexical_vector)::text
        FROM pool JOIN memory m ON m.id = pool.id
    $statement$; END IF; END$prepare$; EXECUTE "engram_search_pool_91b3f91617bd"(%(q)s, %(tenant)s, %(user_id)s, %(acting_user)s, %(acting_roles)s, %(owner)s, %(k)s, %(owner_keys)s, %(cap)s, %(bm25_idf0)s, %(k1_plus_one)s, %(k1)s, %(b)s, %(avgdl)s, %(bm25_q0)s, %(bm25_idf1)s, %(bm25_q1)s)
