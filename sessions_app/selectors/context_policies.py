"""Reads of the named context policies a tenant can use (seed 004's A/B toggles).

Three layers, the later winning for a name: the built-in `default` (the settings'
compaction and context values), the settings' ENGRAM_CONTEXT_POLICIES (every tenant's
defaults) and the tenant's own `tenant_context_policy` rows (managed through
`/api/v1/tenant/context-policies` and the admin). A policy is a dict of the keys it sets;
a key it leaves out takes the `default` policy's value, resolved by
`memory_app.window.policies`, which assembles contexts with them.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings

from sessions_app.models import TenantContextPolicy

DEFAULT_POLICY = "default"
POLICY_KEYS = ("keep_last_turns", "memory_limit", "compression", "predecessor_depth")


def _settings_table() -> dict[str, dict[str, Any]]:
    table: dict[str, dict[str, Any]] = settings.ENGRAM_CONTEXT_POLICIES
    return {
        name: {key: value for key, value in values.items() if key in POLICY_KEYS}
        for name, values in table.items()
        if name != DEFAULT_POLICY
    }


def tenant_context_policies(*, tenant_id: int) -> list[TenantContextPolicy]:
    """The tenant's own policies, by name."""
    return list(TenantContextPolicy.objects.filter(tenant_id=tenant_id).order_by("name"))


def context_policy_table(*, tenant_id: int | None) -> dict[str, tuple[str, dict[str, Any]]]:
    """Every named policy (not `default`) the tenant can use: name → (origin, the keys
    it sets), origin `tenant` or `settings`. One query."""
    table = {name: ("settings", values) for name, values in _settings_table().items()}
    if tenant_id is not None:
        for row in tenant_context_policies(tenant_id=tenant_id):
            values = {key: getattr(row, key) for key in POLICY_KEYS}
            table[row.name] = ("tenant", {k: v for k, v in values.items() if v is not None})
    return table


def context_policy_names(*, tenant_id: int | None) -> list[str]:
    """`default` first, then the named policies in order."""
    return [DEFAULT_POLICY, *sorted(context_policy_table(tenant_id=tenant_id))]


def context_policy_exists(*, tenant_id: int, name: str) -> bool:
    if name == DEFAULT_POLICY or name in _settings_table():
        return True
    return TenantContextPolicy.objects.filter(tenant_id=tenant_id, name=name).exists()
