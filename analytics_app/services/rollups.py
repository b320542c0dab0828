"""Filling the spend rollups from `turn_step`, Zulip-analytics style.

Each rollup table has a fill marker (`RollupFillState.last_step_id`). A fill takes the
next bounded batch of steps in id order, upserts their sums (INSERT … ON CONFLICT DO
UPDATE SET x = x + EXCLUDED.x) and advances the marker *in the same transaction*. A fill
killed at any point has either counted a batch and moved the marker, or done neither, so
re-running it never counts a step twice. The marker row is locked (SELECT … FOR UPDATE)
for the batch, so two fills running at once take turns instead of double counting.

Steps are stamped `created_at = now` when recorded, but ids are handed out before commit:
a step with a lower id can become visible after a higher one. A fill therefore stops
short of the first step younger than `ENGRAM_ROLLUP_SETTLE_SECONDS`, so a slow
transaction still in flight is not skipped by the watermark.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone
from psycopg import sql

from analytics_app.models import ROLLUP_COUNTERS, RollupFillState, UserSpendRollup
from sessions_app.hooks import ERASED_USER_ID
from sessions_app.selectors.spend import (
    step_batch_after,
    step_bucket,
    step_first_id_since,
    step_sums_select,
)

logger = logging.getLogger(__name__)


def _upsert_sql(
    table: str, key_columns: list[str], key_select: list[sql.Composable]
) -> sql.Composed:
    """INSERT the sums of a batch of steps (`%(lo)s < id <= %(hi)s`), adding to the rows
    already there."""
    columns = [sql.Identifier(name) for name in (*key_columns, *ROLLUP_COUNTERS)]
    increments = [
        sql.SQL("{c} = {t}.{c} + EXCLUDED.{c}").format(
            c=sql.Identifier(name), t=sql.Identifier(table)
        )
        for name in ROLLUP_COUNTERS
    ]
    return sql.SQL(
        "INSERT INTO {table} ({columns}) {select} ON CONFLICT ({keys}) DO UPDATE SET {increments}"
    ).format(
        table=sql.Identifier(table),
        columns=sql.SQL(", ").join(columns),
        select=step_sums_select(keys=key_select, counters=ROLLUP_COUNTERS),
        keys=sql.SQL(", ").join(sql.Identifier(name) for name in key_columns),
        increments=sql.SQL(", ").join(increments),
    )


def _spend_keys(unit: str) -> list[sql.Composable]:
    return [
        sql.Identifier("tenant_id"),
        sql.Literal(unit),
        step_bucket(unit),
        *(sql.Identifier(name) for name in ("model", "agent_id", "step_type")),
    ]


_SPEND_KEYS = ["tenant_id", "granularity", "bucket_start", "model", "agent_id", "step_type"]

# One entry per fill marker: its name and the upsert that adds a batch of steps.
ROLLUP_UPSERTS: dict[str, sql.Composed] = {
    "spend:hour": _upsert_sql("spend_rollup", _SPEND_KEYS, _spend_keys("hour")),
    "spend:day": _upsert_sql("spend_rollup", _SPEND_KEYS, _spend_keys("day")),
    "user:day": _upsert_sql(
        "user_spend_rollup",
        ["tenant_id", "bucket_start", "user_id"],
        [sql.Identifier("tenant_id"), step_bucket("day"), sql.Identifier("user_id")],
    ),
}


@dataclass
class FillReport:
    name: str
    batches: int = 0
    steps: int = 0
    last_step_id: int = 0
    caught_up: bool = False


@dataclass
class RollupFiller:
    """Fills one rollup. A class so that a test can stop it between the upsert and the
    marker advance, the worst moment for a crash."""

    name: str
    batch_size: int
    settle_before: datetime
    report: FillReport = field(init=False)

    def __post_init__(self) -> None:
        self.report = FillReport(name=self.name)
        RollupFillState.objects.get_or_create(name=self.name)

    def settled_bound(self) -> int | None:
        """The id of the first step still inside the settle window: the fill stops below."""
        return step_first_id_since(since=self.settle_before)

    def next_batch(self, after: int, bound: int | None) -> tuple[int, int, datetime] | None:
        """(steps, highest id, newest created_at) of the next batch, or None when done."""
        return step_batch_after(after=after, below=bound, size=self.batch_size)

    def upsert(self, lo: int, hi: int) -> None:
        with connection.cursor() as cursor:
            cursor.execute(ROLLUP_UPSERTS[self.name], {"lo": lo, "hi": hi})

    def advance(self, state: RollupFillState, hi: int, newest: datetime) -> None:
        state.last_step_id = hi
        state.filled_through = newest
        state.save(update_fields=["last_step_id", "filled_through", "updated_at"])

    def fill_one_batch(self, bound: int | None) -> bool:
        """One batch in one transaction; False when there was nothing left to fill."""
        with transaction.atomic():
            state = RollupFillState.objects.select_for_update().get(name=self.name)
            batch = self.next_batch(state.last_step_id, bound)
            if batch is None:
                return False
            count, hi, newest = batch
            self.upsert(state.last_step_id, hi)
            self.advance(state, hi, newest)
        self.report.batches += 1
        self.report.steps += count
        self.report.last_step_id = hi
        return True

    def run(self, *, max_batches: int | None, deadline: float) -> FillReport:
        bound = self.settled_bound()
        while max_batches is None or self.report.batches < max_batches:
            if not self.fill_one_batch(bound):
                self.report.caught_up = True
                break
            if time.monotonic() >= deadline:
                break
        return self.report


def rollups_fill(
    *,
    now: datetime | None = None,
    batch_size: int | None = None,
    max_batches: int | None = None,
    max_seconds: float | None = None,
    filler_class: type[RollupFiller] = RollupFiller,
) -> list[FillReport]:
    """Brings every rollup up to date (or as far as `max_batches`/`max_seconds` allow;
    the next run carries on from the marker). Safe to run twice, and at the same time."""
    now = now or timezone.now()
    settle_before = now - timedelta(seconds=settings.ENGRAM_ROLLUP_SETTLE_SECONDS)
    size = batch_size or settings.ENGRAM_ROLLUP_BATCH_SIZE
    deadline = time.monotonic() + (max_seconds or settings.ENGRAM_ROLLUP_MAX_SECONDS)
    reports = []
    for name in ROLLUP_UPSERTS:
        filler = filler_class(name=name, batch_size=size, settle_before=settle_before)
        reports.append(filler.run(max_batches=max_batches, deadline=deadline))
    for report in reports:
        logger.info(
            "rollup %s: %d step(s) in %d batch(es), through step %d%s",
            report.name,
            report.steps,
            report.batches,
            report.last_step_id,
            "" if report.caught_up else " (more to do)",
        )
    return reports


def rollups_counted_through() -> int:
    """The highest step id every rollup has counted (0 while one has never filled).
    Step retention drops a month of raw steps only below it, so the rollups keep the
    history of what it drops (registered as a retention guard in `apps.py`)."""
    markers = dict(
        RollupFillState.objects.filter(name__in=ROLLUP_UPSERTS).values_list("name", "last_step_id")
    )
    return min(markers.get(name, 0) for name in ROLLUP_UPSERTS)


def _move_user_sql() -> sql.Composed:
    """Add a user's per-day rows to the same days' rows of ERASED_USER_ID."""
    counters = [sql.Identifier(name) for name in ROLLUP_COUNTERS]
    increments = [
        sql.SQL("{c} = user_spend_rollup.{c} + EXCLUDED.{c}").format(c=column)
        for column in counters
    ]
    return sql.SQL(
        "INSERT INTO user_spend_rollup (tenant_id, bucket_start, user_id, {counters}) "
        "SELECT tenant_id, bucket_start, %(erased)s, {counters} FROM user_spend_rollup "
        "WHERE tenant_id = %(tenant)s AND user_id = %(user)s "
        "ON CONFLICT (tenant_id, bucket_start, user_id) DO UPDATE SET {increments}"
    ).format(counters=sql.SQL(", ").join(counters), increments=sql.SQL(", ").join(increments))


@transaction.atomic
def rollups_erase_user(*, tenant_id: int, user_id: str) -> int:
    """Per-user rollups name the user: their sums move to the erased users' rows
    (ERASED_USER_ID, where the user's anonymised steps are counted from now on), so spend
    by user keeps adding up to the tenant's, and the user's rows go. The fill marker is
    held meanwhile, so a fill cannot write the user's id back from steps it read before
    they were anonymised. Answers the rows removed."""
    RollupFillState.objects.get_or_create(name="user:day")
    RollupFillState.objects.select_for_update().get(name="user:day")
    with connection.cursor() as cursor:
        cursor.execute(
            _move_user_sql(), {"erased": ERASED_USER_ID, "tenant": tenant_id, "user": user_id}
        )
    deleted, _ = UserSpendRollup.objects.filter(tenant_id=tenant_id, user_id=user_id).delete()
    return deleted
