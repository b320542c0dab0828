"""Period spend in up to 16 rows per budget and period (`shard`), so concurrent turns under
the same budgets add to different rows instead of waiting for each other's commit."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0002_turn_step_monthly_partitions"),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name="budgetspend",
            name="budget_spend_one_per_period",
        ),
        migrations.AddField(
            model_name="budgetspend",
            name="shard",
            field=models.SmallIntegerField(default=0),
        ),
        migrations.AddConstraint(
            model_name="budgetspend",
            constraint=models.UniqueConstraint(
                fields=("budget", "period_start", "shard"), name="budget_spend_one_per_shard"
            ),
        ),
        migrations.AddConstraint(
            model_name="budgetspend",
            constraint=models.CheckConstraint(
                condition=models.Q(("shard__gte", 0), ("shard__lt", 16)),
                name="budget_spend_shard_in_range",
            ),
        ),
    ]
