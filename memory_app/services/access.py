"""Access statistics (how often and when a memory was last read) off the request path.

Counting a read with `UPDATE memory SET access_count = access_count + 1 …` inside the
request would make every search or context a write (row locks, WAL, a new heap tuple
per hit). Instead the request adds its hits to a hash in Valkey, one round trip (a Lua
script increments the count and keeps the latest time of each id atomically), and the
periodic task `memory_app.flush_memory_access` moves the buffered counts into PostgreSQL
in one UPDATE per batch. The search's access signal therefore lags by at most one flush
interval (ENGRAM_MEMORY_ACCESS_FLUSH_SECONDS).

Counts are not lost: when Valkey is unreachable (or the buffer is switched off with
ENGRAM_MEMORY_ACCESS_BUFFER=false) the request writes the UPDATE itself; a
flush claims the buffer by RENAME (atomic: a read arriving during the flush lands in a
fresh buffer) and deletes its claimed copy only after the UPDATE commits. A flusher that
dies in between leaves its claimed copy behind; the next flush adopts copies older than
ENGRAM_MEMORY_ACCESS_STALE_SECONDS (younger ones may still be in another flusher's hands).
Delivery is at least once: a flusher that dies after its commit and before its DELETE
makes that batch count twice, which for a popularity signal beats losing it.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import redis
from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from memory_app.valkey import valkey

logger = logging.getLogger(__name__)

BUFFER_KEY = "engram:memory-access:buffer"
CLAIMED_PREFIX = "engram:memory-access:claimed:"
# Field "n:<id>" is the number of reads since the last flush, "t:<id>" the latest read
# time (epoch seconds). One hash, so that a single RENAME claims both.
RECORD_SCRIPT = """
local now = tonumber(ARGV[1])
for i = 2, #ARGV do
  redis.call('HINCRBY', KEYS[1], 'n:' .. ARGV[i], 1)
  local seen = redis.call('HGET', KEYS[1], 't:' .. ARGV[i])
  if (not seen) or tonumber(seen) < now then
    redis.call('HSET', KEYS[1], 't:' .. ARGV[i], ARGV[1])
  end
end
return #ARGV - 1
"""
UPDATE_SQL = """
    UPDATE memory m
    SET access_count = m.access_count + d.n,
        last_accessed_at = GREATEST(coalesce(m.last_accessed_at, d.t), d.t)
    FROM unnest(%s::uuid[], %s::int[], %s::timestamptz[]) AS d(id, n, t)
    WHERE m.id = d.id
"""


@dataclass
class FlushReport:
    buffers: int = 0  # claimed hashes written (this flush's, plus adopted leftovers)
    memories: int = 0  # distinct memories in them
    reads: int = 0  # reads counted
    updated: int = 0  # rows updated (fewer than memories when some were deleted since)


def memory_access_record(*, memory_ids: Sequence[uuid.UUID], now: datetime | None = None) -> int:
    """Count one read of each memory: buffered in Valkey (one round trip), or written at
    once when the buffer is off or Valkey is unreachable. Returns the ids counted."""
    ids = sorted({str(pk) for pk in memory_ids})  # a read counts once per request
    if not ids:
        return 0
    now = now or timezone.now()
    if settings.ENGRAM_MEMORY_ACCESS_BUFFER:
        try:
            client = valkey()
            return int(
                client.eval(
                    RECORD_SCRIPT,
                    1,
                    BUFFER_KEY,
                    repr(now.timestamp()),
                    *ids,
                )
            )
        except redis.RedisError as exc:
            logger.warning("access buffer unavailable (%s); writing the counts now", exc)
    return _apply([(pk, 1, now) for pk in ids])


def memory_access_flush() -> FlushReport:
    """Move the buffered access counts into PostgreSQL: claim the live buffer (and any
    stale leftover of a flusher that died), one UPDATE per claimed buffer, then drop it."""
    client = valkey()
    report = FlushReport()
    for key in _claim(client):
        raw = client.hgetall(key)
        rows = _rows(raw)
        report.updated += _apply(rows)
        client.delete(key)  # after the commit: a crash before this re-counts, never loses
        report.buffers += 1
        report.memories += len(rows)
        report.reads += sum(count for _, count, _ in rows)
    return report


def _claim(client: redis.Redis) -> list[str]:
    claimed: list[str] = []
    stale_before = time.time() - float(settings.ENGRAM_MEMORY_ACCESS_STALE_SECONDS)
    for raw_key in client.scan_iter(match=f"{CLAIMED_PREFIX}*", count=100):
        key = raw_key.decode() if isinstance(raw_key, bytes) else str(raw_key)
        try:
            claimed_at = float(key.removeprefix(CLAIMED_PREFIX).split(":", 1)[0])
        except ValueError:
            continue
        if claimed_at < stale_before:
            adopted = _claimed_key()
            if _rename(client, key, adopted):
                claimed.append(adopted)
    fresh = _claimed_key()
    if _rename(client, BUFFER_KEY, fresh):
        claimed.append(fresh)
    return claimed


def _claimed_key() -> str:
    return f"{CLAIMED_PREFIX}{time.time():.3f}:{uuid.uuid4().hex}"


def _rename(client: redis.Redis, source: str, target: str) -> bool:
    """RENAME is atomic: of two flushers claiming the same key, exactly one wins."""
    try:
        client.rename(source, target)
    except redis.ResponseError:  # no such key: empty buffer, or another flusher took it
        return False
    return True


def _rows(raw: dict[Any, Any]) -> list[tuple[str, int, datetime]]:
    counts: dict[str, int] = {}
    times: dict[str, float] = {}
    for field_name, value in raw.items():
        name = field_name.decode() if isinstance(field_name, bytes) else str(field_name)
        kind, _, pk = name.partition(":")
        if kind == "n":
            counts[pk] = int(value)
        elif kind == "t":
            times[pk] = float(value)
    return [
        (pk, count, datetime.fromtimestamp(times.get(pk, time.time()), tz=UTC))
        for pk, count in counts.items()
        if count > 0
    ]


def _apply(rows: list[tuple[str, int, datetime]]) -> int:
    """One UPDATE for every (memory, reads, latest read): memories deleted since are
    skipped by the join."""
    if not rows:
        return 0
    rows = sorted(rows)  # one lock order for every writer: no deadlock between two
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            UPDATE_SQL,
            [[pk for pk, _, _ in rows], [n for _, n, _ in rows], [t for _, _, t in rows]],
        )
        return int(cursor.rowcount)
