INSERT INTO "budget_spend" AS t (budget_id, period_start, shard, tokens, cost_usd, alerted, updated_at) VALUES (%(budget)s, %(start)s, 0, 0, 0, %(threshold)s, %(at)s)
ON CONFLICT (budget_id, period_start, shard) DO UPDATE SET alerted = EXCLUDED.alerted
WHERE t.alerted < EXCLUDED.alerted
RETURNING t.budget_id
