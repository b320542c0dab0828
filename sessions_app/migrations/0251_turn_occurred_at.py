import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("sessions_app", "0250_issue15_tenant_context_policies")]

    operations = [
        migrations.AddField(
            model_name="chatturn",
            name="occurred_at",
            field=models.DateTimeField(null=True),
        ),
        migrations.RunSQL(
            "UPDATE chat_turn SET occurred_at = created_at WHERE occurred_at IS NULL",
            migrations.RunSQL.noop,
        ),
        migrations.AlterField(
            model_name="chatturn",
            name="occurred_at",
            field=models.DateTimeField(
                default=django.utils.timezone.now,
                help_text="When the exchange happened: the caller's time for imported "
                "history, else when it was recorded. Recall and search order and label "
                "turns by it.",
            ),
        ),
    ]
