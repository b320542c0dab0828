
    SELECT id, occurred_at FROM memory
    WHERE id = ANY(%(ids)s::uuid[]) AND occurred_at IS NOT NULL
      AND (%(start)s::timestamptz IS NULL OR occurred_at >= %(start)s::timestamptz)
      AND (%(reach)s::timestamptz IS NULL OR occurred_at < %(reach)s::timestamptz)

