WITH applying AS MATERIALIZED (SELECT b.*
FROM "spend_budget" AS b
WHERE b.tenant_id = %(tenant)s AND (b.user_id = '' OR b.user_id = %(user)s) AND (b.agent_id = '' OR b.agent_id = %(agent)s) AND (b.model = '' OR b.model = %(model)s)), locked AS (SELECT l.id
FROM "spend_budget" AS l
WHERE l.id IN (SELECT a.id
FROM applying AS a
WHERE a.action = 'refuse')
ORDER BY l.id FOR NO KEY UPDATE)
SELECT applying.*
FROM applying
WHERE (SELECT count(*)
FROM locked) >= 0
ORDER BY applying.id
