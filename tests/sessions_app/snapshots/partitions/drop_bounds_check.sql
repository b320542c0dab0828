ALTER TABLE "turn_step_p2026_01" DROP CONSTRAINT month_bounds
