SELECT b.*
FROM "spend_budget" AS b
WHERE b.tenant_id = %(tenant)s AND (b.user_id = '' OR b.user_id = %(user)s) AND (b.agent_id = '' OR b.agent_id = %(agent)s) AND (b.model = '' OR b.model = %(model)s)
ORDER BY b.id
