
    SELECT m.id, coalesce(m.valid_from, m.occurred_at, m.created_at), m.valid_from >= %(end)s::timestamptz FROM memory m
    WHERE m.id = ANY(%(ids)s::uuid[])
      AND ((%(start)s::timestamptz IS NULL OR coalesce(m.valid_from, m.occurred_at, m.created_at) >= %(start)s::timestamptz)
           AND (%(reach)s::timestamptz IS NULL OR coalesce(m.valid_from, m.occurred_at, m.created_at) < %(reach)s::timestamptz)
           OR m.valid_from >= %(end)s::timestamptz)

