"""A step's turn and session may be null: an erased user's steps keep their spend
without them. The foreign keys stay as they are: dropping NOT NULL on the partitioned
table is a catalogue change, where Django's AlterField would also drop and re-validate
both foreign keys over every partition."""

import django.db.models.deletion
from django.db import migrations, models

DROP_NOT_NULL = (
    "ALTER TABLE turn_step ALTER COLUMN turn_id DROP NOT NULL, "
    "ALTER COLUMN session_id DROP NOT NULL"
)
SET_NOT_NULL = (
    "ALTER TABLE turn_step ALTER COLUMN turn_id SET NOT NULL, ALTER COLUMN session_id SET NOT NULL"
)


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0004_spend_budget_model_keys"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunSQL(DROP_NOT_NULL, SET_NOT_NULL)],
            state_operations=[
                migrations.AlterField(
                    model_name="turnstep",
                    name="turn",
                    field=models.ForeignKey(
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="steps",
                        to="sessions_app.chatturn",
                    ),
                ),
                migrations.AlterField(
                    model_name="turnstep",
                    name="session",
                    field=models.ForeignKey(
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="sessions_app.chatsession",
                    ),
                ),
                migrations.AlterField(
                    model_name="turnstep",
                    name="user_id",
                    field=models.CharField(
                        help_text='"" on the steps of an erased user.', max_length=255
                    ),
                ),
            ],
        ),
    ]
