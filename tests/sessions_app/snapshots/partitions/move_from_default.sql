WITH moved AS (DELETE FROM "turn_step_default" WHERE created_at >= %s AND created_at < %s RETURNING *) INSERT INTO "turn_step_p2026_01" SELECT * FROM moved
