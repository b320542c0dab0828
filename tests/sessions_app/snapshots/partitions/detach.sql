ALTER TABLE "turn_step" DETACH PARTITION "turn_step_p2026_01"
