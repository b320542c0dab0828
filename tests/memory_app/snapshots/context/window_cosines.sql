SELECT hit.id, max(1 - (n.embedding <=> %(q)s::vector))
FROM unnest(%(ids)s::uuid[], %(keys)s::varchar[], %(orders)s::bigint[])
    AS hit(id, thread_key, thread_order)
JOIN "memory" n
  ON n.tenant_id = %(tenant)s AND n.user_id = %(user)s
 AND n.thread_key = hit.thread_key
 AND n.thread_order BETWEEN hit.thread_order - %(before)s AND hit.thread_order + %(after)s
GROUP BY hit.id
