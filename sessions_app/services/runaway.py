"""Writes of the runaway flag on a session. analytics_app decides *whether* a session is
runaway; this module is the only place that writes the flag, so the rule "one episode
per flag" holds whatever calls it.

Contract with budget/check: while `runaway_blocked` is true, `POST
/sessions/{id}/budget/check` answers 429, so a looping agent that asks before spending
stops spending.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from django.db import transaction
from django.utils import timezone

from sessions_app.models import ChatSession


@transaction.atomic
def session_flag_runaway(
    *,
    session_id: UUID,
    reason: str,
    detail: dict[str, Any],
    at: datetime,
    block: bool,
) -> bool:
    """Opens a runaway episode; False if the session is already flagged (or gone).

    A conditional UPDATE rather than read-then-save: two detectors racing on the same
    session (the per-turn check and the scan) open one episode, not two."""
    flagged = ChatSession.objects.filter(pk=session_id, runaway_at__isnull=True).update(
        runaway_at=at,
        runaway_reason=reason,
        runaway_detail=detail,
        runaway_blocked=block,
        updated_at=timezone.now(),
    )
    return flagged == 1


@transaction.atomic
def session_clear_runaway(*, session: ChatSession) -> ChatSession:
    """Closes the episode and unblocks: the next detection opens a new one (new alert)."""
    session.runaway_at = None
    session.runaway_reason = ""
    session.runaway_detail = {}
    session.runaway_blocked = False
    session.save(
        update_fields=[
            "runaway_at",
            "runaway_reason",
            "runaway_detail",
            "runaway_blocked",
            "updated_at",
        ]
    )
    return session


@transaction.atomic
def session_set_runaway_block(*, session: ChatSession, blocked: bool) -> ChatSession:
    """An operator's manual block or unblock, independent of the auto-block setting."""
    session.runaway_blocked = blocked
    session.save(update_fields=["runaway_blocked", "updated_at"])
    return session
