"""PostgreSQL advisory locks, the one way Engram keeps two runs of a job apart.

A lock is named by a string (`"housekeeping"`, `f"compaction:{session_id}"`…), hashed by
PostgreSQL (`hashtextextended`) into the 64-bit key space under an `engram:` prefix, so
names never collide with other apps' numeric keys. Lives at the bottom layer so that
every app can use it.

- `advisory_lock`: try, don't wait; held by the database connection until the block
  ends, or until the connection dies (a killed worker frees it).
- `advisory_xact_lock`: wait; held until the current transaction ends.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection

_KEY = "hashtextextended('engram:' || %s, 0)"


@contextmanager
def advisory_lock(name: str) -> Iterator[bool]:
    """Yields True if this connection took the lock `name`, False if another holds it."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT pg_try_advisory_lock({_KEY})", [name])
        acquired = bool(cursor.fetchone()[0])
    try:
        yield acquired
    finally:
        if acquired:
            with connection.cursor() as cursor:
                cursor.execute(f"SELECT pg_advisory_unlock({_KEY})", [name])


def advisory_xact_lock(name: str) -> None:
    """Wait for the lock `name`, held until the caller's transaction ends (must run inside
    `transaction.atomic`, or it is released at once)."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT pg_advisory_xact_lock({_KEY})", [name])


# The array's names one after another, in its order (a function scan keeps it).
_LOCKS_SQL = """
SELECT count(pg_advisory_xact_lock(hashtextextended('engram:' || name, 0)))
  FROM unnest(%s::text[]) AS name
"""


def advisory_xact_locks(names: list[str]) -> None:
    """Wait for every lock in `names`, taken in sorted order in one statement and held
    until the caller's transaction ends. Every caller that holds several of a family at
    once takes them this way, so two such callers never wait for each other in a cycle."""
    if names:
        with connection.cursor() as cursor:
            cursor.execute(_LOCKS_SQL, [sorted(set(names))])
