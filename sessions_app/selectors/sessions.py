from __future__ import annotations

import uuid
from typing import Any

from django.db.models import QuerySet

from sessions_app.errors import NotFound
from sessions_app.models import ChatSession, Tenant


def session_list(*, tenant: Tenant) -> QuerySet[ChatSession]:
    return ChatSession.objects.filter(tenant=tenant)


def session_get(*, tenant: Tenant, session_id: Any) -> ChatSession:
    """The tenant's session, or NotFound: another tenant's id is indistinguishable from
    an id that does not exist."""
    try:
        return ChatSession.objects.get(tenant=tenant, pk=uuid.UUID(str(session_id)))
    except (ValueError, ChatSession.DoesNotExist) as exc:
        raise NotFound("Session not found.") from exc
