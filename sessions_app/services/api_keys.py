from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from sessions_app.models import ApiKey, Tenant
from sessions_app.selectors.api_keys import KEY_PREFIX, hash_secret

# last_used_at is written at most this often per key, so that authentication does not
# turn every API read into a write.
LAST_USED_RESOLUTION = timedelta(minutes=1)


@dataclass(frozen=True)
class IssuedKey:
    api_key: ApiKey
    secret: str


def tenant_get_or_create(*, name: str) -> Tenant:
    tenant, _ = Tenant.objects.get_or_create(name=name)
    return tenant


@transaction.atomic
def api_key_create(*, tenant: Tenant, name: str = "") -> IssuedKey:
    """A new key; the secret is returned once and only its digest is stored."""
    prefix = secrets.token_hex(6)
    secret = f"{KEY_PREFIX}_{prefix}_{secrets.token_urlsafe(32).replace('_', 'x')}"
    api_key = ApiKey.objects.create(
        tenant=tenant, name=name, prefix=prefix, key_hash=hash_secret(secret)
    )
    return IssuedKey(api_key=api_key, secret=secret)


def api_key_revoke(*, api_key: ApiKey) -> None:
    if api_key.revoked_at is None:
        api_key.revoked_at = timezone.now()
        api_key.save(update_fields=["revoked_at"])


def api_key_touch(*, api_key: ApiKey) -> None:
    now = timezone.now()
    if api_key.last_used_at is None or now - api_key.last_used_at > LAST_USED_RESOLUTION:
        ApiKey.objects.filter(pk=api_key.pk).update(last_used_at=now)
        api_key.last_used_at = now
