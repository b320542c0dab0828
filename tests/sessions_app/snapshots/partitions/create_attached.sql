CREATE TABLE "turn_step_p2026_01" PARTITION OF "turn_step" FOR VALUES FROM (%s) TO (%s)
