"""A session's state and workspace as they stood at a past moment, read from the turn log.

Every change of the free-form `state` is a turn (a PATCH logs one of kind
`state_change`) that keeps the state before and after it, and every turn keeps the
workspace it left (`context_after`: focus, last query and filters, last results, cart;
`services.snapshots`): the versions a rollback restores. The version in force at a
moment is the one left by the newest live turn said (`occurred_at`) by then. A change
of the workspace made between two turns is versioned by the turn after it, so it counts
from that turn on.

Before the session's first live turn the state is the one that turn found
(`state_before`), or the session's own when it has no live turn (nothing but a turn
changes it). The workspace has no version then (focus, results and cart set before any
turn are dated by nothing), nor after a turn recorded without its snapshot:
`SessionVersion.workspace` is None.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sessions_app.models import ChatSession
from sessions_app.selectors.turns import turns_live


@dataclass(frozen=True)
class SessionVersion:
    """The session's `state` and `workspace` (a `context_after` snapshot, None: no
    version of it) in force at a moment, and since when (`since`: the occurred_at of
    the turn that left them, None before the first turn)."""

    state: dict[str, Any]
    workspace: dict[str, Any] | None
    since: datetime | None


def session_version_at(*, session: ChatSession, moment: datetime) -> SessionVersion:
    """The version of the session's state and workspace in force at `moment` (module
    docstring); one query, two before the first turn said by then."""
    live = turns_live(session_id=session.pk)
    said = (
        live.filter(occurred_at__lte=moment)
        .order_by("-turn_number")
        .values_list("state_after", "context_after", "occurred_at")
        .first()
    )
    if said is not None:
        state, workspace, since = said
        return SessionVersion(state or {}, workspace or None, since)
    found = live.order_by("turn_number").values_list("state_before", flat=True).first()
    return SessionVersion((session.state or {}) if found is None else found, None, None)
