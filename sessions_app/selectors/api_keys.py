from __future__ import annotations

import hashlib
import hmac

from sessions_app.models import ApiKey

KEY_PREFIX = "eng"


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def split_key(secret: str) -> str | None:
    """The lookup prefix of a key shaped ``eng_<prefix>_<secret>``, or None."""
    parts = secret.split("_")
    if len(parts) != 3 or parts[0] != KEY_PREFIX or not parts[1] or not parts[2]:
        return None
    return parts[1]


def api_key_for_secret(secret: str) -> ApiKey | None:
    """The active key matching `secret`; compared in constant time."""
    prefix = split_key(secret)
    if prefix is None:
        return None
    key = ApiKey.objects.select_related("tenant").filter(prefix=prefix).first()
    if key is None or not key.is_active:
        return None
    if not hmac.compare_digest(key.key_hash, hash_secret(secret)):
        return None
    return key
