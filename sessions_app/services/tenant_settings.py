"""A tenant's own settings, changed through `/api/v1/tenant` by any of its API keys (the
API has one kind of key: a key acts for its tenant), and its named context policies.

Each function is one transaction. Prompt capture (seed 000) is the tenant's decision
about its own data, so its keys may turn it on and off (as the admin may). Budget
defaults stay admin-only: an agent holding a key should not raise its own allowance.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from sessions_app.errors import InvalidInput, NotFound
from sessions_app.models import ChatSession, Tenant, TenantContextPolicy
from sessions_app.selectors.context_policies import (
    DEFAULT_POLICY,
    POLICY_KEYS,
    context_policy_exists,
)


@transaction.atomic
def tenant_settings_update(*, tenant: Tenant, capture_prompts: bool) -> Tenant:
    """Turn prompt capture on or off for the tenant's sessions that do not decide for
    themselves (a session's own `capture_prompts` still wins)."""
    Tenant.objects.filter(pk=tenant.pk).update(capture_prompts=capture_prompts)
    tenant.capture_prompts = capture_prompts
    return tenant


@transaction.atomic
def context_policy_put(
    *, tenant: Tenant, name: str, values: dict[str, Any]
) -> tuple[TenantContextPolicy, bool]:
    """Create or replace the tenant's policy `name` with `values` (a key absent or null
    takes the default policy's value). Returns (policy, created). A policy of the same
    name in the settings is replaced for this tenant only."""
    if name == DEFAULT_POLICY:
        raise InvalidInput(
            "`default` is the settings' policy; give yours another name.",
            fields={"name": ["Reserved."]},
        )
    fields = {key: values.get(key) for key in POLICY_KEYS}
    policy, created = TenantContextPolicy.objects.update_or_create(
        tenant=tenant, name=name, defaults=fields
    )
    return policy, created


@transaction.atomic
def context_policy_delete(*, tenant: Tenant, name: str) -> int:
    """Delete the tenant's policy `name`. Sessions that named it fall back to the
    settings' policy of that name when there is one, else they are set to `default` here,
    so that no session names a policy that does not exist. Returns how many were reset."""
    deleted, _ = TenantContextPolicy.objects.filter(tenant=tenant, name=name).delete()
    if not deleted:
        raise NotFound(f"The tenant has no context policy {name!r}.")
    if context_policy_exists(tenant_id=tenant.pk, name=name):
        return 0
    return ChatSession.objects.filter(tenant=tenant, context_policy=name).update(
        context_policy=DEFAULT_POLICY
    )
