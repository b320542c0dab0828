"""`turn_step` becomes a table partitioned by month (RANGE on created_at).

Why: the step log grows without end, and its reads (rollup fills, /usage tails,
dashboards' live tails) are by time or by the newest ids. Monthly partitions let
PostgreSQL prune to the months asked for, and let retention drop a whole month
(`DETACH` + `DROP`, no row-by-row DELETE, no bloat) once the rollups carry its history.

What changes in the database (the Django model keeps `id` as its primary key, see
`TurnStep`):
- PRIMARY KEY (id, created_at): PostgreSQL requires the partition key in every unique
  index. `id` stays unique because one sequence hands it out.
- UNIQUE (turn_id, step_order) becomes the plain index `step_turn_order`, for the same
  reason; the services keep the order unique (they hold the session's row lock while
  numbering a turn's steps).
- The single-column FK indexes on tenant_id, session_id and turn_id are not recreated:
  (tenant_id, created_at), (session_id, created_at) and (turn_id, step_order) serve
  them, and every index costs each insert.
- `id` takes its default from the sequence `turn_step_id_seq` (OWNED BY the column)
  instead of an identity: identity columns on partitioned tables need PostgreSQL 17.
  The sequence continues from the old identity's position, so no id is handed out
  twice and the rollups' fill markers stay valid.

How: the old table is locked, renamed, and its rows copied in id order, in batches of
`BATCH` with a progress line per batch on stderr, into a new partitioned table that has
one partition per month holding data (found by skipping through the created_at index,
so a table with a stray 1970 row does not get 600 empty partitions), the current month
and `ENGRAM_STEP_PARTITIONS_AHEAD` months ahead, and a DEFAULT partition. Indexes and
foreign keys are built after the copy (one sort per index instead of an insert per
row). It all runs in the migration's transaction: a failure leaves the old table.

`chat_turn` stays one table: it is what foreign keys point at (turn_step.turn_id,
memory_app's turn index), and a partitioned table can only be referenced through a key
that includes its partition key, so every referrer would need the turn's created_at;
its reads are by session and turn number, not by time; it holds a tenth of the rows
(one per turn, not per call); and its retention is the sessions' (archive or delete
by session), not by month.

Reversible: the reverse copies every partition's rows back into a plain table with
the old constraints (steps dropped by retention are gone, of course).
"""

from __future__ import annotations

import sys
import time
from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.db import migrations, models

BATCH = 200_000
DEFAULT_PARTITION = "turn_step_default"

# The indexes the reads need, built after the copy. `step_turn_order` replaces the
# (turn_id, step_order) unique constraint; the others are the model's.
INDEXES = {
    "step_turn_order": "(turn_id, step_order)",
    "step_tenant_created": "(tenant_id, created_at)",
    "step_created_id": "(created_at, id)",
    "step_session_created": "(session_id, created_at)",
}
FOREIGN_KEYS = {
    "turn_step_session_id_950ebcc7_fk_chat_session_id": "(session_id) REFERENCES chat_session(id)",
    "turn_step_tenant_id_f5707f92_fk_tenant_id": "(tenant_id) REFERENCES tenant(id)",
    "turn_step_turn_id_6722f579_fk_chat_turn_id": "(turn_id) REFERENCES chat_turn(id)",
}


def _month(at: datetime) -> datetime:
    at = at.astimezone(UTC)
    return at.replace(day=1, hour=0, minute=0, second=0, microsecond=0)


def _next_month(month: datetime) -> datetime:
    return (
        month.replace(year=month.year + 1, month=1)
        if month.month == 12
        else month.replace(month=month.month + 1)
    )


def _progress(message: str) -> None:
    print(f"  turn_step: {message}", file=sys.stderr, flush=True)


def _months_with_rows(cursor: Any, table: str) -> list[datetime]:
    """The months holding at least one row: one index probe per month, not a scan."""
    months = []
    cursor.execute(f"SELECT min(created_at) FROM {table}")  # noqa: S608 - constant
    first = cursor.fetchone()[0]
    while first is not None:
        month = _month(first)
        months.append(month)
        cursor.execute(
            f"SELECT min(created_at) FROM {table} WHERE created_at >= %s",  # noqa: S608
            [_next_month(month)],
        )
        first = cursor.fetchone()[0]
    return months


def _partition_months(cursor: Any, table: str) -> list[datetime]:
    ahead = int(getattr(settings, "ENGRAM_STEP_PARTITIONS_AHEAD", 3))
    months = set(_months_with_rows(cursor, table))
    month = _month(datetime.now(UTC))
    for _ in range(ahead + 1):
        months.add(month)
        month = _next_month(month)
    return sorted(months)


def _copy(cursor: Any, source: str, target: str) -> int:
    """Every row of `source` into `target`, in id order, BATCH at a time."""
    cursor.execute(f"SELECT count(*) FROM {source}")  # noqa: S608 - constant
    total = cursor.fetchone()[0]
    copied, after, started = 0, 0, time.monotonic()
    while copied < total:
        cursor.execute(
            f"SELECT max(id) FROM (SELECT id FROM {source} WHERE id > %s"  # noqa: S608
            " ORDER BY id LIMIT %s) AS batch",
            [after, BATCH],
        )
        upto = cursor.fetchone()[0]
        if upto is None:
            break
        cursor.execute(
            f"INSERT INTO {target} SELECT * FROM {source} WHERE id > %s AND id <= %s",  # noqa: S608
            [after, upto],
        )
        copied += cursor.rowcount
        after = upto
        if total > BATCH:
            rate = copied / max(time.monotonic() - started, 1e-9)
            _progress(f"copied {copied:,} of {total:,} rows ({rate:,.0f} rows/s)")
    return copied


def _sequence_position(cursor: Any, table: str) -> tuple[int, bool]:
    cursor.execute("SELECT pg_get_serial_sequence(%s, 'id')", [table])
    sequence = cursor.fetchone()[0]
    cursor.execute(f"SELECT last_value, is_called FROM {sequence}")  # noqa: S608 - catalog name
    last_value, is_called = cursor.fetchone()
    return int(last_value), bool(is_called)


def partition(apps: Any, schema_editor: Any) -> None:
    with schema_editor.connection.cursor() as cursor:
        # Deferred FK checks of rows written earlier in this transaction would keep
        # the old table from being dropped: run them now.
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute("LOCK TABLE turn_step IN ACCESS EXCLUSIVE MODE")
        last_value, is_called = _sequence_position(cursor, "turn_step")
        cursor.execute(
            "CREATE TABLE turn_step_partitioned"
            " (LIKE turn_step INCLUDING DEFAULTS INCLUDING CONSTRAINTS)"
            " PARTITION BY RANGE (created_at)"
        )
        months = _partition_months(cursor, "turn_step")
        for month in months:
            cursor.execute(
                f"CREATE TABLE turn_step_p{month:%Y_%m} PARTITION OF turn_step_partitioned"
                " FOR VALUES FROM (%s) TO (%s)",
                [month, _next_month(month)],
            )
        cursor.execute(
            f"CREATE TABLE {DEFAULT_PARTITION} PARTITION OF turn_step_partitioned DEFAULT"
        )
        copied = _copy(cursor, "turn_step", "turn_step_partitioned")
        if copied:
            _progress(f"{copied:,} rows in {len(months)} monthly partitions; building indexes")
        cursor.execute("DROP TABLE turn_step")
        cursor.execute("ALTER TABLE turn_step_partitioned RENAME TO turn_step")
        cursor.execute("CREATE SEQUENCE turn_step_id_seq AS bigint OWNED BY turn_step.id")
        cursor.execute("SELECT setval('turn_step_id_seq', %s, %s)", [last_value, is_called])
        cursor.execute("ALTER TABLE turn_step ALTER id SET DEFAULT nextval('turn_step_id_seq')")
        cursor.execute(
            "ALTER TABLE turn_step ADD CONSTRAINT turn_step_pkey PRIMARY KEY (id, created_at)"
        )
        for name, columns in INDEXES.items():
            cursor.execute(f"CREATE INDEX {name} ON turn_step {columns}")
        for name, reference in FOREIGN_KEYS.items():
            cursor.execute(
                f"ALTER TABLE turn_step ADD CONSTRAINT {name} FOREIGN KEY {reference}"
                " DEFERRABLE INITIALLY DEFERRED"
            )


def unpartition(apps: Any, schema_editor: Any) -> None:
    with schema_editor.connection.cursor() as cursor:
        # Deferred FK checks of rows written earlier in this transaction would keep
        # the old table from being dropped: run them now.
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute("LOCK TABLE turn_step IN ACCESS EXCLUSIVE MODE")
        last_value, is_called = _sequence_position(cursor, "turn_step")
        cursor.execute(
            "CREATE TABLE turn_step_plain (LIKE turn_step INCLUDING DEFAULTS INCLUDING CONSTRAINTS)"
        )
        # Its id default names the sequence that goes with the partitioned table.
        cursor.execute("ALTER TABLE turn_step_plain ALTER id DROP DEFAULT")
        _copy(cursor, "turn_step", "turn_step_plain")
        cursor.execute("DROP TABLE turn_step")  # its partitions and sequence with it
        cursor.execute("ALTER TABLE turn_step_plain RENAME TO turn_step")
        cursor.execute("ALTER TABLE turn_step ALTER id ADD GENERATED BY DEFAULT AS IDENTITY")
        cursor.execute(
            "SELECT setval(pg_get_serial_sequence('turn_step', 'id'), %s, %s)",
            [last_value, is_called],
        )
        cursor.execute("ALTER TABLE turn_step ADD CONSTRAINT turn_step_pkey PRIMARY KEY (id)")
        cursor.execute(
            "ALTER TABLE turn_step ADD CONSTRAINT step_order_unique UNIQUE (turn_id, step_order)"
        )
        for name, columns in INDEXES.items():
            if name != "step_turn_order":
                cursor.execute(f"CREATE INDEX {name} ON turn_step {columns}")
        for name, reference in FOREIGN_KEYS.items():
            column = reference.split(")")[0].strip("(")
            cursor.execute(f"CREATE INDEX {name.split('_fk_')[0]} ON turn_step ({column})")
            cursor.execute(
                f"ALTER TABLE turn_step ADD CONSTRAINT {name} FOREIGN KEY {reference}"
                " DEFERRABLE INITIALLY DEFERRED"
            )


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0156_issue15_prompt_capture"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunPython(partition, unpartition)],
            state_operations=[
                migrations.RemoveConstraint(model_name="turnstep", name="step_order_unique"),
                migrations.AddIndex(
                    model_name="turnstep",
                    index=models.Index(fields=["turn", "step_order"], name="step_turn_order"),
                ),
            ],
        ),
    ]
