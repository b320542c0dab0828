"""Locking sessions for their turns: the session rows are locked (`SELECT … FOR NO KEY
UPDATE`) with their carts, in id order, so that turn numbers are assigned race-free and
two writers that share sessions queue instead of deadlocking. Used by the single turn,
the batch route, the conversation import and the rollback."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from sessions_app.errors import NotFound
from sessions_app.fastpaths import sessions_select_for_turns
from sessions_app.models import ChatSession, Tenant


@dataclass(frozen=True)
class LockedSession:
    """A session locked for recording turns, with its cart as read under the lock and
    whether it had budget reservations then."""

    session: ChatSession
    cart: list[dict[str, Any]]
    reservations_held: bool = True


def sessions_lock_for_turns(
    *, tenant: Tenant, ids: list[uuid.UUID]
) -> dict[uuid.UUID, LockedSession]:
    """Lock the tenant's sessions among `ids`, in id order (so that two writers sharing
    sessions queue instead of deadlocking), each with its cart. Unknown or foreign ids
    are absent from the answer."""
    return {
        read.session.pk: LockedSession(
            session=read.session, cart=read.cart, reservations_held=read.reservations_held
        )
        for read in sessions_select_for_turns(tenant_id=tenant.pk, ids=ids)
    }


def session_lock_for_turn(*, tenant: Tenant, session_id: Any) -> LockedSession:
    """Lock one session of the tenant for recording or rolling back a turn; NotFound
    for an id that is not a session of the tenant."""
    try:
        pk = uuid.UUID(str(session_id))
    except ValueError as exc:
        raise NotFound("Session not found.") from exc
    locked = sessions_lock_for_turns(tenant=tenant, ids=[pk]).get(pk)
    if locked is None:
        raise NotFound("Session not found.")
    return locked
