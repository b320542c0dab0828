SET LOCAL synchronous_commit TO off;
SELECT l.id
FROM "spend_budget" AS l
WHERE l.id = ANY(%(refusing)s::uuid[])
ORDER BY l.id FOR NO KEY UPDATE; WITH f AS (SELECT b.id, p.period_start, p.period_end, coalesce(s.tokens, 0) AS spent_tokens, coalesce(s.cost_usd, 0) AS spent_usd, coalesce(h.n, 0) AS held_count, coalesce(h.tokens, 0) AS held_tokens, coalesce(h.usd, 0) AS held_usd
FROM "spend_budget" AS b
CROSS JOIN LATERAL (SELECT (CASE WHEN b.period = 'none' THEN '1970-01-01T00:00:00Z'::timestamptz ELSE date_trunc(b.period, %(at)s::timestamptz, b.time_zone) END) AS period_start, (CASE WHEN b.period = 'none' THEN NULL ELSE (date_trunc(b.period, %(at)s::timestamptz, b.time_zone) AT TIME ZONE b.time_zone + ('1 ' || b.period)::interval) AT TIME ZONE b.time_zone END) AS period_end) AS p
LEFT JOIN LATERAL (SELECT sum(t.tokens) AS tokens, sum(t.cost_usd) AS cost_usd
FROM "budget_spend" AS t
WHERE t.budget_id = b.id AND t.period_start = p.period_start) AS s ON true
LEFT JOIN LATERAL (SELECT count(*) AS n, sum(r.tokens) AS tokens, sum(r.cost_usd) AS usd
FROM "budget_reservation" AS r
WHERE r.budget_ids @> ARRAY[b.id] AND r.expires_at > %(at)s) AS h ON true
WHERE b.id = ANY(%(ids)s)
ORDER BY b.id), ins AS (INSERT INTO "budget_reservation" (id, session_id, tokens, cost_usd, budget_ids, created_at, expires_at)
SELECT %(id)s, %(session)s, %(tokens)s, %(usd)s, %(refusing)s::uuid[], %(at)s, %(expires)s
WHERE %(session_ok)s AND NOT EXISTS (SELECT
FROM f
JOIN "spend_budget" AS b ON b.id = f.id
WHERE b.action = 'refuse' AND NOT ((b.limit_tokens IS NULL OR (f.spent_tokens + f.held_tokens < b.limit_tokens AND f.spent_tokens + f.held_tokens + %(tokens)s <= b.limit_tokens)) AND (b.limit_usd IS NULL OR (f.spent_usd + f.held_usd < b.limit_usd AND f.spent_usd + f.held_usd + coalesce(%(usd)s::numeric, 0) <= b.limit_usd))))
RETURNING id)
SELECT f.*, (SELECT count(*)
FROM ins)
FROM f
ORDER BY f.id
