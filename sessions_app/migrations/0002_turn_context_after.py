from django.db import migrations, models


class Migration(migrations.Migration):
    """The snapshot is the context a turn left behind, not the one it found."""

    dependencies = [("sessions_app", "0001_initial")]

    operations = [
        migrations.RenameField("chatturn", "context_before", "context_after"),
        migrations.AlterField(
            model_name="chatturn",
            name="context_after",
            field=models.JSONField(
                blank=True,
                default=dict,
                help_text="Focus, last results, query and cart when this turn was recorded: "
                "what rolling back the next turn restores.",
            ),
        ),
    ]
