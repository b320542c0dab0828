"""Budget pre-flight with reservations: what makes budgets hold when many agents share a
session, or a user, agent, model or tenant budget across sessions. Checking alone is a
read, so thirty agents that check at once all see the same remaining budget and all go
ahead; a reservation taken under the locks of the session's row and of every refusing
period budget that applies (locked in id order, so checks sharing budgets queue rather
than deadlock) is counted by every later check until the turn that spends it is
recorded or its lease ends. The reservation is one row, held against the session's
budget and the period budgets (`budget_ids`) at once: spending or dropping it releases
all of them, and a worker killed mid-check commits nothing and holds no lock.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from sessions_app.errors import NotFound
from sessions_app.hooks import StepUsage, price_step
from sessions_app.models import BudgetReservation, ChatSession, Tenant
from sessions_app.selectors.budgets import (
    NOTHING_HELD,
    BudgetCheck,
    Held,
    budget_check,
    reservations_held,
)
from sessions_app.selectors.sessions import session_ensure_writable, session_model
from sessions_app.selectors.spend_budgets import BudgetFigures, budgets_applying
from sessions_app.services.budget_refusals import PeriodRefusal, period_refusal
from sessions_app.services.budget_reservation_fastpath import period_budgets_reserve
from sessions_app.usage import TokenCounts

USD_RESERVATION_STEP = Decimal("0.000001")  # BudgetReservation.cost_usd's precision


@dataclass(frozen=True)
class BudgetDecision:
    session: ChatSession
    check: BudgetCheck
    held: Held  # other agents' live reservations, before this one
    reservation: BudgetReservation | None
    periods: list[BudgetFigures]  # every period budget that applies, before this one
    refusal: PeriodRefusal | None  # set when a period budget refused
    at: datetime  # when it was decided


def _has_budget(session: ChatSession) -> bool:
    return session.budget_tokens is not None or session.budget_usd is not None


def _usd_estimate(*, model: str, estimated_tokens: int, now: datetime) -> Decimal | None:
    """A USD estimate for a token estimate, when a USD limit needs one and the agent sent
    none: every token priced as output (the dearer side for every provider we price),
    rounded up, so a reservation never holds less than the call can cost."""
    if not model or not estimated_tokens:
        return None
    cost = price_step(
        StepUsage(model=model, tokens=TokenCounts(output_tokens=estimated_tokens), at=now)
    )
    return None if cost is None else cost.quantize(USD_RESERVATION_STEP, rounding="ROUND_CEILING")


def _session_for_check(
    *,
    tenant: Tenant,
    session_id: uuid.UUID | str,
    lock: bool,
    now: datetime,
    known: ChatSession | None = None,
) -> ChatSession:
    """The writable session (410 otherwise), locked when reserving. `known`, the session
    as a turn just committed it, is used as it is unless its own budget needs the lock
    (period budgets are locked by their own rows)."""
    usable = known is not None and known.tenant_id == tenant.pk and str(known.pk) == str(session_id)
    if known is not None and usable and not (lock and _has_budget(known)):
        session_ensure_writable(session=known, now=now)
        return known
    try:
        query = ChatSession.objects.filter(tenant=tenant, pk=uuid.UUID(str(session_id)))
        session = (query.select_for_update() if lock else query).get()
    except (ValueError, ChatSession.DoesNotExist) as exc:
        raise NotFound("Session not found.") from exc
    session_ensure_writable(session=session, now=now)
    return session


def _commit_without_flush() -> None:
    """A reservation lost with the database's last moments is what a killed worker
    leaves too (nothing held): no need to wait for the WAL flush under the locks."""
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL synchronous_commit = off")


def _decide(
    *,
    session: ChatSession,
    periods: list[BudgetFigures],
    estimated_tokens: int,
    estimated_usd: Decimal | None,
    held: Held,
    now: datetime,
    usd_priced: bool,
) -> tuple[BudgetCheck, PeriodRefusal | None]:
    """The session's own budget first, then the period budgets in id order."""
    check = budget_check(
        session=session, estimated_tokens=estimated_tokens, estimated_usd=estimated_usd, held=held
    )
    if not check.allowed:
        return check, None
    refusal = period_refusal(
        periods=periods, estimated_tokens=estimated_tokens, estimated_usd=estimated_usd,
        now=now, usd_priced=usd_priced,
    )  # fmt: skip
    if refusal is None:
        return check, None
    denied = BudgetCheck(
        allowed=False, reason=refusal.reason, tokens_remaining_after=check.tokens_remaining_after
    )
    return denied, refusal


def _reservation_create(
    *,
    session: ChatSession,
    tokens: int,
    usd: Decimal | None,
    held_by: list[BudgetFigures],
    lease_seconds: int | None,
    now: datetime,
) -> BudgetReservation:
    lease = lease_seconds or settings.ENGRAM_BUDGET_LEASE_SECONDS
    return BudgetReservation.objects.create(
        session=session,
        tokens=tokens,
        cost_usd=usd,
        budget_ids=[figures.budget.pk for figures in held_by],
        created_at=now,
        expires_at=now + timedelta(seconds=lease),
    )


def budget_check_reserve(
    *,
    tenant: Tenant,
    session_id: uuid.UUID | str,
    estimated_tokens: int,
    estimated_usd: Decimal | None = None,
    reserve: bool = False,
    lease_seconds: int | None = None,
    model: str | None = None,
    now: datetime | None = None,
    session: ChatSession | None = None,
) -> BudgetDecision:
    """Check the estimate against the session's budget and every period budget that
    applies to its user, agent and `model` (default: the session's), less live
    reservations; with `reserve`, hold it for `lease_seconds` when allowed, under the
    locks of the session and the refusing period budgets, so two reservations never
    both take the last of a budget. No budget applies: allowed, nothing held. `session`:
    as the caller's committed turn left it (spares reading it again). A session without
    a budget of its own reserves by the one-message fast path."""
    now = now or timezone.now()
    ask = _Ask(estimated_tokens, estimated_usd, lease_seconds, model)
    if session is None:
        session = _session_for_check(tenant=tenant, session_id=session_id, lock=False, now=now)
    if reserve and not _has_budget(session):
        return _check_reserve_periods(session=session, ask=ask, now=now)
    return _check_reserve_locked(
        tenant=tenant, session_id=session_id, ask=ask, reserve=reserve, now=now, known=session
    )


@dataclass(frozen=True)
class _Ask:
    tokens: int
    usd: Decimal | None
    lease_seconds: int | None
    model: str | None


def _check_reserve_periods(*, session: ChatSession, ask: _Ask, now: datetime) -> BudgetDecision:
    """Reserving for a session without its own budget: only period budgets hold it, and
    one message finds them, locks the refusing ones and reserves."""
    session_ensure_writable(session=session, now=now)
    model = session_model(session) if ask.model is None else ask.model
    estimate = None
    if ask.usd is None:
        estimate = _usd_estimate(model=model, estimated_tokens=ask.tokens, now=now)
    session_check = budget_check(session=session, estimated_tokens=ask.tokens)
    found = period_budgets_reserve(
        session=session, model=model, tokens=ask.tokens, usd=ask.usd, usd_estimate=estimate,
        session_ok=session_check.allowed, lease_seconds=ask.lease_seconds, now=now,
    )  # fmt: skip
    check, refusal = _decide(
        session=session, periods=found.periods, estimated_tokens=ask.tokens,
        estimated_usd=found.usd, held=NOTHING_HELD, now=now,
        usd_priced=ask.usd is None and found.usd is not None,
    )  # fmt: skip
    refusing = any(figures.refuses for figures in found.periods)
    if check.allowed != (found.reservation is not None or not refusing):
        raise RuntimeError("budget reservation: the SQL and Python rules disagree")
    return BudgetDecision(
        session=session, check=check, held=NOTHING_HELD, reservation=found.reservation,
        periods=found.periods, refusal=refusal, at=now,
    )  # fmt: skip


@transaction.atomic
def _check_reserve_locked(
    *,
    tenant: Tenant,
    session_id: uuid.UUID | str,
    ask: _Ask,
    reserve: bool,
    now: datetime,
    known: ChatSession | None,
) -> BudgetDecision:
    """The plain path: under the session's lock (when reserving against its own budget)
    and the refusing period budgets' locks, statement by statement."""
    session = _session_for_check(
        tenant=tenant, session_id=session_id, lock=reserve, now=now, known=known
    )
    model = session_model(session) if ask.model is None else ask.model
    # Everything that needs no budget lock first: checks sharing budgets queue on them.
    held = reservations_held(session=session, now=now) if _has_budget(session) else NOTHING_HELD
    if reserve:
        _commit_without_flush()
    periods = budgets_applying(
        tenant=tenant, user_id=session.user_id, agent_id=session.agent_id, model=model,
        at=now, lock=reserve,
    )  # fmt: skip
    refusing = [figures for figures in periods if figures.refuses]
    usd = ask.usd
    if usd is None and any(f.budget.limit_usd is not None for f in refusing):
        usd = _usd_estimate(model=model, estimated_tokens=ask.tokens, now=now)
    check, refusal = _decide(
        session=session, periods=periods, estimated_tokens=ask.tokens, estimated_usd=usd,
        held=held, now=now, usd_priced=ask.usd is None and usd is not None,
    )  # fmt: skip
    reservation = None
    if reserve and check.allowed and (_has_budget(session) or refusing):
        reservation = _reservation_create(
            session=session, tokens=ask.tokens, usd=usd, held_by=refusing,
            lease_seconds=ask.lease_seconds, now=now,
        )  # fmt: skip
    return BudgetDecision(
        session=session, check=check, held=held, reservation=reservation, periods=periods,
        refusal=refusal, at=now,
    )  # fmt: skip


# The named reservation if live, else the session's oldest live one; and the session's
# ended ones. One statement: it runs for every recorded turn, budget or not, since
# period budgets hold reservations of sessions that have no budget of their own.
_RELEASE_SQL = """
DELETE FROM budget_reservation
 WHERE session_id = %(session)s
   AND (expires_at <= %(now)s OR id = (
        SELECT r.id FROM budget_reservation AS r
         WHERE r.session_id = %(session)s AND r.expires_at > %(now)s
         ORDER BY (r.id = %(named)s::uuid) DESC NULLS LAST, r.created_at, r.id
         LIMIT 1))
RETURNING id
"""


def budget_reservation_release(
    *, session: ChatSession, reservation_id: uuid.UUID | None, now: datetime
) -> bool:
    """Called by `turn_record` under the session's lock: the turn spends one reservation.
    The named one if it is still live, else the session's oldest live one (an agent that
    reserved and then records its turn need not pass the id: FIFO is right when agents
    reserve one step at a time; and when a turn without an id already spent the named
    one, the turn that names it spends the one left over instead, so every turn spends
    exactly one while any is live). Ended leases of the session go at the same time.
    Deleting the reservation releases its holds on period budgets too. Answers whether
    the named reservation was one of the session's (False when none was named)."""
    with connection.cursor() as cursor:
        cursor.execute(_RELEASE_SQL, {"session": session.pk, "now": now, "named": reservation_id})
        released = {row[0] for row in cursor.fetchall()}
    return reservation_id is not None and reservation_id in released


def budget_reservations_purge(*, now: datetime | None = None, limit: int = 10_000) -> int:
    """Delete reservations whose lease ended (they no longer count; a session that never
    records again would keep them forever). Bounded per run by `limit`."""
    now = now or timezone.now()
    ended = BudgetReservation.objects.filter(expires_at__lte=now).values("pk")[:limit]
    deleted, _ = BudgetReservation.objects.filter(pk__in=ended).delete()
    return deleted
