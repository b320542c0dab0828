SET LOCAL hnsw.iterative_scan = relaxed_order; SET LOCAL hnsw.ef_search = 200; SET LOCAL plan_cache_mode = force_custom_plan; DO $prepare$BEGIN IF NOT EXISTS (SELECT FROM pg_prepared_statements WHERE name = 'engram_search_pool_63ec0c8e73be') THEN EXECUTE $statement$PREPARE engram_search_pool_63ec0c8e73be(vector) AS 
        WITH 
            nearest AS MATERIALIZED (SELECT n.id, n.distance, 1 - ("n"."embedding" <=> $1::vector) AS semantic FROM (SELECT m.id, m.embedding::halfvec(384) <=> $1::halfvec(384) AS distance, m.embedding FROM memory m WHERE m.tenant_id = $2 AND m.user_id = $3 AND m.agent_id = $4 AND m.type = ANY($5::varchar[]) AND m.tags && $6::varchar[] AND m.session_id = $7 AND m.source = ANY($8::varchar[]) AND m.source <> ALL($9::varchar[]) AND m.session_id IS DISTINCT FROM $10 AND m.created_at >= $11 AND m.created_at < $12 AND m.pinned = $13 AND m.scope = $14 AND m.decay_score < $15 AND m.importance >= $16 AND m.confidence >= $17 AND m.metadata @> $18::jsonb AND (m.valid_from IS NULL OR m.valid_from <= $19) AND (m.valid_to IS NULL OR m.valid_to > $19) AND TRUE AND m.user_id BETWEEN (SELECT $20) AND (SELECT $20) ORDER BY (m.embedding::halfvec(384) <=> $1::halfvec(384)) + 0 LIMIT $21) AS n),
            vector_ranked AS MATERIALIZED (
                SELECT id, semantic, row_number() OVER (ORDER BY distance) AS rank
                FROM nearest
            ), 
            hits AS MATERIALIZED (SELECT m.id, m.lexical_vector, m.created_at FROM unnest(ARRAY(SELECT o.id FROM memory o WHERE memory_owner_lexemes(o.tenant_id, o.user_id, o.lexical_vector) && $22::text[] LIMIT $23)) AS owned (id) JOIN memory m ON m.id = owned.id WHERE m.agent_id = $4 AND m.type = ANY($5::varchar[]) AND m.tags && $6::varchar[] AND m.session_id = $7 AND m.source = ANY($8::varchar[]) AND m.source <> ALL($9::varchar[]) AND m.session_id IS DISTINCT FROM $10 AND m.created_at >= $11 AND m.created_at < $12 AND m.pinned = $13 AND m.scope = $14 AND m.decay_score < $15 AND m.importance >= $16 AND m.confidence >= $17 AND m.metadata @> $18::jsonb AND (m.valid_from IS NULL OR m.valid_from <= $19) AND (m.valid_to IS NULL OR m.valid_to > $19) AND TRUE LIMIT $23),
            lexical_ranked AS MATERIALIZED (
                SELECT id, score, rank FROM (
                    SELECT m.id, bm25.score, row_number() OVER (
                        ORDER BY bm25.score DESC, m.created_at DESC, m.id
                    ) AS rank
                    FROM hits m
                    CROSS JOIN LATERAL (SELECT (coalesce($24::float8 * $25::float8 / (1 + $26::float8 * (1 - $27::float8 + $27::float8 * length("m"."lexical_vector") / $28::float8) / nullif(round(1 / (1.64493406685 - 1.64493406685 * ts_rank('{1,1,1,1}'::float4[], "m"."lexical_vector", $29::tsquery)::float8) - 0.5), 0)), 0) + coalesce($30::float8 * $25::float8 / (1 + $26::float8 * (1 - $27::float8 + $27::float8 * length("m"."lexical_vector") / $28::float8) / nullif(round(1 / (1.64493406685 - 1.64493406685 * ts_rank('{1,1,1,1}'::float4[], "m"."lexical_vector", $31::tsquery)::float8) - 0.5), 0)), 0)) AS score) AS bm25
                ) AS scored
                WHERE rank <= $21
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
        SELECT m.id, pool.vector_rank, pool.lexical_rank, greatest(coalesce(pool.cosine, 1 - ("m"."embedding" <=> $1::vector)), (SELECT max(1 - (p.embedding <=> $1::vector)) FROM memory_passage p WHERE p.memory_id = "m"."id")), coalesce(pool.bm25, (coalesce($24::float8 * $25::float8 / (1 + $26::float8 * (1 - $27::float8 + $27::float8 * length("m"."lexical_vector") / $28::float8) / nullif(round(1 / (1.64493406685 - 1.64493406685 * ts_rank('{1,1,1,1}'::float4[], "m"."lexical_vector", $29::tsquery)::float8) - 0.5), 0)), 0) + coalesce($30::float8 * $25::float8 / (1 + $26::float8 * (1 - $27::float8 + $27::float8 * length("m"."lexical_vector") / $28::float8) / nullif(round(1 / (1.64493406685 - 1.64493406685 * ts_rank('{1,1,1,1}'::float4[], "m"."lexical_vector", $31::tsquery)::float8) - 0.5), 0)), 0))),
               m.updated_at, m.importance, m.access_count, m.occurred_at,
               octet_length(m.content), false, m.thread_key, m.thread_order, strip(m.lexical_vector)::text
        FROM pool JOIN memory m ON m.id = pool.id
    $statement$; END IF; END$prepare$; EXECUTE "engram_search_pool_63ec0c8e73be"(%(q)s, %(tenant)s, %(user_id)s, %(agent_id)s, %(types)s, %(tags)s, %(f_session_id)s, %(f_sources)s, %(f_exclude_sources)s, %(f_exclude_session_id)s, %(f_created_from)s, %(f_created_to)s, %(f_pinned)s, %(f_scope)s, %(f_decay_below)s, %(f_min_importance)s, %(f_min_confidence)s, %(f_metadata)s, %(f_valid_at)s, %(owner)s, %(k)s, %(owner_keys)s, %(cap)s, %(bm25_idf0)s, %(k1_plus_one)s, %(k1)s, %(b)s, %(avgdl)s, %(bm25_q0)s, %(bm25_idf1)s, %(bm25_q1)s)
