"""The entity tag of a session's `state`, for optimistic concurrency on it.

The tag is a hash of the state's canonical JSON, not a counter: every path that writes
the state (PATCH, a turn carrying `state`, a rollback, an import, the fast paths) moves
it without knowing of it, and a state put back as it was gets its old tag again, which
is harmless: a writer holding that tag read exactly the state that is there. Canonical
means sorted keys, no spaces, and a float with an integral value written as an integer,
so that a state reads the same before and after PostgreSQL's jsonb stores it (jsonb
writes 1e20 as 100000000000000000000).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from sessions_app.errors import PreconditionFailed


def _canonical(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(key): _canonical(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_canonical(item) for item in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def state_etag(state: dict[str, Any] | None) -> str:
    """The strong entity tag of `state`, quoted as the ETag header carries it."""
    text = json.dumps(
        _canonical(state or {}), sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    return '"' + hashlib.blake2b(text.encode(), digest_size=12).hexdigest() + '"'


def etag_matches(if_match: list[str], current: str) -> bool:
    """Whether an If-Match list (`*` or entity tags, as `parse_if_match` gives them) holds
    for the current tag. Strong comparison (RFC 9110): a weak tag `W/"…"` never matches."""
    return "*" in if_match or current in if_match


def state_precondition_check(*, state: dict[str, Any] | None, if_match: list[str]) -> None:
    """PreconditionFailed (412, naming If-Match, with the current tag as `state_etag`)
    unless `state` has one of the tags of `if_match`. The one check of every write that
    takes If-Match (PATCH of the session, a turn): the caller reads `state` from the
    session row it holds locked until its transaction commits, so no other writer of the
    state can come between the check and the write."""
    current = state_etag(state)
    if not etag_matches(if_match, current):
        raise PreconditionFailed(
            "The session's state changed since it was read; read it again and retry.",
            fields={"If-Match": [f"Does not match the state's current ETag {current}."]},
            extra={"state_etag": current},
        )
