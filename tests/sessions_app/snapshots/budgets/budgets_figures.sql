SELECT b.id, p.period_start, p.period_end, coalesce(s.tokens, 0) AS spent_tokens, coalesce(s.cost_usd, 0) AS spent_usd, coalesce(h.n, 0) AS held_count, coalesce(h.tokens, 0) AS held_tokens, coalesce(h.usd, 0) AS held_usd, h.until AS held_until
FROM "spend_budget" AS b
CROSS JOIN LATERAL (SELECT (CASE WHEN b.period = 'none' THEN '1970-01-01T00:00:00Z'::timestamptz ELSE date_trunc(b.period, %(at)s::timestamptz, b.time_zone) END) AS period_start, (CASE WHEN b.period = 'none' THEN NULL ELSE (date_trunc(b.period, %(at)s::timestamptz, b.time_zone) AT TIME ZONE b.time_zone + ('1 ' || b.period)::interval) AT TIME ZONE b.time_zone END) AS period_end) AS p
LEFT JOIN LATERAL (SELECT sum(t.tokens) AS tokens, sum(t.cost_usd) AS cost_usd
FROM "budget_spend" AS t
WHERE t.budget_id = b.id AND t.period_start = p.period_start) AS s ON true
LEFT JOIN LATERAL (SELECT count(*) AS n, sum(r.tokens) AS tokens, sum(r.cost_usd) AS usd, min(r.expires_at) AS until
FROM "budget_reservation" AS r
WHERE r.budget_ids @> ARRAY[b.id] AND r.expires_at > %(at)s) AS h ON true
WHERE b.id = ANY(%(ids)s)
ORDER BY b.id
