SELECT max(id) FROM "turn_step_p2026_01"
