"""Budget pre-flight with reservations: what makes budgets hold when many agents share a
session. Checking alone is a read, so thirty agents that check at once all see the same
remaining budget and all go ahead; a reservation taken under the session's row lock is
counted by every later check until the turn that spends it is recorded or its lease ends.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from sessions_app.errors import NotFound
from sessions_app.models import BudgetReservation, ChatSession, Tenant
from sessions_app.selectors.budgets import (
    NOTHING_HELD,
    BudgetCheck,
    Held,
    budget_check,
    reservations_held,
)
from sessions_app.selectors.sessions import session_ensure_writable


@dataclass(frozen=True)
class BudgetDecision:
    session: ChatSession
    check: BudgetCheck
    held: Held  # other agents' live reservations, before this one
    reservation: BudgetReservation | None


def _has_budget(session: ChatSession) -> bool:
    return session.budget_tokens is not None or session.budget_usd is not None


@transaction.atomic
def budget_check_reserve(
    *,
    tenant: Tenant,
    session_id: uuid.UUID | str,
    estimated_tokens: int,
    estimated_usd: Decimal | None = None,
    reserve: bool = False,
    lease_seconds: int | None = None,
    now: datetime | None = None,
) -> BudgetDecision:
    """Check the estimate against the budget less live reservations; with `reserve`,
    hold it for `lease_seconds` when allowed. The session row is locked (as recording a
    turn locks it), so two reservations never both take the last of the budget. A
    session without a budget answers allowed and holds nothing."""
    now = now or timezone.now()
    try:
        query = ChatSession.objects.filter(tenant=tenant, pk=uuid.UUID(str(session_id)))
        session = (query.select_for_update() if reserve else query).get()
    except (ValueError, ChatSession.DoesNotExist) as exc:
        raise NotFound("Session not found.") from exc
    session_ensure_writable(session=session, now=now)
    held = reservations_held(session=session, now=now) if _has_budget(session) else NOTHING_HELD
    check = budget_check(
        session=session, estimated_tokens=estimated_tokens, estimated_usd=estimated_usd, held=held
    )
    reservation = None
    if reserve and check.allowed and _has_budget(session):
        lease = lease_seconds or settings.ENGRAM_BUDGET_LEASE_SECONDS
        reservation = BudgetReservation.objects.create(
            session=session,
            tokens=estimated_tokens,
            cost_usd=estimated_usd,
            created_at=now,
            expires_at=now + timedelta(seconds=lease),
        )
    return BudgetDecision(session=session, check=check, held=held, reservation=reservation)


def budget_reservation_release(
    *, session: ChatSession, reservation_id: uuid.UUID | None, now: datetime
) -> None:
    """Called by `turn_record` under the session's lock: the turn spends a reservation.
    The named one, else the session's oldest live one (an agent that reserved and then
    records its turn need not pass the id: FIFO is right when agents reserve one step
    at a time). Ended leases of the session go at the same time."""
    if not _has_budget(session):
        return
    spent = (
        Q(pk=reservation_id)
        if reservation_id is not None
        else Q(
            pk__in=BudgetReservation.objects.filter(session=session, expires_at__gt=now)
            .order_by("created_at", "pk")
            .values("pk")[:1]
        )
    )
    BudgetReservation.objects.filter(session=session).filter(
        spent | Q(expires_at__lte=now)
    ).delete()


def budget_reservations_purge(*, now: datetime | None = None, limit: int = 10_000) -> int:
    """Delete reservations whose lease ended (they no longer count; a session that never
    records again would keep them forever). Bounded per run by `limit`."""
    now = now or timezone.now()
    ended = BudgetReservation.objects.filter(expires_at__lte=now).values("pk")[:limit]
    deleted, _ = BudgetReservation.objects.filter(pk__in=ended).delete()
    return deleted
