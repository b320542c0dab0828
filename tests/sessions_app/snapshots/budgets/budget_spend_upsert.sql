WITH up AS (INSERT INTO "budget_spend" (budget_id, period_start, shard, tokens, cost_usd, alerted, updated_at)
SELECT b.id, (CASE WHEN b.period = 'none' THEN '1970-01-01T00:00:00Z'::timestamptz ELSE date_trunc(b.period, %(at)s::timestamptz, b.time_zone) END), (pg_backend_pid() %% 16), sum(s.tokens), sum(s.cost), 0, %(at)s
FROM "spend_budget" AS b
JOIN unnest(%(users)s::text[], %(agents)s::text[], %(models)s::text[], %(tokens)s::bigint[], %(costs)s::numeric[]) AS s(user_id, agent_id, model, tokens, cost) ON (b.user_id = '' OR b.user_id = s.user_id) AND (b.agent_id = '' OR b.agent_id = s.agent_id) AND (b.model = '' OR b.model = s.model)
WHERE b.tenant_id = %(tenant)s
GROUP BY 1, 2
ORDER BY 1, 2
ON CONFLICT (budget_id, period_start, shard) DO UPDATE SET tokens = "budget_spend".tokens + EXCLUDED.tokens, cost_usd = "budget_spend".cost_usd + EXCLUDED.cost_usd, updated_at = EXCLUDED.updated_at
RETURNING budget_id, period_start, shard, tokens, cost_usd, alerted)
SELECT up.budget_id, up.period_start, up.tokens + coalesce(o.tokens, 0), up.cost_usd + coalesce(o.cost_usd, 0), greatest(up.alerted, coalesce(o.alerted, 0)), b.limit_tokens, b.limit_usd, b.alert_thresholds, b.scope, b.name, b.period, b.action, b.user_id, b.agent_id, b.model
FROM up
JOIN "spend_budget" AS b ON b.id = up.budget_id
LEFT JOIN LATERAL (SELECT sum(t.tokens) AS tokens, sum(t.cost_usd) AS cost_usd, max(t.alerted) AS alerted
FROM "budget_spend" AS t
WHERE t.budget_id = up.budget_id AND t.period_start = up.period_start AND t.shard <> up.shard) AS o ON true
