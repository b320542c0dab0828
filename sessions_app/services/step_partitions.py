"""Monthly partitions of `turn_step`: made ahead, filled from DEFAULT, dropped by age.

`turn_step` is partitioned by RANGE on created_at, one partition per UTC month (set up
by the sessions_app migrations), plus a DEFAULT partition so that a step whose month has
no partition yet (a clock far ahead, a back-dated import) is still stored rather than
refused.

- `step_partitions_ensure` (hourly, from the beat) makes the current month's partition
  and `ENGRAM_STEP_PARTITIONS_AHEAD` more, so recorded steps never land in DEFAULT. For
  every month that does have steps in DEFAULT it makes that month's partition too, and
  moves them: the partition is built as a plain table, the rows are moved into it
  (DELETE … RETURNING into INSERT, one statement), and it is then attached. PostgreSQL
  refuses to attach a range while DEFAULT still holds rows of it, so that order is the
  only one that works; a CHECK constraint matching the bounds spares the attach a scan.
- `step_partitions_drop_expired` drops whole months (DETACH + DROP: no row-by-row
  DELETE, no bloat, no vacuum debt) once a month ends more than
  `ENGRAM_STEP_RETENTION_DAYS` ago, so a step is kept between that many days and a
  month more. 0 (the default) keeps every step. A partition is dropped only when every
  registered retention guard is done with its steps (`hooks.step_retention_guards`:
  the spend rollups must have counted them); otherwise it is kept and reported, and the
  next run tries again. DEFAULT is never dropped: its old rows first get a partition.

Each change runs in its own transaction with a short `lock_timeout`: creating,
attaching and detaching partitions lock the parent table, and a maintenance task must
give up and retry an hour later rather than queue every turn behind a long read.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.backends.utils import CursorWrapper
from django.utils import timezone
from psycopg import sql

from sessions_app.hooks import step_retention_horizon
from sessions_app.locks import advisory_xact_lock
from sessions_app.selectors.step_partitions import (
    DEFAULT_PARTITION,
    STEP_TABLE,
    StepPartition,
    step_default_months,
    step_partition_newest_id,
    step_partitions,
)

logger = logging.getLogger(__name__)

LOCK_TIMEOUT = "5s"
# Serialises maintenance runs (two beats, a beat and a manual run).
_LOCK_NAME = "turn_step.partitions"


def month_start(at: datetime) -> datetime:
    """The first instant of `at`'s UTC month."""
    return at.astimezone(UTC).replace(day=1, hour=0, minute=0, second=0, microsecond=0)


def month_after(month: datetime) -> datetime:
    if month.month == 12:
        return month.replace(year=month.year + 1, month=1)
    return month.replace(month=month.month + 1)


def partition_name(month: datetime) -> str:
    return f"{STEP_TABLE}_p{month:%Y_%m}"


@dataclass
class PartitionReport:
    created: list[str] = field(default_factory=list)
    moved_rows: int = 0  # steps moved out of DEFAULT into their month
    dropped: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # expired, but not yet rolled up


def partition_statements(name: str) -> dict[str, sql.Composed]:
    """The statements that make the partition `name` and fill it from DEFAULT, in the
    order `step_partition_create` may run them, then the two that drop it; each takes
    the month's bounds as `%s, %s` where it names them."""
    table, default, partition = (
        sql.Identifier(STEP_TABLE),
        sql.Identifier(DEFAULT_PARTITION),
        sql.Identifier(name),
    )
    month = sql.SQL("created_at >= %s AND created_at < %s")
    statements = {
        "default_has_month": "SELECT EXISTS (SELECT 1 FROM {default} WHERE {month})",
        "create_attached": "CREATE TABLE {partition} PARTITION OF {table}"
        " FOR VALUES FROM (%s) TO (%s)",
        "lock_for_move": "LOCK TABLE {table} IN SHARE ROW EXCLUSIVE MODE",
        "create_detached": "CREATE TABLE {partition}"
        " (LIKE {table} INCLUDING DEFAULTS INCLUDING CONSTRAINTS)",
        "add_bounds_check": "ALTER TABLE {partition} ADD CONSTRAINT month_bounds CHECK ({month})",
        "move_from_default": "WITH moved AS (DELETE FROM {default} WHERE {month} RETURNING *)"
        " INSERT INTO {partition} SELECT * FROM moved",
        "attach": "ALTER TABLE {table} ATTACH PARTITION {partition} FOR VALUES FROM (%s) TO (%s)",
        "drop_bounds_check": "ALTER TABLE {partition} DROP CONSTRAINT month_bounds",
        "lock_for_drop": "LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE",
        "detach": "ALTER TABLE {table} DETACH PARTITION {partition}",
        "drop": "DROP TABLE {partition}",
    }
    return {
        key: sql.SQL(text).format(table=table, default=default, partition=partition, month=month)
        for key, text in statements.items()
    }


LOCK_TIMEOUT_SQL = sql.SQL("SET LOCAL lock_timeout = {}").format(sql.Literal(LOCK_TIMEOUT))


def _lock(cursor: CursorWrapper) -> None:
    cursor.execute(LOCK_TIMEOUT_SQL)
    advisory_xact_lock(_LOCK_NAME)


def _overlaps(partitions: list[StepPartition], lo: datetime, hi: datetime) -> bool:
    return any(
        p.start is not None and p.end is not None and p.start < hi and lo < p.end
        for p in partitions
    )


@transaction.atomic
def step_partition_create(month: datetime) -> int | None:
    """Make `month`'s partition and move its steps out of DEFAULT. None when a partition
    already covers (part of) the month, else the number of steps moved."""
    lo = month_start(month)
    hi = month_after(lo)
    statements = partition_statements(partition_name(lo))
    with connection.cursor() as cursor:
        _lock(cursor)
        if _overlaps(step_partitions(), lo, hi):
            return None
        cursor.execute(statements["default_has_month"], [lo, hi])
        if not cursor.fetchone()[0]:
            cursor.execute(statements["create_attached"], [lo, hi])
            return 0
        # Writers of this month wait on the parent until the rows have moved.
        cursor.execute(statements["lock_for_move"])
        cursor.execute(statements["create_detached"])
        cursor.execute(statements["add_bounds_check"], [lo, hi])
        cursor.execute(statements["move_from_default"], [lo, hi])
        moved = cursor.rowcount
        cursor.execute(statements["attach"], [lo, hi])
        cursor.execute(statements["drop_bounds_check"])
    return moved


def step_partitions_ensure(
    *, now: datetime | None = None, ahead: int | None = None, since: datetime | None = None
) -> PartitionReport:
    """Partitions for this month and `ahead` more (ENGRAM_STEP_PARTITIONS_AHEAD), for
    every month from `since` (a bulk load of older steps asks for it first), and for
    every month that has steps waiting in DEFAULT. Safe to run twice, or at once."""
    now = now or timezone.now()
    ahead = settings.ENGRAM_STEP_PARTITIONS_AHEAD if ahead is None else ahead
    month = month_start(since) if since is not None else month_start(now)
    last = month_start(now)
    for _ in range(ahead):
        last = month_after(last)
    months = set()
    while month <= last:
        months.add(month)
        month = month_after(month)
    months.update(step_default_months())
    report = PartitionReport()
    for month in sorted(months):
        moved = step_partition_create(month)
        if moved is not None:
            report.created.append(partition_name(month))
            report.moved_rows += moved
    if report.created:
        logger.info(
            "turn_step: made partitions %s (%d step(s) moved from DEFAULT)",
            ", ".join(report.created),
            report.moved_rows,
        )
    return report


@transaction.atomic
def _drop(partition: StepPartition, horizon: int | None) -> bool:
    """Detach and drop one partition, unless a guard still needs some of its steps."""
    statements = partition_statements(partition.name)
    with connection.cursor() as cursor:
        _lock(cursor)
        # No step can enter it once the parent is locked; then ask the guards.
        cursor.execute(statements["lock_for_drop"])
        newest = step_partition_newest_id(partition.name)
        if newest is not None and horizon is not None and newest > horizon:
            return False
        cursor.execute(statements["detach"])
        cursor.execute(statements["drop"])
    return True


def step_partitions_drop_expired(
    *, now: datetime | None = None, retention_days: int | None = None
) -> PartitionReport:
    """Drop the monthly partitions that end more than `retention_days`
    (ENGRAM_STEP_RETENTION_DAYS; 0 keeps everything) before `now`."""
    days = settings.ENGRAM_STEP_RETENTION_DAYS if retention_days is None else retention_days
    report = PartitionReport()
    if days <= 0:
        return report
    cutoff = (now or timezone.now()) - timedelta(days=days)
    expired = [p for p in step_partitions() if p.end is not None and p.end <= cutoff]
    if not expired:
        return report
    horizon = step_retention_horizon()
    for partition in expired:
        if _drop(partition, horizon):
            report.dropped.append(partition.name)
        else:
            report.kept.append(partition.name)
    if report.dropped:
        logger.info("turn_step: dropped expired partitions %s", ", ".join(report.dropped))
    if report.kept:
        logger.warning(
            "turn_step: kept expired partitions %s: their steps are not all rolled up yet",
            ", ".join(report.kept),
        )
    return report


def step_partitions_maintain(*, now: datetime | None = None) -> PartitionReport:
    """The beat's hourly run: make partitions ahead (and for DEFAULT's months), then drop
    the expired ones."""
    made = step_partitions_ensure(now=now)
    dropped = step_partitions_drop_expired(now=now)
    return PartitionReport(
        created=made.created,
        moved_rows=made.moved_rows,
        dropped=dropped.dropped,
        kept=dropped.kept,
    )
