
    SELECT m.id, m.superseded_by_id, m.user_id, m.subject, (m.valid_to <= %(first)s::timestamptz
           OR m.valid_from > %(last)s::timestamptz
           OR coalesce(successor.valid_from, successor.occurred_at, successor.created_at)
              <= %(first)s::timestamptz), coalesce(m.valid_from, m.occurred_at, m.created_at) FROM memory m
    LEFT JOIN memory successor ON successor.id = m.superseded_by_id
    WHERE m.id = ANY(%(ids)s::uuid[])

