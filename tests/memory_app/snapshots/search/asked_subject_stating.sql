SELECT m.id FROM memory m WHERE m.id = ANY(%(ids)s::uuid[]) AND m.subject = %(subject)s
