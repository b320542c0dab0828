SET LOCAL hnsw.iterative_scan = relaxed_order; SET LOCAL hnsw.ef_search = 200; 
        WITH 
            nearest AS MATERIALIZED (SELECT n.id, n.distance, 1 - ("n"."embedding" <=> %(q)s::vector) AS semantic FROM (SELECT * FROM ((SELECT m.id, m.embedding::halfvec(384) <=> %(q)s::halfvec(384) AS distance, m.embedding FROM memory m WHERE m.tenant_id = %(tenant)s AND "m"."scope" = 'public' ORDER BY m.embedding::halfvec(384) <=> %(q)s::halfvec(384) LIMIT %(k)s) UNION ALL (SELECT m.id, m.embedding::halfvec(384) <=> %(q)s::halfvec(384) AS distance, m.embedding FROM memory m WHERE m.tenant_id = %(tenant)s AND ("m"."user_id" = %(acting_user)s AND "m"."scope" <> 'public') AND m.user_id BETWEEN (SELECT %(owner)s) AND (SELECT %(owner)s) ORDER BY m.embedding::halfvec(384) <=> %(q)s::halfvec(384) LIMIT %(k)s) UNION ALL (SELECT m.id, m.embedding::halfvec(384) <=> %(q)s::halfvec(384) AS distance, m.embedding FROM memory m WHERE m.tenant_id = %(tenant)s AND ("m"."scope" = 'shared' AND "m"."user_id" IS DISTINCT FROM %(acting_user)s AND ("m"."allowed_users" @> ARRAY[%(acting_user)s]::varchar[] OR "m"."allowed_roles" && %(acting_roles)s::varchar[])) ORDER BY m.embedding::halfvec(384) <=> %(q)s::halfvec(384) LIMIT %(k)s)) AS branches ORDER BY distance LIMIT %(k)s) AS n),
            vector_ranked AS MATERIALIZED (
                SELECT id, semantic, row_number() OVER (ORDER BY distance) AS rank
                FROM nearest
            ), 
            lexical_ranked AS (
                SELECT NULL::uuid AS id, NULL::float8 AS score, NULL::bigint AS rank WHERE false
            ),
        pool AS (SELECT id FROM vector_ranked UNION SELECT id FROM lexical_ranked)
        SELECT m.id, v.rank, l.rank, greatest(coalesce(v.semantic, 1 - ("m"."embedding" <=> %(q)s::vector)), (SELECT max(1 - (p.embedding <=> %(q)s::vector)) FROM memory_passage p WHERE p.memory_id = "m"."id")), coalesce(l.score, 0::float8),
               m.updated_at, m.importance, m.access_count, m.occurred_at,
               octet_length(m.content), false
        FROM pool JOIN memory m ON m.id = pool.id
        LEFT JOIN vector_ranked v ON v.id = m.id
        LEFT JOIN lexical_ranked l ON l.id = m.id
    
