
    SELECT id, superseded_by_id FROM memory
    WHERE id = ANY(%(ids)s::uuid[])
      AND (superseded_by_id IS NOT NULL
           OR valid_to <= %(now)s::timestamptz
           OR valid_from > %(now)s::timestamptz)

