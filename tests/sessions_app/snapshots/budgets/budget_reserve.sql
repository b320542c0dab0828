DO $prepare$BEGIN IF NOT EXISTS (SELECT
FROM pg_prepared_statements
WHERE name = 'engram_budget_reserve_90357ef63a38') THEN EXECUTE $statement$PREPARE engram_budget_reserve_90357ef63a38(bigint, text, text, text, timestamptz, uuid, uuid, bigint, numeric, numeric, timestamptz, boolean) AS WITH f AS (SELECT b.id, p.period_start, p.period_end, coalesce(s.tokens, 0) AS spent_tokens, coalesce(s.cost_usd, 0) AS spent_usd, coalesce(h.n, 0) AS held_count, coalesce(h.tokens, 0) AS held_tokens, coalesce(h.usd, 0) AS held_usd, h.until AS held_until, "b"."tenant_id", "b"."name", "b"."scope", "b"."user_id", "b"."agent_id", "b"."model", "b"."period", "b"."time_zone", "b"."limit_tokens", "b"."limit_usd", "b"."action", "b"."alert_thresholds", "b"."created_at", "b"."updated_at"
FROM "spend_budget" AS b
CROSS JOIN LATERAL (SELECT (CASE WHEN b.period = 'none' THEN '1970-01-01T00:00:00Z'::timestamptz ELSE date_trunc(b.period, $5::timestamptz, b.time_zone) END) AS period_start, (CASE WHEN b.period = 'none' THEN NULL ELSE (date_trunc(b.period, $5::timestamptz, b.time_zone) AT TIME ZONE b.time_zone + ('1 ' || b.period)::interval) AT TIME ZONE b.time_zone END) AS period_end) AS p
LEFT JOIN LATERAL (SELECT sum(t.tokens) AS tokens, sum(t.cost_usd) AS cost_usd
FROM "budget_spend" AS t
WHERE t.budget_id = b.id AND t.period_start = p.period_start) AS s ON true
LEFT JOIN LATERAL (SELECT count(*) AS n, sum(r.tokens) AS tokens, sum(r.cost_usd) AS usd, min(r.expires_at) AS until
FROM "budget_reservation" AS r
WHERE r.budget_ids @> ARRAY[b.id] AND r.expires_at > $5) AS h ON true
WHERE b.tenant_id = $1 AND (b.user_id = '' OR b.user_id = $2) AND (b.agent_id = '' OR b.agent_id = $3) AND (b.model = '' OR b.model = $4)
ORDER BY b.id), r AS (SELECT coalesce(array_agg(f.id
ORDER BY f.id), '{}'::uuid[]) AS ids, coalesce($9::numeric, CASE WHEN bool_or(f.limit_usd IS NOT NULL) THEN $10::numeric END) AS usd
FROM f
WHERE f.action = 'refuse'), ins AS (INSERT INTO "budget_reservation" (id, session_id, tokens, cost_usd, budget_ids, created_at, expires_at)
SELECT $6, $7, $8, r.usd, r.ids, $5, $11
FROM r
WHERE $12 AND cardinality(r.ids) > 0 AND NOT EXISTS (SELECT
FROM f
WHERE f.action = 'refuse' AND NOT ((f.limit_tokens IS NULL OR (f.spent_tokens + f.held_tokens < f.limit_tokens AND f.spent_tokens + f.held_tokens + $8 <= f.limit_tokens)) AND (f.limit_usd IS NULL OR (f.spent_usd + f.held_usd < f.limit_usd AND f.spent_usd + f.held_usd + coalesce(r.usd, 0) <= f.limit_usd))))
RETURNING id)
SELECT f.*, (SELECT count(*)
FROM ins)
FROM f
ORDER BY f.id$statement$; END IF; END$prepare$; SET LOCAL synchronous_commit TO off;
SELECT b.id
FROM "spend_budget" AS b
WHERE b.tenant_id = %(tenant)s AND (b.user_id = '' OR b.user_id = %(user)s) AND (b.agent_id = '' OR b.agent_id = %(agent)s) AND (b.model = '' OR b.model = %(model)s) AND b.action = 'refuse'
ORDER BY b.id FOR NO KEY UPDATE; EXECUTE "engram_budget_reserve_90357ef63a38"(%(tenant)s, %(user)s, %(agent)s, %(model)s, %(at)s, %(id)s, %(session)s, %(tokens)s, %(usd)s, %(usd_estimate)s, %(expires)s, %(session_ok)s)
