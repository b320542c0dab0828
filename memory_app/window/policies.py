"""Named context policies: seed 004's A/B toggles ("toggle compression, vary K in hybrid
retrieval, and compare keep_last_turns=4 vs. 8") as data, so that two policies can be
compared on the same session by asking for the context under each.

A policy fixes `keep_last_turns` (the reserved window), `memory_limit` (K memories
searched) and `compression` (whether summaries and milestones stand in for compacted
turns; off, the compacted turns are offered verbatim again and no summary is used). The
"default" policy is the settings' values; ENGRAM_CONTEXT_POLICIES adds named ones (a key
left out takes the default's value). A session names its policy (`context_policy`); a
request may name another (`policy=`); the response says which one was used.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from django.conf import settings

from sessions_app.errors import InvalidInput

DEFAULT_POLICY = "default"
KNOWN_KEYS = {"keep_last_turns", "memory_limit", "compression"}


@dataclass(frozen=True)
class ContextPolicy:
    name: str
    keep_last_turns: int
    memory_limit: int
    compression: bool

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _default(memory_limit: int) -> ContextPolicy:
    return ContextPolicy(
        name=DEFAULT_POLICY,
        keep_last_turns=int(settings.ENGRAM_COMPACT_KEEP_LAST_TURNS),
        memory_limit=memory_limit,
        compression=True,
    )


def context_policy_names() -> list[str]:
    return [DEFAULT_POLICY, *sorted(settings.ENGRAM_CONTEXT_POLICIES)]


def context_policy_get(
    name: str, *, default_memory_limit: int, session_keep_last_turns: int | None = None
) -> ContextPolicy:
    """The policy called `name` (InvalidInput naming `policy` if there is none). For the
    default policy, the session's own keep_last_turns (if set) wins over the settings'."""
    base = _default(default_memory_limit)
    if name == DEFAULT_POLICY:
        if session_keep_last_turns is not None:
            return ContextPolicy(
                DEFAULT_POLICY, max(0, session_keep_last_turns), base.memory_limit, True
            )
        return base
    table: dict[str, dict[str, Any]] = settings.ENGRAM_CONTEXT_POLICIES
    if name not in table:
        raise InvalidInput(
            f"Unknown context policy {name!r}.",
            fields={"policy": [f"One of: {', '.join(context_policy_names())}."]},
        )
    values = {key: value for key, value in table[name].items() if key in KNOWN_KEYS}
    return ContextPolicy(
        name=name,
        keep_last_turns=max(0, int(values.get("keep_last_turns", base.keep_last_turns))),
        memory_limit=max(0, int(values.get("memory_limit", base.memory_limit))),
        compression=bool(values.get("compression", base.compression)),
    )
