"""Rate limiting per API key, on the shared cache (Valkey), so every worker process and
every server counts against the same limit.

A fixed window per key: the first request of a window creates its counter, every
request increments it atomically (INCR), and past the limit the request answers 429
`rate_limited` with Retry-After = the seconds left in the window. DRF's own
`SimpleRateThrottle` keeps a list of timestamps read and rewritten per request, which
lets concurrent requests of one key overwrite each other's counts; INCR does not.

The limit is ENGRAM_RATE_LIMIT ("<n>/<second|minute|hour|day>", empty = off). If the
cache is unreachable, requests are let through (the limit protects the service; it must
not become the outage) and the cache is not asked again for a few seconds, so a stalled
Valkey costs at most one cache timeout per process per pause.
"""

from __future__ import annotations

import logging
import math
import time
from typing import Any

from django.conf import settings
from django.core import checks
from django.core.cache import cache
from rest_framework.request import Request
from rest_framework.throttling import BaseThrottle

logger = logging.getLogger(__name__)

PERIODS = {"s": 1, "m": 60, "h": 3600, "d": 86400}  # as DRF reads "600/min"
CACHE_RETRY_SECONDS = 5.0
_cache_down_until = 0.0


def parse_rate(rate: str) -> tuple[int, int] | None:
    """("600/min") → (600, 60); empty → None (off). Raises ValueError when malformed."""
    if not rate.strip():
        return None
    number, _, period = rate.strip().partition("/")
    duration = PERIODS.get(period.strip().lower()[:1])
    if duration is None or not number.strip().isdigit() or int(number) < 1:
        raise ValueError(f"bad rate {rate!r}")
    return int(number), duration


class ApiKeyRateThrottle(BaseThrottle):
    """ENGRAM_RATE_LIMIT requests per window per API key; anonymous requests are not
    counted (they fail authentication anyway)."""

    def __init__(self) -> None:
        self.wait_seconds: float | None = None

    def allow_request(self, request: Request, view: Any) -> bool:
        global _cache_down_until
        limit = parse_rate(str(settings.ENGRAM_RATE_LIMIT))
        api_key = getattr(request, "auth", None)
        if limit is None or api_key is None or time.monotonic() < _cache_down_until:
            return True
        number, duration = limit
        now = time.time()
        window = int(now // duration)
        key = f"ratelimit:{api_key.pk}:{duration}:{window}"
        try:
            cache.add(key, 0, timeout=duration + 1)
            count = cache.incr(key)
        except Exception as exc:  # the cache is down: fail open, look again later
            _cache_down_until = time.monotonic() + CACHE_RETRY_SECONDS
            logger.warning("rate limit not checked, cache unavailable: %s", exc)
            return True
        if count <= number:
            return True
        self.wait_seconds = (window + 1) * duration - now
        return False

    def wait(self) -> float | None:
        return None if self.wait_seconds is None else float(math.ceil(self.wait_seconds))


@checks.register(checks.Tags.compatibility)
def check_rate_limit_setting(**kwargs: Any) -> list[checks.CheckMessage]:
    """A malformed ENGRAM_RATE_LIMIT stops the server at start, not each request later."""
    try:
        parse_rate(str(settings.ENGRAM_RATE_LIMIT))
    except ValueError as exc:
        return [
            checks.Error(
                f"ENGRAM_RATE_LIMIT={settings.ENGRAM_RATE_LIMIT!r} is not '<n>/<period>' "
                f"(period: second, minute, hour or day): {exc}",
                id="engram.E001",
            )
        ]
    return []
