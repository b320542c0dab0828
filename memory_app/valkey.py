"""The process's Valkey client for memory_app's own keys (the access-statistics buffer,
shared query vectors). Celery and Django's cache keep their own connections."""

from __future__ import annotations

from functools import lru_cache

import redis
from django.conf import settings


@lru_cache(maxsize=4)
def _client(url: str) -> redis.Redis:
    # One connection pool per process and URL (tests start their own Valkey). Short
    # timeouts: a stalled Valkey must cost a request milliseconds, then its fallback.
    return redis.Redis.from_url(url, socket_timeout=0.5, socket_connect_timeout=0.5)


def valkey(url: str | None = None) -> redis.Redis:
    """The client of `url`, by default the configured REDIS_URL."""
    return _client(url or settings.REDIS_URL)
