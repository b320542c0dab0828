"""The monthly partitions of `turn_step`, read from the catalog.

The catalog, not a naming rule, says what exists: a partition made by hand or by an
older release is still found, and its bounds are the ones PostgreSQL routes by.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

from django.db import connection
from psycopg import sql

STEP_TABLE = "turn_step"
DEFAULT_PARTITION = "turn_step_default"

PARTITIONS_SQL = sql.SQL(
    "SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) FROM pg_inherits i"
    " JOIN pg_class c ON c.oid = i.inhrelid"
    " WHERE i.inhparent = %s::regclass"
)
DEFAULT_MONTHS_SQL = sql.SQL(
    "SELECT DISTINCT date_trunc('month', created_at AT TIME ZONE 'UTC') FROM {} ORDER BY 1"
).format(sql.Identifier(DEFAULT_PARTITION))


def newest_id_sql(name: str) -> sql.Composed:
    """The highest id in the partition `name`."""
    return sql.SQL("SELECT max(id) FROM {}").format(sql.Identifier(name))


_BOUNDS = re.compile(r"FROM \('([^']+)'\) TO \('([^']+)'\)")


@dataclass(frozen=True)
class StepPartition:
    """One partition; `start`/`end` are None for the DEFAULT partition, which holds the
    steps of months that have no partition of their own."""

    name: str
    start: datetime | None
    end: datetime | None

    @property
    def is_default(self) -> bool:
        return self.start is None


def _parse(bound: str) -> tuple[datetime | None, datetime | None]:
    # Printed in the connection's time zone, with its offset: any zone parses alike.
    found = _BOUNDS.search(bound)
    if found is None:  # "DEFAULT"
        return None, None
    return (
        datetime.fromisoformat(found.group(1)).astimezone(UTC),
        datetime.fromisoformat(found.group(2)).astimezone(UTC),
    )


def step_partitions() -> list[StepPartition]:
    """Every partition of turn_step, oldest first, the DEFAULT one last."""
    with connection.cursor() as cursor:
        cursor.execute(PARTITIONS_SQL, [STEP_TABLE])
        rows = cursor.fetchall()
    partitions = [StepPartition(name, *_parse(bound)) for name, bound in rows]
    return sorted(
        partitions, key=lambda p: (p.is_default, p.start or datetime.min.replace(tzinfo=UTC))
    )


def step_partition_newest_id(name: str) -> int | None:
    """The highest step id in one partition (its primary key index: one probe)."""
    with connection.cursor() as cursor:
        cursor.execute(newest_id_sql(name))
        value = cursor.fetchone()[0]
    return None if value is None else int(value)


def step_default_months() -> list[datetime]:
    """The UTC months of the steps waiting in the DEFAULT partition, oldest first."""
    with connection.cursor() as cursor:
        cursor.execute(DEFAULT_MONTHS_SQL)
        return [row[0].replace(tzinfo=UTC) for row in cursor.fetchall()]
