DROP TABLE "turn_step_p2026_01"
