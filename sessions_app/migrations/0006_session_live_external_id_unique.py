"""One live session per (tenant, user, agent, external session id), as a partial unique
index. Live sessions that already share an id keep the newest one live and archive the
others, as rotation archives a superseded session: nothing is deleted (retention purges
expired sessions, never archived ones), their turns stay readable, and resume already
answered the newest one."""

from django.db import migrations, models

ARCHIVE_OLDER_DUPLICATES = """
UPDATE chat_session AS s SET status = 'archived', updated_at = now()
FROM (
    SELECT id, row_number() OVER (
        PARTITION BY tenant_id, user_id, agent_id, external_session_id
        ORDER BY created_at DESC, id DESC
    ) AS rank
    FROM chat_session
    WHERE external_session_id IS NOT NULL AND status IN ('opened', 'active', 'compacted')
) AS ranked
WHERE s.id = ranked.id AND ranked.rank > 1
"""


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0005_turn_step_turn_and_session_nullable"),
    ]

    operations = [
        migrations.RunSQL(ARCHIVE_OLDER_DUPLICATES, migrations.RunSQL.noop),
        migrations.AddConstraint(
            model_name="chatsession",
            constraint=models.UniqueConstraint(
                condition=models.Q(
                    ("external_session_id__isnull", False),
                    ("status__in", ["opened", "active", "compacted"]),
                ),
                fields=("tenant", "user_id", "agent_id", "external_session_id"),
                name="session_live_external_id_unique",
            ),
        ),
    ]
