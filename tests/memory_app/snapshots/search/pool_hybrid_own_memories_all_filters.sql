SET LOCAL hnsw.iterative_scan = relaxed_order; SET LOCAL hnsw.ef_search = 200; 
        WITH 
            nearest AS MATERIALIZED (SELECT n.id, n.distance, 1 - ("n"."embedding" <=> %(q)s::vector) AS semantic FROM (SELECT m.id, m.embedding::halfvec(384) <=> %(q)s::halfvec(384) AS distance, m.embedding FROM memory m WHERE m.tenant_id = %(tenant)s AND m.user_id = %(user_id)s AND m.agent_id = %(agent_id)s AND m.type = ANY(%(types)s::varchar[]) AND m.tags && %(tags)s::varchar[] AND m.session_id = %(f_session_id)s AND m.source = ANY(%(f_sources)s::varchar[]) AND m.source <> ALL(%(f_exclude_sources)s::varchar[]) AND m.session_id IS DISTINCT FROM %(f_exclude_session_id)s AND m.created_at >= %(f_created_from)s AND m.created_at < %(f_created_to)s AND m.pinned = %(f_pinned)s AND m.scope = %(f_scope)s AND m.decay_score < %(f_decay_below)s AND m.importance >= %(f_min_importance)s AND m.confidence >= %(f_min_confidence)s AND m.metadata @> %(f_metadata)s::jsonb AND (m.valid_from IS NULL OR m.valid_from <= %(f_valid_at)s) AND (m.valid_to IS NULL OR m.valid_to > %(f_valid_at)s) AND TRUE AND m.user_id BETWEEN (SELECT %(owner)s) AND (SELECT %(owner)s) ORDER BY m.embedding::halfvec(384) <=> %(q)s::halfvec(384) LIMIT %(k)s) AS n),
            vector_ranked AS MATERIALIZED (
                SELECT id, semantic, row_number() OVER (ORDER BY distance) AS rank
                FROM nearest
            ), 
            hits AS MATERIALIZED (SELECT m.id, m.lexical_vector, m.created_at FROM unnest(ARRAY(SELECT o.id FROM memory o WHERE memory_owner_lexemes(o.tenant_id, o.user_id, o.lexical_vector) && %(owner_keys)s::text[] LIMIT %(cap)s)) AS owned (id) JOIN memory m ON m.id = owned.id WHERE m.agent_id = %(agent_id)s AND m.type = ANY(%(types)s::varchar[]) AND m.tags && %(tags)s::varchar[] AND m.session_id = %(f_session_id)s AND m.source = ANY(%(f_sources)s::varchar[]) AND m.source <> ALL(%(f_exclude_sources)s::varchar[]) AND m.session_id IS DISTINCT FROM %(f_exclude_session_id)s AND m.created_at >= %(f_created_from)s AND m.created_at < %(f_created_to)s AND m.pinned = %(f_pinned)s AND m.scope = %(f_scope)s AND m.decay_score < %(f_decay_below)s AND m.importance >= %(f_min_importance)s AND m.confidence >= %(f_min_confidence)s AND m.metadata @> %(f_metadata)s::jsonb AND (m.valid_from IS NULL OR m.valid_from <= %(f_valid_at)s) AND (m.valid_to IS NULL OR m.valid_to > %(f_valid_at)s) AND TRUE LIMIT %(cap)s),
            lexical_ranked AS MATERIALIZED (
                SELECT id, score, rank FROM (
                    SELECT m.id, bm25.score, row_number() OVER (
                        ORDER BY bm25.score DESC, m.created_at DESC, m.id
                    ) AS rank
                    FROM hits m
                    CROSS JOIN LATERAL (SELECT (coalesce(%(bm25_idf0)s::float8 * %(k1_plus_one)s::float8 / (1 + %(k1)s::float8 * (1 - %(b)s::float8 + %(b)s::float8 * length("m"."lexical_vector") / %(avgdl)s::float8) / nullif(round(1 / (1.64493406685 - 1.64493406685 * ts_rank('{1,1,1,1}'::float4[], "m"."lexical_vector", %(bm25_q0)s::tsquery)::float8) - 0.5), 0)), 0) + coalesce(%(bm25_idf1)s::float8 * %(k1_plus_one)s::float8 / (1 + %(k1)s::float8 * (1 - %(b)s::float8 + %(b)s::float8 * length("m"."lexical_vector") / %(avgdl)s::float8) / nullif(round(1 / (1.64493406685 - 1.64493406685 * ts_rank('{1,1,1,1}'::float4[], "m"."lexical_vector", %(bm25_q1)s::tsquery)::float8) - 0.5), 0)), 0)) AS score) AS bm25
                ) AS scored
                WHERE rank <= %(k)s
            ),
        pool AS (SELECT id FROM vector_ranked UNION SELECT id FROM lexical_ranked)
        SELECT m.id, v.rank, l.rank, greatest(coalesce(v.semantic, 1 - ("m"."embedding" <=> %(q)s::vector)), (SELECT max(1 - (p.embedding <=> %(q)s::vector)) FROM memory_passage p WHERE p.memory_id = "m"."id")), coalesce(l.score, (coalesce(%(bm25_idf0)s::float8 * %(k1_plus_one)s::float8 / (1 + %(k1)s::float8 * (1 - %(b)s::float8 + %(b)s::float8 * length("m"."lexical_vector") / %(avgdl)s::float8) / nullif(round(1 / (1.64493406685 - 1.64493406685 * ts_rank('{1,1,1,1}'::float4[], "m"."lexical_vector", %(bm25_q0)s::tsquery)::float8) - 0.5), 0)), 0) + coalesce(%(bm25_idf1)s::float8 * %(k1_plus_one)s::float8 / (1 + %(k1)s::float8 * (1 - %(b)s::float8 + %(b)s::float8 * length("m"."lexical_vector") / %(avgdl)s::float8) / nullif(round(1 / (1.64493406685 - 1.64493406685 * ts_rank('{1,1,1,1}'::float4[], "m"."lexical_vector", %(bm25_q1)s::tsquery)::float8) - 0.5), 0)), 0))),
               m.updated_at, m.importance, m.access_count, m.occurred_at,
               octet_length(m.content), false
        FROM pool JOIN memory m ON m.id = pool.id
        LEFT JOIN vector_ranked v ON v.id = m.id
        LEFT JOIN lexical_ranked l ON l.id = m.id
    
