"""Two memories of one user, agent and type may have the same text when one of them is
superseded: a user who changes their mind back ("I prefer aisle seats", then "I do not
prefer aisle seats", then "I prefer aisle seats" again) restates a superseded text, and
the restatement is a new current memory beside the old one, which keeps the interval it
held. Among current memories the text stays unique (the backstop of concurrent adds)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("memory_app", "0009_fact_memories_subject_read_from_content"),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name="memory",
            name="memory_content_unique",
        ),
        migrations.AddConstraint(
            model_name="memory",
            constraint=models.UniqueConstraint(
                condition=models.Q(("superseded_by__isnull", True)),
                fields=("tenant", "user_id", "agent_id", "type", "content_hash"),
                name="memory_current_content_unique",
            ),
        ),
    ]
