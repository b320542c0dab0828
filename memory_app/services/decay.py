"""Principled forgetting: recompute `decay_score` and delete memories that fell below
ENGRAM_MEMORY_DECAY_DELETE_BELOW. Pinned memories are scored but never deleted.

decay = 0.5 ** (days since last access / effective half-life), where the effective
half-life is the type's half-life stretched by importance (x1 to x3) and by how often the
memory was read (x1 + ln(1 + reads)): an unimportant episode nobody reads fades in weeks,
an important, often-used preference lasts years.

Work is done in SQL, in batches of ids (keyset on id), each batch its own short
transaction, so a run over millions of rows holds no long locks and can be interrupted.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone
from psycopg import sql

from memory_app.models import Memory, MemoryType
from sessions_app.locks import advisory_lock

logger = logging.getLogger(__name__)

HALF_LIFE_DAYS: dict[str, float] = {
    MemoryType.EPISODIC: 30.0,
    MemoryType.PREFERENCE: 180.0,
    MemoryType.SEMANTIC: 180.0,
    MemoryType.PROCEDURAL: 180.0,
    MemoryType.FACT: 365.0,
    MemoryType.PROFILE: 365.0,
    MemoryType.POLICY: 730.0,
}
BATCH_SIZE = 1000


@dataclass
class DecayReport:
    scored: int = 0
    deleted: int = 0
    batches: int = 0
    skipped: bool = False  # another run held the lock


def _half_life_case() -> tuple[sql.Composed, list[str | float]]:
    """The half-life of a memory's type in days, as a CASE over `type` whose types and
    days are parameters (one WHEN per entry of HALF_LIFE_DAYS)."""
    whens = sql.SQL(" ").join(sql.SQL("WHEN %s THEN %s") for _ in HALF_LIFE_DAYS)
    params: list[str | float] = []
    for memory_type, days in HALF_LIFE_DAYS.items():
        params += [str(memory_type), days]
    return sql.SQL("(CASE type {} ELSE 180.0 END)").format(whens), params


def decay_statement() -> tuple[sql.Composed, list[str | float]]:
    """The rescoring of one batch of ids after `%s` (twice; NULL from the start), among
    `%s::uuid[]` (twice; NULL for all), `%s` ids at most, at the time `%s`; then the
    half-life CASE's parameters. Returns the statement and those CASE parameters."""
    half_life, half_life_params = _half_life_case()
    statement = sql.SQL(
        """
WITH batch AS (
    SELECT id FROM memory
    WHERE (%s::uuid IS NULL OR id > %s::uuid)
      AND (%s::uuid[] IS NULL OR id = ANY(%s::uuid[]))
    ORDER BY id LIMIT %s
)
UPDATE memory m SET decay_score = power(
    0.5,
    greatest(0, extract(epoch FROM (%s - m.last_accessed_at)) / 86400.0)
    / ({half_life} * (1 + 2 * m.importance) * (1 + ln(1 + m.access_count)))
)
FROM batch WHERE m.id = batch.id
RETURNING m.id, m.decay_score, m.pinned
"""
    ).format(half_life=half_life)
    return statement, half_life_params


def memories_decay(
    *,
    now: datetime | None = None,
    delete: bool = True,
    memory_ids: Sequence[uuid.UUID] | None = None,
    batch_size: int = BATCH_SIZE,
) -> DecayReport:
    """Rescore every memory (or only `memory_ids`), then delete those below the threshold
    unless pinned or `delete` is False (the admin's "recompute decay" only rescores)."""
    with advisory_lock("memory_decay") as acquired:
        if not acquired:
            logger.info("memory decay: another run is in progress; skipped")
            return DecayReport(skipped=True)
        return _decay(now or timezone.now(), delete, memory_ids, batch_size)


def _decay(
    now: datetime, delete: bool, memory_ids: Sequence[uuid.UUID] | None, batch_size: int
) -> DecayReport:
    threshold = float(settings.ENGRAM_MEMORY_DECAY_DELETE_BELOW)
    statement, half_life_params = decay_statement()
    report = DecayReport()
    last_id: str | None = None
    only = [str(pk) for pk in memory_ids] if memory_ids is not None else None
    while True:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(
                statement,
                [last_id, last_id, only, only, batch_size, now, *half_life_params],
            )
            rows = cursor.fetchall()
            if not rows:
                break
            report.batches += 1
            report.scored += len(rows)
            last_id = str(max(row[0] for row in rows))
            doomed = [str(pk) for pk, score, pinned in rows if score < threshold and not pinned]
            if delete and doomed:
                # Through the ORM: versions and relations cascade with them.
                Memory.objects.filter(pk__in=doomed).delete()
                report.deleted += len(doomed)
        if len(rows) < batch_size:
            break
    logger.info(
        "memory decay: scored %d, deleted %d below %.2f in %d batches",
        report.scored,
        report.deleted,
        threshold,
        report.batches,
    )
    return report
