"""A lock in Valkey/Redis so that a periodic task never runs two copies at once (beat
may fire while the previous run is still going, or two beats may run by mistake)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, suppress

import redis
from django.conf import settings


def _client() -> redis.Redis:
    return redis.Redis.from_url(settings.REDIS_URL, socket_timeout=5, socket_connect_timeout=5)


@contextmanager
def single_run(name: str, *, ttl_seconds: int) -> Iterator[bool]:
    """Yields True if this process holds the lock, False if another copy does.

    The TTL frees the lock of a worker that died; it must exceed the task's longest run.
    redis-py's lock releases only its own token, so a run that outlived its TTL cannot
    release the lock of the copy that took over."""
    lock = _client().lock(f"engram:lock:{name}", timeout=ttl_seconds, blocking=False)
    acquired = lock.acquire()
    try:
        yield acquired
    finally:
        if acquired:
            # Expired and maybe taken over: nothing of ours is left to release.
            with suppress(redis.exceptions.LockError):
                lock.release()
