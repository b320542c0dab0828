from __future__ import annotations

import hashlib
import hmac
import time
from dataclasses import dataclass

from django.conf import settings

from sessions_app.models import ApiKey

KEY_PREFIX = "eng"
MAX_CACHED_KEYS = 4096  # past this the cache starts over: it is a hint, not a store


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def split_key(secret: str) -> str | None:
    """The lookup prefix of a key shaped ``eng_<prefix>_<secret>``, or None."""
    parts = secret.split("_")
    if len(parts) != 3 or parts[0] != KEY_PREFIX or not parts[1] or not parts[2]:
        return None
    return parts[1]


@dataclass(frozen=True)
class _Verified:
    api_key: ApiKey
    at: float  # time.monotonic() when read from the database


# Keys verified recently, by the digest of their secret: every API request authenticates,
# and the key + tenant query was one of a turn's few statements (B1 in bench/RESULTS.md).
# Only keys that matched are kept, so a hit means the secret is right. Revocation and any
# ORM edit of a key or tenant clear it in this process at once (see `SessionsAppConfig`);
# other processes see them within ENGRAM_API_KEY_CACHE_SECONDS.
_verified: dict[str, _Verified] = {}


def api_key_cache_clear(**_kwargs: object) -> None:
    """Forget every verified key (a signal receiver, hence the keyword arguments)."""
    _verified.clear()


def api_key_for_secret(secret: str) -> ApiKey | None:
    """The active key matching `secret`; compared in constant time."""
    prefix = split_key(secret)
    if prefix is None:
        return None
    digest = hash_secret(secret)
    ttl = settings.ENGRAM_API_KEY_CACHE_SECONDS
    hit = _verified.get(digest)
    if hit is not None and time.monotonic() - hit.at < ttl and hit.api_key.is_active:
        return hit.api_key
    key = ApiKey.objects.select_related("tenant").filter(prefix=prefix).first()
    if key is None or not key.is_active:
        return None
    if not hmac.compare_digest(key.key_hash, digest):
        return None
    if ttl > 0:
        if len(_verified) >= MAX_CACHED_KEYS:
            _verified.clear()
        _verified[digest] = _Verified(api_key=key, at=time.monotonic())
    return key
