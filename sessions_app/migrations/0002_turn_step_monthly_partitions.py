"""`turn_step`, the log of every LLM or tool call, as a table partitioned by month.

The step log grows without end and its reads (rollup fills, `/usage` tails, the
dashboards' live tails) are by time or by the newest ids: monthly partitions let
PostgreSQL prune to the months asked for, and retention drops a whole month (`DETACH` +
`DROP`, no row-by-row DELETE) once the rollups carry its history
(`sessions_app.services.step_partitions` makes months ahead and drops expired ones).

What the database holds differs from the model on three points, so the table is created
here in SQL and the model's state is declared beside it:
- PRIMARY KEY (id, created_at): PostgreSQL wants the partition key in every unique
  index. `id` stays unique because one sequence hands it out, and Django keeps `id` as
  the model's primary key (see `TurnStep`).
- (turn_id, step_order) is the plain index `step_turn_order`, not a unique constraint,
  for the same reason; the services number a turn's steps under the session's row lock.
- `id` takes its default from the sequence `turn_step_id_seq` (OWNED BY the column):
  identity columns on partitioned tables need PostgreSQL 17.

The single-column foreign-key indexes are left out: (tenant_id, created_at),
(session_id, created_at) and (turn_id, step_order) serve those lookups.

`chat_turn` stays one table: foreign keys point at it, and a partitioned table can only be
referenced through a key that includes its partition key.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models
from psycopg import sql

CREATE_TABLE = """
CREATE TABLE turn_step (
    id bigint NOT NULL,
    user_id varchar(255) NOT NULL,
    agent_id varchar(255) NOT NULL,
    step_order integer NOT NULL,
    step_type varchar(64) NOT NULL,
    model varchar(200) NOT NULL,
    input_tokens bigint NOT NULL,
    output_tokens bigint NOT NULL,
    cached_tokens bigint NOT NULL,
    cache_write_tokens bigint NOT NULL,
    reasoning_tokens bigint NOT NULL,
    cost_usd numeric(20, 10),
    price_missing boolean NOT NULL,
    duration_ms integer NOT NULL,
    success boolean NOT NULL,
    error text,
    usage_raw jsonb,
    prompt jsonb,
    completion text NOT NULL DEFAULT '',
    tool_output text NOT NULL DEFAULT '',
    created_at timestamp with time zone NOT NULL,
    session_id uuid NOT NULL,
    tenant_id bigint NOT NULL,
    turn_id bigint NOT NULL,
    CONSTRAINT turn_step_pkey PRIMARY KEY (id, created_at),
    CONSTRAINT step_tokens_non_negative CHECK (
        input_tokens >= 0 AND output_tokens >= 0 AND cached_tokens >= 0
        AND cache_write_tokens >= 0 AND reasoning_tokens >= 0
    ),
    CONSTRAINT turn_step_session_id_950ebcc7_fk_chat_session_id FOREIGN KEY (session_id)
        REFERENCES chat_session (id) DEFERRABLE INITIALLY DEFERRED,
    CONSTRAINT turn_step_tenant_id_f5707f92_fk_tenant_id FOREIGN KEY (tenant_id)
        REFERENCES tenant (id) DEFERRABLE INITIALLY DEFERRED,
    CONSTRAINT turn_step_turn_id_6722f579_fk_chat_turn_id FOREIGN KEY (turn_id)
        REFERENCES chat_turn (id) DEFERRABLE INITIALLY DEFERRED
) PARTITION BY RANGE (created_at);
CREATE SEQUENCE turn_step_id_seq AS bigint OWNED BY turn_step.id;
ALTER TABLE turn_step ALTER id SET DEFAULT nextval('turn_step_id_seq');
CREATE TABLE turn_step_default PARTITION OF turn_step DEFAULT;
CREATE INDEX step_turn_order ON turn_step (turn_id, step_order);
CREATE INDEX step_tenant_created ON turn_step (tenant_id, created_at);
CREATE INDEX step_created_id ON turn_step (created_at, id);
CREATE INDEX step_session_created ON turn_step (session_id, created_at);
"""


def _month(at: datetime) -> datetime:
    return at.astimezone(UTC).replace(day=1, hour=0, minute=0, second=0, microsecond=0)


def _next_month(month: datetime) -> datetime:
    if month.month == 12:
        return month.replace(year=month.year + 1, month=1)
    return month.replace(month=month.month + 1)


def create_month_partitions(apps: Any, schema_editor: Any) -> None:
    """This month's partition and `ENGRAM_STEP_PARTITIONS_AHEAD` more; later months are
    made by the partition maintenance task."""
    month = _month(datetime.now(UTC))
    statement = sql.SQL(
        "CREATE TABLE {partition} PARTITION OF turn_step FOR VALUES FROM (%s) TO (%s)"
    )
    with schema_editor.connection.cursor() as cursor:
        for _ in range(settings.ENGRAM_STEP_PARTITIONS_AHEAD + 1):
            following = _next_month(month)
            name = sql.Identifier(f"turn_step_p{month:%Y_%m}")
            cursor.execute(statement.format(partition=name), [month, following])
            month = following


class Migration(migrations.Migration):
    dependencies = [("sessions_app", "0001_initial")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(sql=CREATE_TABLE, reverse_sql="DROP TABLE turn_step"),
                migrations.RunPython(create_month_partitions, migrations.RunPython.noop),
            ],
            state_operations=[
                migrations.CreateModel(
                    name="TurnStep",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        ("user_id", models.CharField(max_length=255)),
                        ("agent_id", models.CharField(max_length=255)),
                        ("step_order", models.IntegerField()),
                        ("step_type", models.CharField(max_length=64)),
                        ("model", models.CharField(blank=True, default="", max_length=200)),
                        (
                            "input_tokens",
                            models.BigIntegerField(
                                default=0, help_text="All input tokens, cached ones included."
                            ),
                        ),
                        (
                            "output_tokens",
                            models.BigIntegerField(
                                default=0, help_text="All output tokens, reasoning ones included."
                            ),
                        ),
                        (
                            "cached_tokens",
                            models.BigIntegerField(
                                default=0, help_text="Input tokens read from the provider's cache."
                            ),
                        ),
                        (
                            "cache_write_tokens",
                            models.BigIntegerField(
                                default=0, help_text="Input tokens written to the provider's cache."
                            ),
                        ),
                        (
                            "reasoning_tokens",
                            models.BigIntegerField(
                                default=0, help_text="Output tokens spent on hidden reasoning."
                            ),
                        ),
                        (
                            "cost_usd",
                            models.DecimalField(
                                blank=True,
                                decimal_places=10,
                                help_text="Null when the model has no price.",
                                max_digits=20,
                                null=True,
                            ),
                        ),
                        ("price_missing", models.BooleanField(default=False)),
                        ("duration_ms", models.IntegerField(default=0)),
                        ("success", models.BooleanField(default=True)),
                        ("error", models.TextField(blank=True, null=True)),
                        (
                            "usage_raw",
                            models.JSONField(
                                blank=True, help_text="The provider's usage object.", null=True
                            ),
                        ),
                        (
                            "prompt",
                            models.JSONField(
                                blank=True,
                                help_text="The chat messages sent, when prompt capture is on (size-capped).",
                                null=True,
                            ),
                        ),
                        (
                            "completion",
                            models.TextField(
                                blank=True,
                                db_default="",
                                default="",
                                help_text="The model's answer, when prompt capture is on (size-capped).",
                            ),
                        ),
                        (
                            "tool_output",
                            models.TextField(
                                blank=True,
                                db_default="",
                                default="",
                                help_text="A tool call's output, short or summarised: a context candidate (seed 004).",
                            ),
                        ),
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
                        (
                            "turn",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="steps",
                                to="sessions_app.chatturn",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "turn_step",
                        "ordering": ["turn", "step_order"],
                    },
                ),
                migrations.AddIndex(
                    model_name="turnstep",
                    index=models.Index(fields=["turn", "step_order"], name="step_turn_order"),
                ),
                migrations.AddIndex(
                    model_name="turnstep",
                    index=models.Index(fields=["tenant", "created_at"], name="step_tenant_created"),
                ),
                migrations.AddIndex(
                    model_name="turnstep",
                    index=models.Index(fields=["created_at", "id"], name="step_created_id"),
                ),
                migrations.AddIndex(
                    model_name="turnstep",
                    index=models.Index(
                        fields=["session", "created_at"], name="step_session_created"
                    ),
                ),
                migrations.AddConstraint(
                    model_name="turnstep",
                    constraint=models.CheckConstraint(
                        condition=models.Q(
                            ("input_tokens__gte", 0),
                            ("output_tokens__gte", 0),
                            ("cached_tokens__gte", 0),
                            ("cache_write_tokens__gte", 0),
                            ("reasoning_tokens__gte", 0),
                        ),
                        name="step_tokens_non_negative",
                    ),
                ),
            ],
        ),
    ]
