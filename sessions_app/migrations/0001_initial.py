"""Sessions, turns, steps' state, tenants, API keys, budgets and the outbox, as the models
declare them (`turn_step` is created partitioned in 0002)."""

import uuid

import django.contrib.postgres.fields
import django.contrib.postgres.indexes
import django.core.validators
import django.db.models.constraints
import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models

import sessions_app.models.spend_budgets


class Migration(migrations.Migration):
    initial = True

    dependencies = []

    operations = [
        migrations.CreateModel(
            name="OutboxMessage",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("task_name", models.CharField(max_length=200)),
                ("args", models.JSONField(default=list)),
                ("kwargs", models.JSONField(default=dict)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("attempts", models.PositiveIntegerField(default=0)),
                ("last_error", models.TextField(blank=True, default="")),
            ],
            options={
                "verbose_name": "outbox message",
                "db_table": "outbox_message",
            },
        ),
        migrations.CreateModel(
            name="Tenant",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("name", models.CharField(max_length=100, unique=True)),
                (
                    "default_budget_tokens",
                    models.BigIntegerField(
                        blank=True, help_text="Budget in tokens given to new sessions.", null=True
                    ),
                ),
                (
                    "default_budget_usd",
                    models.DecimalField(
                        blank=True,
                        decimal_places=10,
                        help_text="Budget in USD given to new sessions.",
                        max_digits=20,
                        null=True,
                    ),
                ),
                (
                    "capture_prompts",
                    models.BooleanField(
                        db_default=False,
                        default=False,
                        help_text="Keep each step's prompt and completion (size-capped) for its sessions, unless a session says otherwise.",
                    ),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True)),
            ],
            options={
                "db_table": "tenant",
                "ordering": ["name"],
            },
        ),
        migrations.CreateModel(
            name="ChatSession",
            fields=[
                (
                    "id",
                    models.UUIDField(
                        default=uuid.uuid4, editable=False, primary_key=True, serialize=False
                    ),
                ),
                ("user_id", models.CharField(max_length=255)),
                ("agent_id", models.CharField(max_length=255)),
                (
                    "status",
                    models.CharField(
                        choices=[
                            ("opened", "opened"),
                            ("active", "active"),
                            ("compacted", "compacted"),
                            ("archived", "archived"),
                            ("expired", "expired"),
                        ],
                        default="opened",
                        max_length=16,
                    ),
                ),
                ("state", models.JSONField(blank=True, default=dict)),
                ("metadata", models.JSONField(blank=True, default=dict)),
                ("external_session_id", models.CharField(blank=True, max_length=255, null=True)),
                (
                    "provider",
                    models.CharField(
                        blank=True,
                        db_default="",
                        default="",
                        help_text="The LLM provider behind the agent (claude, ollama…); picks the default TTL.",
                        max_length=64,
                    ),
                ),
                ("focus_mpn", models.CharField(blank=True, max_length=255, null=True)),
                ("last_query", models.TextField(blank=True, null=True)),
                ("last_filters", models.JSONField(blank=True, null=True)),
                (
                    "query_history",
                    models.JSONField(
                        blank=True,
                        default=list,
                        help_text="The last queries with their filters, newest last.",
                    ),
                ),
                (
                    "last_results",
                    models.JSONField(
                        blank=True,
                        default=list,
                        help_text="MPNs of the last stored results, in order.",
                    ),
                ),
                ("turn_count", models.IntegerField(default=0)),
                ("last_turn_number", models.IntegerField(default=0)),
                ("total_input_tokens", models.BigIntegerField(default=0)),
                ("total_output_tokens", models.BigIntegerField(default=0)),
                ("total_cached_tokens", models.BigIntegerField(default=0)),
                ("total_reasoning_tokens", models.BigIntegerField(default=0)),
                (
                    "total_cost_usd",
                    models.DecimalField(decimal_places=10, default=0, max_digits=20),
                ),
                ("total_calls", models.IntegerField(default=0)),
                ("total_errors", models.IntegerField(default=0)),
                ("unpriced_calls", models.IntegerField(default=0)),
                ("total_duration_ms", models.BigIntegerField(default=0)),
                ("budget_tokens", models.BigIntegerField(blank=True, null=True)),
                (
                    "budget_usd",
                    models.DecimalField(blank=True, decimal_places=10, max_digits=20, null=True),
                ),
                ("budget_exceeded_at", models.DateTimeField(blank=True, null=True)),
                ("runaway_at", models.DateTimeField(blank=True, null=True)),
                ("runaway_reason", models.CharField(blank=True, default="", max_length=64)),
                ("runaway_detail", models.JSONField(blank=True, default=dict)),
                ("runaway_blocked", models.BooleanField(default=False)),
                ("compact_max_turns", models.IntegerField(blank=True, null=True)),
                ("compact_max_tokens", models.IntegerField(blank=True, null=True)),
                ("compact_keep_last_turns", models.IntegerField(blank=True, null=True)),
                (
                    "compact_context_share",
                    models.FloatField(
                        blank=True,
                        help_text="Compact when the open window passes this share of the model's context window; null means the settings' default.",
                        null=True,
                    ),
                ),
                (
                    "model",
                    models.CharField(
                        blank=True,
                        db_default="",
                        default="",
                        help_text="The model the agent calls; blank: the model of its latest step.",
                        max_length=200,
                    ),
                ),
                ("rotate_after_tokens", models.BigIntegerField(blank=True, null=True)),
                (
                    "capture_prompts",
                    models.BooleanField(
                        blank=True,
                        help_text="Keep each step's prompt and completion; null: the tenant's choice.",
                        null=True,
                    ),
                ),
                (
                    "context_policy",
                    models.CharField(
                        db_default="default",
                        default="default",
                        help_text="The named context policy `GET …/context` uses unless asked for another.",
                        max_length=64,
                    ),
                ),
                (
                    "cart_link_generation",
                    models.IntegerField(
                        db_default=0,
                        default=0,
                        help_text="Signed into every cart link; revoking the links increments it.",
                    ),
                ),
                ("ttl_seconds", models.IntegerField()),
                ("expires_at", models.DateTimeField()),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("updated_at", models.DateTimeField(auto_now=True)),
                ("last_active_at", models.DateTimeField()),
                (
                    "previous_session",
                    models.ForeignKey(
                        blank=True,
                        help_text="The session this one continues after a rotation.",
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="successors",
                        to="sessions_app.chatsession",
                    ),
                ),
                (
                    "tenant",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="sessions",
                        to="sessions_app.tenant",
                    ),
                ),
            ],
            options={
                "db_table": "chat_session",
                "ordering": ["-created_at"],
            },
        ),
        migrations.CreateModel(
            name="SpendBudget",
            fields=[
                (
                    "id",
                    models.UUIDField(
                        default=uuid.uuid4, editable=False, primary_key=True, serialize=False
                    ),
                ),
                ("name", models.CharField(blank=True, default="", max_length=200)),
                (
                    "scope",
                    models.CharField(
                        choices=[
                            ("tenant", "every session of the tenant"),
                            ("user", "one end user"),
                            ("agent", "one agent"),
                            ("model", "one model"),
                            ("user_agent", "one user with one agent"),
                        ],
                        max_length=16,
                    ),
                ),
                ("user_id", models.CharField(blank=True, default="", max_length=255)),
                ("agent_id", models.CharField(blank=True, default="", max_length=255)),
                ("model", models.CharField(blank=True, default="", max_length=255)),
                (
                    "period",
                    models.CharField(
                        choices=[
                            ("day", "calendar day"),
                            ("week", "ISO week, from Monday"),
                            ("month", "calendar month"),
                            ("none", "no period: a lifetime limit"),
                        ],
                        max_length=8,
                    ),
                ),
                ("time_zone", models.CharField(default="UTC", max_length=64)),
                ("limit_tokens", models.BigIntegerField(blank=True, null=True)),
                (
                    "limit_usd",
                    models.DecimalField(blank=True, decimal_places=10, max_digits=20, null=True),
                ),
                (
                    "action",
                    models.CharField(
                        choices=[
                            ("refuse", "refuse with 429 until the period ends"),
                            ("alert", "only alert"),
                        ],
                        default="refuse",
                        max_length=8,
                    ),
                ),
                (
                    "alert_thresholds",
                    models.JSONField(
                        blank=True,
                        default=sessions_app.models.spend_budgets.default_alert_thresholds,
                    ),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("updated_at", models.DateTimeField(auto_now=True)),
                (
                    "tenant",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="spend_budgets",
                        to="sessions_app.tenant",
                    ),
                ),
            ],
            options={
                "db_table": "spend_budget",
                "ordering": ["created_at", "id"],
            },
        ),
        migrations.CreateModel(
            name="SessionSelection",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("mpn", models.CharField(max_length=255)),
                ("position", models.IntegerField()),
                ("quantity", models.IntegerField(default=1)),
                ("note", models.TextField(blank=True, default="")),
                ("selected_at", models.DateTimeField(auto_now_add=True)),
                (
                    "session",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="selections",
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
                "db_table": "session_selection",
                "ordering": ["session", "position"],
            },
        ),
        migrations.CreateModel(
            name="SessionComponent",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("mpn", models.CharField(max_length=255)),
                ("component_type", models.CharField(blank=True, default="", max_length=100)),
                ("name", models.CharField(blank=True, default="", max_length=500)),
                ("summary", models.TextField(blank=True, default="")),
                ("full_data", models.JSONField(blank=True, default=dict)),
                (
                    "position",
                    models.IntegerField(
                        blank=True,
                        help_text="1-based position in the last results; null if not there.",
                        null=True,
                    ),
                ),
                ("fetched_at", models.DateTimeField()),
                (
                    "session",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="components",
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
                "db_table": "session_component",
                "ordering": ["session", "position", "-fetched_at"],
            },
        ),
        migrations.CreateModel(
            name="IdempotencyRecord",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("key", models.CharField(max_length=255)),
                (
                    "scope",
                    models.CharField(help_text="The route the key was used on.", max_length=200),
                ),
                (
                    "session_id",
                    models.UUIDField(
                        blank=True,
                        help_text="The session the request was about, if any.",
                        null=True,
                    ),
                ),
                ("request_hash", models.CharField(max_length=64)),
                (
                    "status",
                    models.CharField(
                        choices=[("in_flight", "in flight"), ("completed", "completed")],
                        default="in_flight",
                        max_length=16,
                    ),
                ),
                ("response_status", models.IntegerField(blank=True, null=True)),
                ("response_body", models.JSONField(blank=True, null=True)),
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
                "db_table": "idempotency_record",
            },
        ),
        migrations.CreateModel(
            name="ChatTurn",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("turn_number", models.IntegerField()),
                (
                    "kind",
                    models.CharField(
                        choices=[("exchange", "exchange"), ("state_change", "state change")],
                        db_default="exchange",
                        default="exchange",
                        max_length=16,
                    ),
                ),
                (
                    "changed_by",
                    models.CharField(
                        blank=True,
                        db_default="",
                        default="",
                        help_text="Who made a state change (an agent, an operator); blank for exchanges.",
                        max_length=255,
                    ),
                ),
                ("user_message", models.TextField(blank=True, default="")),
                ("assistant_response", models.TextField(blank=True, default="")),
                ("intent_data", models.JSONField(blank=True, default=dict)),
                ("reasoning", models.TextField(blank=True, default="")),
                ("metadata", models.JSONField(blank=True, default=dict)),
                ("state_before", models.JSONField(blank=True, default=dict)),
                ("state_after", models.JSONField(blank=True, default=dict)),
                (
                    "context_after",
                    models.JSONField(
                        blank=True,
                        default=dict,
                        help_text="Focus, last results, query and cart when this turn was recorded: what rolling back the next turn restores.",
                    ),
                ),
                ("input_tokens", models.BigIntegerField(default=0)),
                ("output_tokens", models.BigIntegerField(default=0)),
                ("cached_tokens", models.BigIntegerField(default=0)),
                ("reasoning_tokens", models.BigIntegerField(default=0)),
                ("cost_usd", models.DecimalField(decimal_places=10, default=0, max_digits=20)),
                ("call_count", models.IntegerField(default=0)),
                ("error_count", models.IntegerField(default=0)),
                ("unpriced_calls", models.IntegerField(default=0)),
                ("duration_ms", models.IntegerField(default=0)),
                ("idempotency_key", models.CharField(blank=True, max_length=255, null=True)),
                ("compacted", models.BooleanField(default=False)),
                ("rolled_back", models.BooleanField(default=False)),
                ("rolled_back_at", models.DateTimeField(blank=True, null=True)),
                (
                    "over_limit",
                    models.CharField(
                        blank=True,
                        db_default="",
                        default="",
                        help_text="Which per-turn ceiling the steps passed (`tokens`, `cost`, both); blank: none.",
                        max_length=64,
                    ),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                (
                    "occurred_at",
                    models.DateTimeField(
                        default=django.utils.timezone.now,
                        help_text="When the exchange happened: the caller's time for imported history, else when it was recorded. Recall and search order and label turns by it.",
                    ),
                ),
                (
                    "session",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="turns",
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
                "db_table": "chat_turn",
                "ordering": ["session", "turn_number"],
            },
        ),
        migrations.CreateModel(
            name="ApiKey",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("name", models.CharField(blank=True, max_length=100)),
                ("prefix", models.CharField(max_length=16, unique=True)),
                ("key_hash", models.CharField(max_length=64)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("last_used_at", models.DateTimeField(blank=True, null=True)),
                ("revoked_at", models.DateTimeField(blank=True, null=True)),
                (
                    "tenant",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="api_keys",
                        to="sessions_app.tenant",
                    ),
                ),
            ],
            options={
                "verbose_name": "API key",
                "verbose_name_plural": "API keys",
                "db_table": "api_key",
                "ordering": ["-created_at"],
            },
        ),
        migrations.CreateModel(
            name="TenantContextPolicy",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "name",
                    models.CharField(
                        help_text="Letters, digits, '_', '.', '-'; `default` is reserved.",
                        max_length=64,
                        validators=[
                            django.core.validators.RegexValidator(
                                "^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}\\Z"
                            )
                        ],
                    ),
                ),
                (
                    "keep_last_turns",
                    models.IntegerField(
                        blank=True,
                        help_text="Turns kept verbatim as the window; null: default's.",
                        null=True,
                        validators=[
                            django.core.validators.MinValueValidator(0),
                            django.core.validators.MaxValueValidator(1000),
                        ],
                    ),
                ),
                (
                    "memory_limit",
                    models.IntegerField(
                        blank=True,
                        help_text="Long-term memories searched (K); null: default's.",
                        null=True,
                        validators=[
                            django.core.validators.MinValueValidator(0),
                            django.core.validators.MaxValueValidator(100),
                        ],
                    ),
                ),
                (
                    "compression",
                    models.BooleanField(
                        blank=True,
                        help_text="Summaries and milestones stand in for compacted turns; off: the compacted turns are offered verbatim. Null: on (the default's).",
                        null=True,
                    ),
                ),
                (
                    "predecessor_depth",
                    models.IntegerField(
                        blank=True,
                        help_text="Rotated sessions walked back for context; null: ENGRAM_CONTEXT_PREDECESSOR_DEPTH.",
                        null=True,
                        validators=[
                            django.core.validators.MinValueValidator(0),
                            django.core.validators.MaxValueValidator(20),
                        ],
                    ),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("updated_at", models.DateTimeField(auto_now=True)),
                (
                    "tenant",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="context_policies",
                        to="sessions_app.tenant",
                    ),
                ),
            ],
            options={
                "verbose_name": "context policy",
                "verbose_name_plural": "context policies",
                "db_table": "tenant_context_policy",
                "ordering": ["tenant", "name"],
            },
        ),
        migrations.CreateModel(
            name="BudgetReservation",
            fields=[
                (
                    "id",
                    models.UUIDField(
                        default=uuid.uuid4, editable=False, primary_key=True, serialize=False
                    ),
                ),
                ("tokens", models.BigIntegerField()),
                (
                    "cost_usd",
                    models.DecimalField(blank=True, decimal_places=6, max_digits=14, null=True),
                ),
                (
                    "budget_ids",
                    django.contrib.postgres.fields.ArrayField(
                        base_field=models.UUIDField(), blank=True, default=list, size=None
                    ),
                ),
                ("created_at", models.DateTimeField()),
                ("expires_at", models.DateTimeField()),
                (
                    "session",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="budget_reservations",
                        to="sessions_app.chatsession",
                    ),
                ),
            ],
            options={
                "db_table": "budget_reservation",
                "indexes": [
                    models.Index(
                        fields=["session", "created_at"], name="reservation_session_created"
                    ),
                    models.Index(fields=["expires_at"], name="reservation_expires"),
                    django.contrib.postgres.indexes.GinIndex(
                        fields=["budget_ids"], name="reservation_budget_ids"
                    ),
                ],
            },
        ),
        migrations.CreateModel(
            name="BudgetSpend",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("period_start", models.DateTimeField()),
                ("tokens", models.BigIntegerField(default=0)),
                ("cost_usd", models.DecimalField(decimal_places=10, default=0, max_digits=20)),
                ("alerted", models.IntegerField(default=0)),
                ("updated_at", models.DateTimeField()),
                (
                    "budget",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="spends",
                        to="sessions_app.spendbudget",
                    ),
                ),
            ],
            options={
                "db_table": "budget_spend",
                "constraints": [
                    models.UniqueConstraint(
                        fields=("budget", "period_start"), name="budget_spend_one_per_period"
                    )
                ],
            },
        ),
        migrations.AddIndex(
            model_name="spendbudget",
            index=models.Index(fields=["tenant", "scope"], name="spend_budget_tenant_scope"),
        ),
        migrations.AddConstraint(
            model_name="spendbudget",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    ("limit_tokens__isnull", True), ("limit_tokens__gte", 0), _connector="OR"
                ),
                name="spend_budget_tokens_not_negative",
            ),
        ),
        migrations.AddConstraint(
            model_name="spendbudget",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    ("limit_usd__isnull", True), ("limit_usd__gte", 0), _connector="OR"
                ),
                name="spend_budget_usd_not_negative",
            ),
        ),
        migrations.AddConstraint(
            model_name="spendbudget",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    ("limit_tokens__isnull", False), ("limit_usd__isnull", False), _connector="OR"
                ),
                name="spend_budget_has_a_limit",
            ),
        ),
        migrations.AddConstraint(
            model_name="sessionselection",
            constraint=models.UniqueConstraint(
                fields=("session", "mpn"), name="selection_mpn_unique"
            ),
        ),
        migrations.AddConstraint(
            model_name="sessionselection",
            constraint=models.UniqueConstraint(
                deferrable=django.db.models.constraints.Deferrable["DEFERRED"],
                fields=("session", "position"),
                name="selection_position_unique",
            ),
        ),
        migrations.AddConstraint(
            model_name="sessionselection",
            constraint=models.CheckConstraint(
                condition=models.Q(("quantity__gte", 1)), name="selection_qty_pos"
            ),
        ),
        migrations.AddConstraint(
            model_name="sessioncomponent",
            constraint=models.UniqueConstraint(
                fields=("session", "mpn"), name="component_mpn_unique"
            ),
        ),
        migrations.AddIndex(
            model_name="idempotencyrecord",
            index=models.Index(fields=["created_at"], name="idempotency_created"),
        ),
        migrations.AddIndex(
            model_name="idempotencyrecord",
            index=models.Index(
                condition=models.Q(("session_id__isnull", False)),
                fields=["tenant", "session_id"],
                name="idempotency_session",
            ),
        ),
        migrations.AddConstraint(
            model_name="idempotencyrecord",
            constraint=models.UniqueConstraint(
                fields=("tenant", "key"), name="idempotency_key_unique"
            ),
        ),
        migrations.AddIndex(
            model_name="chatturn",
            index=models.Index(fields=["tenant", "-created_at"], name="turn_tenant_created"),
        ),
        migrations.AddConstraint(
            model_name="chatturn",
            constraint=models.UniqueConstraint(
                fields=("session", "turn_number"), name="turn_number_unique"
            ),
        ),
        migrations.AddIndex(
            model_name="chatsession",
            index=models.Index(
                fields=["tenant", "user_id", "-created_at"], name="session_tenant_user"
            ),
        ),
        migrations.AddIndex(
            model_name="chatsession",
            index=models.Index(
                fields=["tenant", "agent_id", "-created_at"], name="session_tenant_agent"
            ),
        ),
        migrations.AddIndex(
            model_name="chatsession",
            index=models.Index(fields=["tenant", "external_session_id"], name="session_tenant_ext"),
        ),
        migrations.AddIndex(
            model_name="chatsession",
            index=models.Index(fields=["status", "expires_at"], name="session_status_expiry"),
        ),
        migrations.AddIndex(
            model_name="chatsession",
            index=models.Index(fields=["tenant", "-created_at"], name="session_tenant_created"),
        ),
        migrations.AddIndex(
            model_name="chatsession",
            index=models.Index(fields=["-total_cost_usd"], name="session_cost"),
        ),
        migrations.AddIndex(
            model_name="chatsession",
            index=models.Index(fields=["tenant", "-total_cost_usd"], name="session_tenant_cost"),
        ),
        migrations.AddConstraint(
            model_name="chatsession",
            constraint=models.CheckConstraint(
                condition=models.Q(("total_input_tokens__gte", 0), ("total_output_tokens__gte", 0)),
                name="session_tokens_non_negative",
            ),
        ),
        migrations.AddConstraint(
            model_name="tenantcontextpolicy",
            constraint=models.UniqueConstraint(
                fields=("tenant", "name"), name="tenant_context_policy_name"
            ),
        ),
    ]
