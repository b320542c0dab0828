"""The API key → tenant lookup for transports outside DRF (MCP over stdio)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sessions_app.selectors.api_keys import api_key_for_secret
from sessions_app.services.api_keys import api_key_touch

if TYPE_CHECKING:
    from sessions_app.models import Tenant


def tenant_for_secret(secret: str | None) -> Tenant | None:
    """The key's tenant, or None for a missing, unknown or revoked key."""
    if not secret:
        return None
    api_key = api_key_for_secret(secret.strip())
    if api_key is None:
        return None
    api_key_touch(api_key=api_key)
    return api_key.tenant
