from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from django.db.models import QuerySet
from django.utils import timezone

from sessions_app.errors import NotFound, SessionExpired
from sessions_app.models import ChatSession, SessionStatus, Tenant, TurnStep


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
        extra: dict[str, Any] = {
            "expires_at": session.expires_at.isoformat(),
            "session_status": session.status,
        }
        successor = (
            session_successor_id(session) if session.status == SessionStatus.ARCHIVED else None
        )
        if successor is not None:
            extra["successor_session_id"] = successor
            raise SessionExpired("The session was rotated; continue in its successor.", extra=extra)
        raise SessionExpired("The session has expired; start a new one.", extra=extra)


def session_successor_id(session: ChatSession) -> str | None:
    """The id of the session that continues `session` after a rotation, if any."""
    successor = (
        ChatSession.objects.filter(previous_session=session)
        .order_by("created_at")
        .values_list("pk", flat=True)
        .first()
    )
    return None if successor is None else str(successor)


def session_get_for_write(*, tenant: Tenant, session_id: Any) -> ChatSession:
    """The tenant's session if it can still be written: NotFound (404) for an unknown or
    foreign id, SessionExpired (410) for an expired one. Every write path of the API
    calls this first, so all of them refuse expired sessions the same way."""
    session = session_get(tenant=tenant, session_id=session_id)
    session_ensure_writable(session=session)
    return session


def session_model(session: ChatSession) -> str:
    """The model the session's agent calls: the one set on the session, else the model
    of its newest LLM step (one index scan on (session, created_at)); blank if none."""
    if session.model:
        return session.model
    model = (
        TurnStep.objects.filter(session=session)
        .exclude(model="")
        .order_by("-created_at")
        .values_list("model", flat=True)
        .first()
    )
    return model or ""
