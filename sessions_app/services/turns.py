"""Recording turns and rolling them back.

`turn_record` writes the turn, its steps and the session's totals in one transaction.
The session row is locked (`SELECT … FOR UPDATE`) first, so turn numbers are assigned
race-free from `last_turn_number`, and concurrent turns of one session queue up instead
of colliding on the unique (session, turn_number) constraint. Totals move with F().
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from sessions_app.errors import Conflict, InvalidInput, NotFound
from sessions_app.hooks import StepUsage, price_step, turn_recorded
from sessions_app.models import ChatSession, ChatTurn, SessionStatus, Tenant, TurnStep
from sessions_app.selectors.budgets import budget_remaining
from sessions_app.selectors.sessions import session_ensure_writable
from sessions_app.selectors.turns import turn_get
from sessions_app.services.budgets import budget_reservation_release
from sessions_app.services.lifecycle import session_touch
from sessions_app.services.snapshots import (
    EMPTY_WORKSPACE,
    session_workspace_restore,
    session_workspace_snapshot,
)
from sessions_app.usage import TokenCounts, UsageError

UNCHANGED: Any = object()
COST_PRECISION = Decimal("1e-10")  # money_field's decimal places


@dataclass(frozen=True)
class StepInput:
    """One call inside a turn, counts already normalised (see `sessions_app.usage`)."""

    step_type: str
    counts: TokenCounts
    model: str = ""
    duration_ms: int = 0
    success: bool = True
    error: str | None = None
    usage_raw: dict[str, Any] | None = None


@dataclass(frozen=True)
class TurnWarning:
    code: str
    message: str


@dataclass
class TurnRecorded:
    turn: ChatTurn
    session: ChatSession
    warnings: list[TurnWarning] = field(default_factory=list)


def _lock_session(*, tenant: Tenant, session_id: Any) -> ChatSession:
    try:
        return ChatSession.objects.select_for_update().get(
            tenant=tenant, pk=uuid.UUID(str(session_id))
        )
    except (ValueError, ChatSession.DoesNotExist) as exc:
        raise NotFound("Session not found.") from exc


def _quantize(cost: Decimal | None) -> Decimal | None:
    """To the stored precision, so that the turn's sum equals the sum of its stored steps."""
    return None if cost is None else cost.quantize(COST_PRECISION)


def _build_steps(
    *, turn: ChatTurn, session: ChatSession, steps: list[StepInput], at: datetime
) -> list[TurnStep]:
    rows = []
    for order, step in enumerate(steps, start=1):
        try:
            counts = step.counts.validate(prefix=f"steps.{order - 1}.")
        except UsageError as exc:
            raise InvalidInput(fields={exc.field: [exc.message]}) from exc
        cost = _quantize(
            price_step(
                StepUsage(
                    model=step.model,
                    input_tokens=counts.input_tokens,
                    output_tokens=counts.output_tokens,
                    cached_tokens=counts.cached_tokens,
                    cache_write_tokens=counts.cache_write_tokens,
                    reasoning_tokens=counts.reasoning_tokens,
                    at=at,
                )
            )
        )
        if cost is None and not step.model and counts == TokenCounts():
            cost = Decimal(0)  # a tool call: no LLM, nothing to price
        rows.append(
            TurnStep(
                tenant_id=session.tenant_id,
                turn=turn,
                session=session,
                user_id=session.user_id,
                agent_id=session.agent_id,
                step_order=order,
                step_type=step.step_type,
                model=step.model,
                input_tokens=counts.input_tokens,
                output_tokens=counts.output_tokens,
                cached_tokens=counts.cached_tokens,
                cache_write_tokens=counts.cache_write_tokens,
                reasoning_tokens=counts.reasoning_tokens,
                cost_usd=cost,
                price_missing=cost is None,
                duration_ms=step.duration_ms,
                success=step.success,
                error=step.error,
                usage_raw=step.usage_raw,
            )
        )
    return rows


@transaction.atomic
def turn_record(
    *,
    tenant: Tenant,
    session_id: uuid.UUID | str,
    steps: list[StepInput],
    user_message: str = "",
    assistant_response: str = "",
    intent_data: dict[str, Any] | None = None,
    reasoning: str = "",
    metadata: dict[str, Any] | None = None,
    state: dict[str, Any] = UNCHANGED,
    duration_ms: int | None = None,
    idempotency_key: str | None = None,
    reservation_id: uuid.UUID | None = None,
    now: datetime | None = None,
) -> TurnRecorded:
    """Store one turn with its steps and add them to the session's totals.

    `state`, when given, replaces the session's state (state_before/after are kept on
    the turn). A turn past the budget is still stored; the session gets
    `budget_exceeded_at` and the result a `budget_exceeded` warning. The turn spends a
    budget reservation (`reservation_id`, else the session's oldest live one). Receivers
    of `turn_recorded` hear of the turn after commit."""
    now = now or timezone.now()
    session = _lock_session(tenant=tenant, session_id=session_id)
    session_ensure_writable(session=session, now=now)
    budget_reservation_release(session=session, reservation_id=reservation_id, now=now)
    was_exceeded = budget_remaining(session).exceeded

    state_before = session.state
    state_after = state_before if state is UNCHANGED else state
    turn = ChatTurn(
        tenant_id=session.tenant_id,
        session=session,
        turn_number=session.last_turn_number + 1,  # safe: the row is locked
        user_message=user_message,
        assistant_response=assistant_response,
        intent_data=intent_data or {},
        reasoning=reasoning,
        metadata=metadata or {},
        state_before=state_before,
        state_after=state_after,
        context_after=session_workspace_snapshot(session=session),
        idempotency_key=idempotency_key,
    )
    # Steps are priced and summed before the turn is inserted, so the turn is written
    # once, with its totals (an insert then an update cost a query per turn).
    step_rows = _build_steps(turn=turn, session=session, steps=steps, at=now)
    priced = [row.cost_usd for row in step_rows if row.cost_usd is not None]
    turn.input_tokens = sum(row.input_tokens for row in step_rows)
    turn.output_tokens = sum(row.output_tokens for row in step_rows)
    turn.cached_tokens = sum(row.cached_tokens for row in step_rows)
    turn.reasoning_tokens = sum(row.reasoning_tokens for row in step_rows)
    turn.cost_usd = sum(priced, Decimal(0))
    turn.call_count = len(step_rows)
    turn.error_count = sum(1 for row in step_rows if not row.success)
    turn.unpriced_calls = len(step_rows) - len(priced)
    turn.duration_ms = (
        duration_ms if duration_ms is not None else sum(row.duration_ms for row in step_rows)
    )
    turn.save()
    TurnStep.objects.bulk_create(step_rows)  # takes turn_id from the now saved turn
    # The response lists the steps: serve them from memory, not from another query.
    turn._prefetched_objects_cache = {"steps": step_rows}  # type: ignore[attr-defined]

    session_touch(session=session, now=now)
    increments: dict[str, Any] = {
        "turn_count": 1,
        "last_turn_number": 1,
        "total_input_tokens": turn.input_tokens,
        "total_output_tokens": turn.output_tokens,
        "total_cached_tokens": turn.cached_tokens,
        "total_reasoning_tokens": turn.reasoning_tokens,
        "total_cost_usd": turn.cost_usd,
        "total_calls": turn.call_count,
        "total_errors": turn.error_count,
        "unpriced_calls": turn.unpriced_calls,
        "total_duration_ms": turn.duration_ms,
    }
    updates: dict[str, Any] = {name: F(name) + value for name, value in increments.items()}
    updates |= {
        "last_active_at": session.last_active_at,
        "expires_at": session.expires_at,
        "updated_at": now,
    }
    if state is not UNCHANGED:
        updates["state"] = state_after
    if session.status == SessionStatus.OPENED:
        updates["status"] = SessionStatus.ACTIVE
    ChatSession.objects.filter(pk=session.pk).update(**updates)
    # The row is locked until commit, so the instance can follow the same increments
    # instead of being read again.
    for name, value in increments.items():
        setattr(session, name, getattr(session, name) + value)
    for name in ("state", "status", "updated_at"):
        if name in updates:
            setattr(session, name, updates[name])

    warnings = [
        TurnWarning(
            code="price_missing",
            message=f"No price for model {row.model!r}; the step's cost is not counted.",
        )
        for row in step_rows
        if row.cost_usd is None and row.model
    ]
    if budget_remaining(session).exceeded:
        if session.budget_exceeded_at is None:
            session.budget_exceeded_at = now
            session.save(update_fields=["budget_exceeded_at"])
        warnings.append(
            TurnWarning(
                code="budget_exceeded",
                message=(
                    "The session's budget is spent"
                    + ("" if was_exceeded else " with this turn")
                    + "; the turn was stored. Check POST …/budget/check before spending more."
                ),
            )
        )
    transaction.on_commit(
        lambda: turn_recorded.send(
            sender=ChatTurn,
            turn_id=turn.pk,
            session_id=session.pk,
            tenant_id=session.tenant_id,
            turn=turn,
            session=session,
        )
    )
    return TurnRecorded(turn=turn, session=session, warnings=warnings)


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
    session = _lock_session(tenant=tenant, session_id=session_id)
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
    session.refresh_from_db()
    return RollbackResult(
        session=session, restored_from_turn=turn_number, rolled_back_turns=numbers
    )
