"""The monthly partitions of `turn_step`, read from the catalog.

The catalog, not a naming rule, says what exists: a partition made by hand or by an
older release is still found, and its bounds are the ones PostgreSQL routes by.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

from django.db import connection

STEP_TABLE = "turn_step"
DEFAULT_PARTITION = "turn_step_default"

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
        cursor.execute(
            "SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) FROM pg_inherits i"
            " JOIN pg_class c ON c.oid = i.inhrelid"
            " WHERE i.inhparent = %s::regclass",
            [STEP_TABLE],
        )
        rows = cursor.fetchall()
    partitions = [StepPartition(name, *_parse(bound)) for name, bound in rows]
    return sorted(
        partitions, key=lambda p: (p.is_default, p.start or datetime.min.replace(tzinfo=UTC))
    )


def step_partition_newest_id(name: str) -> int | None:
    """The highest step id in one partition (its primary key index: one probe)."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT max(id) FROM {connection.ops.quote_name(name)}")  # noqa: S608
        value = cursor.fetchone()[0]
    return None if value is None else int(value)


def step_default_months() -> list[datetime]:
    """The UTC months of the steps waiting in the DEFAULT partition, oldest first."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT DISTINCT date_trunc('month', created_at AT TIME ZONE 'UTC')"  # noqa: S608
            f" FROM {DEFAULT_PARTITION} ORDER BY 1"
        )
        return [row[0].replace(tzinfo=UTC) for row in cursor.fetchall()]
