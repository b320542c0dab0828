"""Model prices, spend rollups, provider usage imports and budget alerts, as the models
declare them."""

import django.contrib.postgres.fields
import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("sessions_app", "0001_initial"),
    ]

    operations = [
        migrations.CreateModel(
            name="RollupFillState",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("name", models.CharField(help_text="e.g. spend:hour", max_length=32, unique=True)),
                ("last_step_id", models.BigIntegerField(default=0)),
                (
                    "filled_through",
                    models.DateTimeField(
                        blank=True, help_text="created_at of the last step counted.", null=True
                    ),
                ),
                ("updated_at", models.DateTimeField(auto_now=True)),
            ],
            options={
                "db_table": "rollup_fill_state",
                "ordering": ["name"],
            },
        ),
        migrations.CreateModel(
            name="ModelPrice",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "model",
                    models.CharField(help_text="Canonical model name, lower case.", max_length=200),
                ),
                ("provider", models.CharField(blank=True, default="", max_length=64)),
                (
                    "aliases",
                    django.contrib.postgres.fields.ArrayField(
                        base_field=models.CharField(max_length=200),
                        blank=True,
                        default=list,
                        help_text="Other exact names of this model (lower case), e.g. dated snapshots.",
                        size=None,
                    ),
                ),
                (
                    "pattern",
                    models.CharField(
                        blank=True,
                        default="",
                        help_text="Regular expression searched (case-insensitively) in a step's model name.",
                        max_length=1000,
                    ),
                ),
                (
                    "input_per_million",
                    models.DecimalField(
                        decimal_places=6,
                        help_text="USD per million uncached input tokens.",
                        max_digits=14,
                    ),
                ),
                (
                    "cached_input_per_million",
                    models.DecimalField(
                        blank=True,
                        decimal_places=6,
                        help_text="USD per million cache-read tokens; null: input price.",
                        max_digits=14,
                        null=True,
                    ),
                ),
                (
                    "cache_write_per_million",
                    models.DecimalField(
                        blank=True,
                        decimal_places=6,
                        help_text="USD per million cache-write tokens; null: input price.",
                        max_digits=14,
                        null=True,
                    ),
                ),
                (
                    "output_per_million",
                    models.DecimalField(
                        decimal_places=6, help_text="USD per million output tokens.", max_digits=14
                    ),
                ),
                (
                    "context_window",
                    models.IntegerField(
                        blank=True,
                        help_text="The model's context window in tokens; compaction thresholds can be a share of it. Null: unknown.",
                        null=True,
                    ),
                ),
                (
                    "valid_from",
                    models.DateTimeField(help_text="The price applies to steps from this time on."),
                ),
                (
                    "source",
                    models.CharField(
                        help_text="Where the price comes from: 'genai-prices 0.2.3', 'admin'…",
                        max_length=200,
                    ),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("updated_at", models.DateTimeField(auto_now=True)),
            ],
            options={
                "db_table": "model_price",
                "ordering": ["model", "-valid_from"],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("model", "valid_from"), name="model_price_unique"
                    ),
                    models.CheckConstraint(
                        condition=models.Q(
                            ("input_per_million__gte", 0), ("output_per_million__gte", 0)
                        ),
                        name="model_price_non_negative",
                    ),
                ],
            },
        ),
        migrations.CreateModel(
            name="BudgetAlert",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("budget_id", models.UUIDField()),
                ("period_start", models.DateTimeField()),
                (
                    "threshold",
                    models.IntegerField(help_text="Percent of the budget's tighter limit."),
                ),
                ("payload", models.JSONField(help_text="The body sent to the webhook.")),
                (
                    "status",
                    models.CharField(
                        choices=[
                            ("pending", "pending"),
                            ("delivered", "delivered"),
                            ("failed", "failed (retries spent)"),
                            ("not_configured", "no webhook configured"),
                        ],
                        default="pending",
                        max_length=16,
                    ),
                ),
                ("attempts", models.IntegerField(default=0)),
                ("last_error", models.TextField(blank=True, default="")),
                ("delivered_at", models.DateTimeField(blank=True, null=True)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                (
                    "tenant",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="sessions_app.tenant",
                    ),
                ),
            ],
            options={
                "db_table": "budget_alert",
                "ordering": ["-created_at"],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("budget_id", "period_start", "threshold"), name="budget_alert_once"
                    )
                ],
            },
        ),
        migrations.CreateModel(
            name="ProviderUsage",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("provider", models.CharField(max_length=32)),
                ("day", models.DateField()),
                (
                    "model",
                    models.CharField(
                        help_text="Without a release date, lower case.", max_length=200
                    ),
                ),
                ("input_tokens", models.BigIntegerField(null=True)),
                ("output_tokens", models.BigIntegerField(null=True)),
                ("cached_tokens", models.BigIntegerField(null=True)),
                ("cache_write_tokens", models.BigIntegerField(null=True)),
                ("requests", models.BigIntegerField(null=True)),
                ("cost_usd", models.DecimalField(decimal_places=10, max_digits=20, null=True)),
                ("imported_at", models.DateTimeField()),
                (
                    "tenant",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="sessions_app.tenant",
                    ),
                ),
            ],
            options={
                "db_table": "provider_usage",
                "constraints": [
                    models.UniqueConstraint(
                        fields=("tenant", "provider", "day", "model"),
                        name="provider_usage_one_per_day",
                    )
                ],
            },
        ),
        migrations.CreateModel(
            name="RunawayAlert",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "episode",
                    models.DateTimeField(help_text="The session's runaway_at for this episode."),
                ),
                ("reason", models.CharField(max_length=64)),
                ("payload", models.JSONField(help_text="The body sent to the webhook.")),
                (
                    "status",
                    models.CharField(
                        choices=[
                            ("pending", "pending"),
                            ("delivered", "delivered"),
                            ("failed", "failed (retries spent)"),
                            ("not_configured", "no webhook configured"),
                        ],
                        default="pending",
                        max_length=16,
                    ),
                ),
                ("attempts", models.IntegerField(default=0)),
                ("last_error", models.TextField(blank=True, default="")),
                ("delivered_at", models.DateTimeField(blank=True, null=True)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                (
                    "session",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="sessions_app.chatsession",
                    ),
                ),
                (
                    "tenant",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="sessions_app.tenant",
                    ),
                ),
            ],
            options={
                "db_table": "runaway_alert",
                "ordering": ["-created_at"],
                "indexes": [
                    models.Index(fields=["status", "created_at"], name="runaway_alert_status")
                ],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("session", "episode"), name="runaway_alert_episode"
                    )
                ],
            },
        ),
        migrations.CreateModel(
            name="SpendRollup",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("input_tokens", models.BigIntegerField(default=0)),
                ("output_tokens", models.BigIntegerField(default=0)),
                ("cached_tokens", models.BigIntegerField(default=0)),
                ("cache_write_tokens", models.BigIntegerField(default=0)),
                ("reasoning_tokens", models.BigIntegerField(default=0)),
                (
                    "cost_usd",
                    models.DecimalField(
                        decimal_places=10,
                        default=0,
                        help_text="Sum of the priced steps' cost; unpriced add 0.",
                        max_digits=20,
                    ),
                ),
                ("calls", models.BigIntegerField(default=0)),
                (
                    "errors",
                    models.BigIntegerField(default=0, help_text="Steps with success = false."),
                ),
                (
                    "unpriced_calls",
                    models.BigIntegerField(
                        default=0,
                        help_text="Steps without a price: unknown model or price_missing.",
                    ),
                ),
                (
                    "zero_cost_calls",
                    models.BigIntegerField(
                        default=0, help_text="Steps priced at exactly 0 although they used tokens."
                    ),
                ),
                (
                    "negative_cost_calls",
                    models.BigIntegerField(
                        default=0,
                        help_text="Steps with a negative cost (a pricing bug, or a refund).",
                    ),
                ),
                (
                    "granularity",
                    models.CharField(choices=[("hour", "hour"), ("day", "day")], max_length=8),
                ),
                ("bucket_start", models.DateTimeField(help_text="Start of the hour or UTC day.")),
                ("model", models.CharField(blank=True, default="", max_length=200)),
                ("agent_id", models.CharField(max_length=255)),
                ("step_type", models.CharField(max_length=64)),
                (
                    "tenant",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="sessions_app.tenant",
                    ),
                ),
            ],
            options={
                "db_table": "spend_rollup",
                "ordering": ["-bucket_start"],
                "indexes": [
                    models.Index(fields=["granularity", "bucket_start"], name="spend_rollup_bucket")
                ],
                "constraints": [
                    models.UniqueConstraint(
                        fields=(
                            "tenant",
                            "granularity",
                            "bucket_start",
                            "model",
                            "agent_id",
                            "step_type",
                        ),
                        name="spend_rollup_key",
                    )
                ],
            },
        ),
        migrations.CreateModel(
            name="UserSpendRollup",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("input_tokens", models.BigIntegerField(default=0)),
                ("output_tokens", models.BigIntegerField(default=0)),
                ("cached_tokens", models.BigIntegerField(default=0)),
                ("cache_write_tokens", models.BigIntegerField(default=0)),
                ("reasoning_tokens", models.BigIntegerField(default=0)),
                (
                    "cost_usd",
                    models.DecimalField(
                        decimal_places=10,
                        default=0,
                        help_text="Sum of the priced steps' cost; unpriced add 0.",
                        max_digits=20,
                    ),
                ),
                ("calls", models.BigIntegerField(default=0)),
                (
                    "errors",
                    models.BigIntegerField(default=0, help_text="Steps with success = false."),
                ),
                (
                    "unpriced_calls",
                    models.BigIntegerField(
                        default=0,
                        help_text="Steps without a price: unknown model or price_missing.",
                    ),
                ),
                (
                    "zero_cost_calls",
                    models.BigIntegerField(
                        default=0, help_text="Steps priced at exactly 0 although they used tokens."
                    ),
                ),
                (
                    "negative_cost_calls",
                    models.BigIntegerField(
                        default=0,
                        help_text="Steps with a negative cost (a pricing bug, or a refund).",
                    ),
                ),
                ("bucket_start", models.DateTimeField(help_text="Start of the UTC day.")),
                ("user_id", models.CharField(max_length=255)),
                (
                    "tenant",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="sessions_app.tenant",
                    ),
                ),
            ],
            options={
                "db_table": "user_spend_rollup",
                "ordering": ["-bucket_start"],
                "indexes": [models.Index(fields=["bucket_start"], name="user_spend_rollup_bucket")],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("tenant", "bucket_start", "user_id"), name="user_spend_rollup_key"
                    )
                ],
            },
        ),
    ]
