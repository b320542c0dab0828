WITH batch AS (
    SELECT id FROM memory
    WHERE (%s::uuid IS NULL OR id > %s::uuid)
      AND (%s::uuid[] IS NULL OR id = ANY(%s::uuid[]))
    ORDER BY id LIMIT %s
)
UPDATE memory m SET decay_score = power(
    0.5,
    greatest(0, extract(epoch FROM (%s - m.last_accessed_at)) / 86400.0)
    / ((CASE type WHEN %s THEN %s WHEN %s THEN %s WHEN %s THEN %s WHEN %s THEN %s WHEN %s THEN %s WHEN %s THEN %s WHEN %s THEN %s ELSE 180.0 END) * (1 + 2 * m.importance) * (1 + ln(1 + m.access_count)))
)
FROM batch WHERE m.id = batch.id
RETURNING m.id, m.decay_score, m.pinned
