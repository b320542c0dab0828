SELECT EXISTS (SELECT 1 FROM "turn_step_default" WHERE created_at >= %s AND created_at < %s)
