from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from django.db.models import QuerySet
from django.utils import timezone

from sessions_app.errors import NotFound, SessionExpired
from sessions_app.models import ChatSession, SessionStatus, Tenant


def session_list(*, tenant: Tenant) -> QuerySet[ChatSession]:
    return ChatSession.objects.filter(tenant=tenant)


def session_get(*, tenant: Tenant, session_id: Any) -> ChatSession:
    """The tenant's session, or NotFound: another tenant's id is indistinguishable from
    an id that does not exist."""
    try:
        return ChatSession.objects.get(tenant=tenant, pk=uuid.UUID(str(session_id)))
    except (ValueError, ChatSession.DoesNotExist) as exc:
        raise NotFound("Session not found.") from exc


WRITE_CLOSED_STATUSES = (SessionStatus.EXPIRED, SessionStatus.ARCHIVED)


def session_is_expired(session: ChatSession, *, now: datetime | None = None) -> bool:
    """Past its expiry, or already expired/archived by the cleanup task (which may lag
    behind `expires_at`)."""
    now = now or timezone.now()
    return session.status in WRITE_CLOSED_STATUSES or session.expires_at <= now


def session_ensure_writable(*, session: ChatSession, now: datetime | None = None) -> None:
    """SessionExpired (410) if the session may no longer change. Every service that
    writes to a session (turns, results, cart, focus, PATCH) calls this."""
    if session_is_expired(session, now=now):
        raise SessionExpired(
            "The session has expired; start a new one.",
            extra={
                "expires_at": session.expires_at.isoformat(),
                "session_status": session.status,
            },
        )


def session_get_for_write(*, tenant: Tenant, session_id: Any) -> ChatSession:
    """The tenant's session if it can still be written: NotFound (404) for an unknown or
    foreign id, SessionExpired (410) for an expired one. Every write path of the API
    calls this first, so all of them refuse expired sessions the same way."""
    session = session_get(tenant=tenant, session_id=session_id)
    session_ensure_writable(session=session)
    return session


def session_find_resumable(
    *, tenant: Tenant, agent_id: str, external_session_id: str, now: datetime | None = None
) -> ChatSession | None:
    """The newest session of the tenant for this agent and external id that can still
    take writes, or None."""
    now = now or timezone.now()
    return (
        ChatSession.objects.filter(
            tenant=tenant,
            agent_id=agent_id,
            external_session_id=external_session_id,
            expires_at__gt=now,
        )
        .exclude(status__in=WRITE_CLOSED_STATUSES)
        .order_by("-created_at")
        .first()
    )
