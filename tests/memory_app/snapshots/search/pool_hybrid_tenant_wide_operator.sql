SET LOCAL hnsw.iterative_scan = relaxed_order; SET LOCAL hnsw.ef_search = 200; 
        WITH 
            nearest AS MATERIALIZED (SELECT n.id, n.distance, 1 - ("n"."embedding" <=> %(q)s::vector) AS semantic FROM (SELECT m.id, m.embedding::halfvec(384) <=> %(q)s::halfvec(384) AS distance, m.embedding FROM memory m WHERE m.tenant_id = %(tenant)s AND TRUE ORDER BY m.embedding::halfvec(384) <=> %(q)s::halfvec(384) LIMIT %(k)s) AS n),
            vector_ranked AS MATERIALIZED (
                SELECT id, semantic, row_number() OVER (ORDER BY distance) AS rank
                FROM nearest
            ), 
            hits AS MATERIALIZED (SELECT m.id, m.lexical_vector, m.created_at FROM memory m WHERE m.tenant_id = %(tenant)s AND TRUE AND m.lexical_vector @@ %(tsquery)s::tsquery LIMIT %(cap)s),
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
    
