from __future__ import annotations

import uuid
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.db.models import QuerySet, Subquery
from django.utils import timezone

from sessions_app.errors import NotFound, SessionExpired
from sessions_app.models import ChatSession, SessionStatus, Tenant, TurnStep
from sessions_app.selectors.session_status import session_status_now


def session_list(*, tenant: Tenant) -> QuerySet[ChatSession]:
    return ChatSession.objects.filter(tenant=tenant)


def session_get_by_id(*, session_id: Any, tenant_id: int | None = None) -> ChatSession:
    """A session by id alone, for background work that holds only the id (a task, a
    hook), optionally checked against a tenant; NotFound when it is gone."""
    lookup: dict[str, Any] = {"tenant_id": tenant_id} if tenant_id is not None else {}
    try:
        return ChatSession.objects.get(pk=uuid.UUID(str(session_id)), **lookup)
    except (ValueError, ChatSession.DoesNotExist) as exc:
        raise NotFound("Session not found.") from exc


def session_lock(*, session_id: Any) -> None:
    """Lock the session's row (SELECT … FOR UPDATE) until the caller's transaction ends,
    so that writers of one session's derived data (summaries…) queue up. Must run inside
    `transaction.atomic`; NotFound when the session is gone."""
    if not ChatSession.objects.select_for_update().filter(pk=session_id).values("pk").exists():
        raise NotFound("Session not found.")


def sessions_active_between(
    *, start: datetime, end: datetime, tenant_id: int | None = None
) -> QuerySet[ChatSession]:
    """Sessions active at some time in [start, end), tenant loaded (their totals are
    lifetime totals)."""
    rows = ChatSession.objects.filter(last_active_at__gte=start, created_at__lt=end)
    rows = rows.filter(tenant_id=tenant_id) if tenant_id else rows
    return rows.select_related("tenant")


def sessions_flagged_between(
    *, start: datetime, end: datetime, tenant_id: int | None = None
) -> QuerySet[ChatSession]:
    """Sessions flagged runaway in [start, end), newest flag first, tenant loaded."""
    rows = ChatSession.objects.filter(runaway_at__gte=start, runaway_at__lt=end)
    rows = rows.filter(tenant_id=tenant_id) if tenant_id else rows
    return rows.select_related("tenant").order_by("-runaway_at")


def session_unflagged(*, session_id: Any) -> ChatSession | None:
    """The session with its tenant if it exists and is not flagged runaway."""
    return (
        ChatSession.objects.select_related("tenant")
        .filter(pk=session_id, runaway_at__isnull=True)
        .first()
    )


def sessions_unflagged_with_steps_between(
    *, since: datetime, until: datetime
) -> QuerySet[ChatSession]:
    """Unflagged sessions that recorded a step in (since, until], by id, tenant loaded:
    what the runaway scan pages through."""
    active = TurnStep.objects.filter(created_at__gt=since, created_at__lte=until).values(
        "session_id"
    )
    return (
        ChatSession.objects.select_related("tenant")
        .filter(runaway_at__isnull=True, pk__in=Subquery(active))
        .order_by("pk")
    )


def tenant_choices(*, limit: int = 500) -> list[tuple[int, str]]:
    """(id, name) of tenants by name, for filters in operators' pages."""
    return list(Tenant.objects.order_by("name").values_list("pk", "name")[:limit])


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
            "session_status": session_status_now(session, now=now),
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


def session_for_staff(*, session_id: Any) -> ChatSession | None:
    """Any tenant's session by id, for the operators' pages (staff are not a tenant), or
    None for a malformed or unknown id."""
    try:
        pk = uuid.UUID(str(session_id))
    except ValueError:
        return None
    return ChatSession.objects.select_related("tenant").filter(pk=pk).first()


def user_sessions(*, tenant_id: int, user_id: str) -> QuerySet[ChatSession]:
    """One user's sessions, newest first (index `session_tenant_user`)."""
    return ChatSession.objects.filter(tenant_id=tenant_id, user_id=user_id).order_by(
        "-created_at", "-pk"
    )


def tenant_by_name(name: str) -> Tenant | None:
    """A tenant by its name, for management commands; None if there is none."""
    return Tenant.objects.filter(name=name).first()


def tenant_for_staff(*, tenant_id: int) -> Tenant | None:
    """A tenant by id for the operators' pages, or None (their views answer 404)."""
    return Tenant.objects.filter(pk=tenant_id).first()


NEWEST_STEP_MODEL = "_newest_step_model"


def session_model(session: ChatSession) -> str:
    """The model the session's agent calls: the one set on the session, else the model
    of its newest LLM step (one index scan on (session, created_at)); blank if none."""
    if session.model:
        return session.model
    # Set by `turn_draft` on the instance it hands to `turn_recorded`: the turn's own
    # newest LLM step is the session's newest one, so the hook need not read it back.
    recorded = getattr(session, NEWEST_STEP_MODEL, "")
    if recorded:
        return str(recorded)
    model = (
        TurnStep.objects.filter(session=session)
        .exclude(model="")
        .order_by("-created_at")
        .values_list("model", flat=True)
        .first()
    )
    return model or ""


def session_previous(session: ChatSession) -> ChatSession | None:
    """The session `session` continues after a rotation, if it still exists."""
    if session.previous_session_id is None:
        return None
    return ChatSession.objects.filter(pk=session.previous_session_id).first()


def session_ids_unknown(*, tenant_id: int, session_ids: Iterable[uuid.UUID]) -> set[uuid.UUID]:
    """Those of `session_ids` that name no session of the tenant: missing, or another
    tenant's (indistinguishable, as for `session_get`)."""
    wanted = set(session_ids)
    if not wanted:
        return set()
    known = ChatSession.objects.filter(tenant_id=tenant_id, pk__in=wanted).values_list(
        "pk", flat=True
    )
    return wanted - set(known)


def session_ids_of_user(*, tenant_id: int, user_id: str) -> list[Any]:
    return list(
        ChatSession.objects.filter(tenant_id=tenant_id, user_id=user_id).values_list(
            "pk", flat=True
        )
    )


def session_find_resumable(
    *,
    tenant: Tenant,
    user_id: str,
    agent_id: str,
    external_session_id: str,
    now: datetime | None = None,
) -> ChatSession | None:
    """The newest session of the tenant for this user, agent and external id that can
    still take writes, or None. The user is part of the identity: an agent that numbers
    its conversations per user ("1", "2", …) must not hand one user's session (state,
    cart, turns) to another who has a conversation of the same number."""
    now = now or timezone.now()
    sessions = ChatSession.objects.filter(
        tenant=tenant,
        user_id=user_id,
        agent_id=agent_id,
        external_session_id=external_session_id,
        expires_at__gt=now,
    )
    return sessions.exclude(status__in=WRITE_CLOSED_STATUSES).order_by("-created_at").first()
