"""A session's status as of now. `expires_at` decides expiry the moment it passes; the
periodic `sessions_app.expire_sessions` task persists it later (and announces the
sessions' end), so a live status stored on a row past its expiry is read as `expired`
by every read path: a session's body, the list and its `status` filter, and the 410 of
a write."""

from __future__ import annotations

from datetime import datetime

from django.db.models import Q, QuerySet
from django.utils import timezone

from sessions_app.models import ChatSession, SessionStatus

# The statuses a session has while it takes writes; past `expires_at` they read `expired`.
LIVE_STATUSES = (SessionStatus.OPENED, SessionStatus.ACTIVE, SessionStatus.COMPACTED)


def session_status_now(session: ChatSession, *, now: datetime | None = None) -> str:
    """The stored status, or `expired` for a live one past its expiry."""
    if session.status in LIVE_STATUSES and session.expires_at <= (now or timezone.now()):
        return str(SessionStatus.EXPIRED)
    return str(session.status)


def sessions_of_status(
    sessions: QuerySet[ChatSession], *, status: str, now: datetime | None = None
) -> QuerySet[ChatSession]:
    """The sessions whose status as of now (`session_status_now`) is `status`: `expired`
    adds the live rows past their expiry, a live status leaves them out."""
    now = now or timezone.now()
    if status == SessionStatus.EXPIRED:
        return sessions.filter(
            Q(status=SessionStatus.EXPIRED) | Q(status__in=LIVE_STATUSES, expires_at__lte=now)
        )
    if status in LIVE_STATUSES:
        return sessions.filter(status=status, expires_at__gt=now)
    return sessions.filter(status=status)
