ALTER TABLE "turn_step_p2026_01" ADD CONSTRAINT month_bounds CHECK (created_at >= %s AND created_at < %s)
