SELECT DISTINCT date_trunc('month', created_at AT TIME ZONE 'UTC') FROM "turn_step_default" ORDER BY 1
