"""Rolling a session back to before one of its turns: state and workspace restored, the
turn and those after it marked rolled back (never deleted), under the session's lock."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from sessions_app.errors import Conflict
from sessions_app.hooks import turns_withdrawn
from sessions_app.models import ChatSession, ChatTurn, Tenant
from sessions_app.selectors.sessions import session_ensure_writable
from sessions_app.selectors.turns import turn_get
from sessions_app.services.lifecycle import session_touch
from sessions_app.services.session_locks import session_lock_for_turn
from sessions_app.services.snapshots import EMPTY_WORKSPACE, session_workspace_restore


@dataclass(frozen=True)
class RollbackResult:
    session: ChatSession
    restored_from_turn: int
    rolled_back_turns: list[int]


@transaction.atomic
def turn_rollback(
    *, tenant: Tenant, session_id: uuid.UUID | str, turn_number: int, now: datetime | None = None
) -> RollbackResult:
    """Put the session back as it was before turn n: state and workspace (focus, results,
    cart). Turns n and later are marked rolled back, never deleted; totals stay, since
    their money was spent. Later turns continue numbering after the last recorded one."""
    now = now or timezone.now()
    session = session_lock_for_turn(tenant=tenant, session_id=session_id).session
    session_ensure_writable(session=session, now=now)
    turn = turn_get(session=session, turn_number=turn_number)
    if turn.rolled_back:
        raise Conflict(f"Turn {turn_number} is already rolled back.")
    session.state = turn.state_before
    changed = ["state", *session_touch(session=session, now=now), "updated_at"]
    session.save(update_fields=changed)
    previous = (
        ChatTurn.objects.filter(session=session, turn_number__lt=turn_number, rolled_back=False)
        .order_by("-turn_number")
        .values_list("context_after", flat=True)
        .first()
    )
    session_workspace_restore(session=session, snapshot=previous or EMPTY_WORKSPACE)
    later = ChatTurn.objects.filter(
        session=session, turn_number__gte=turn_number, rolled_back=False
    )
    numbers = sorted(later.values_list("turn_number", flat=True))
    later.update(rolled_back=True, rolled_back_at=now)
    turns_withdrawn.send(
        sender=ChatTurn, tenant_id=session.tenant_id, session_ids=[session.pk], turn_numbers=numbers
    )
    session.refresh_from_db()
    return RollbackResult(
        session=session, restored_from_turn=turn_number, rolled_back_turns=numbers
    )
