"""Named context policies: seed 004's A/B toggles ("toggle compression, vary K in hybrid
retrieval, and compare keep_last_turns=4 vs. 8") as data, so that two policies can be
compared on the same session by asking for the context under each.

A policy fixes `keep_last_turns` (the reserved window), `memory_limit` (K memories
searched) and `compression` (whether summaries and milestones stand in for compacted
turns; off, the compacted turns are offered verbatim again and no summary is used). The
"default" policy is the settings' values; ENGRAM_CONTEXT_POLICIES adds named ones for
every tenant and a tenant adds or replaces its own through the API or the admin
(`sessions_app.selectors.context_policies`; a key left out takes the default's value).
A policy may also set `predecessor_depth`, how many rotated sessions the context walks
back. A session names its policy (`context_policy`); a
request may name another (`policy=`); the response says which one was used.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from django.conf import settings

from sessions_app.context_policy_limits import PREDECESSOR_DEPTH_MAX
from sessions_app.errors import InvalidInput
from sessions_app.selectors.context_policies import (
    DEFAULT_POLICY,
    POLICY_KEYS,
    context_policy_names,
    context_policy_table,
)

KNOWN_KEYS = set(POLICY_KEYS)


@dataclass(frozen=True)
class ContextPolicy:
    name: str
    keep_last_turns: int
    memory_limit: int
    compression: bool
    predecessor_depth: int
    origin: str = "default"  # "default", "settings" or "tenant": where the policy is defined

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _default(memory_limit: int) -> ContextPolicy:
    return ContextPolicy(
        name=DEFAULT_POLICY,
        keep_last_turns=int(settings.ENGRAM_COMPACT_KEEP_LAST_TURNS),
        memory_limit=memory_limit,
        compression=True,
        predecessor_depth=_depth(settings.ENGRAM_CONTEXT_PREDECESSOR_DEPTH),
    )


def _depth(value: Any) -> int:
    return max(0, min(PREDECESSOR_DEPTH_MAX, int(value)))


def _resolve(name: str, origin: str, values: dict[str, Any], base: ContextPolicy) -> ContextPolicy:
    return ContextPolicy(
        name=name,
        keep_last_turns=max(0, int(values.get("keep_last_turns", base.keep_last_turns))),
        memory_limit=max(0, int(values.get("memory_limit", base.memory_limit))),
        compression=bool(values.get("compression", base.compression)),
        predecessor_depth=_depth(values.get("predecessor_depth", base.predecessor_depth)),
        origin=origin,
    )


def context_policies_resolved(
    *, tenant_id: int | None, default_memory_limit: int
) -> list[ContextPolicy]:
    """Every policy the tenant can use, `default` first, each with all its values."""
    base = _default(default_memory_limit)
    table = context_policy_table(tenant_id=tenant_id)
    return [
        base,
        *(_resolve(name, *table[name], base) for name in sorted(table)),
    ]


def context_policy_find(
    *, tenant_id: int, name: str, default_memory_limit: int
) -> ContextPolicy | None:
    """The tenant's policy `name`, resolved, or None when it has none of that name."""
    found = [
        policy
        for policy in context_policies_resolved(
            tenant_id=tenant_id, default_memory_limit=default_memory_limit
        )
        if policy.name == name
    ]
    return found[0] if found else None


def context_policy_get(
    name: str,
    *,
    default_memory_limit: int,
    session_keep_last_turns: int | None = None,
    tenant_id: int | None = None,
) -> ContextPolicy:
    """The policy called `name` for the tenant (InvalidInput naming `policy` if there
    is none). For the default policy, the session's own keep_last_turns (if set) wins
    over the settings'."""
    base = _default(default_memory_limit)
    if name == DEFAULT_POLICY:
        if session_keep_last_turns is not None:
            return ContextPolicy(
                DEFAULT_POLICY,
                max(0, session_keep_last_turns),
                base.memory_limit,
                True,
                base.predecessor_depth,
            )
        return base
    table = context_policy_table(tenant_id=tenant_id)
    if name not in table:
        raise InvalidInput(
            f"Unknown context policy {name!r}.",
            fields={"policy": [f"One of: {', '.join(context_policy_names(tenant_id=tenant_id))}."]},
        )
    return _resolve(name, *table[name], base)
