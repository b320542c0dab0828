"""Recording turns and rolling them back.

`turn_record` writes the turn, its steps and the session's totals in one transaction.
The session row is locked (`SELECT … FOR NO KEY UPDATE`, which also reads the cart for
the context snapshot) first, so turn numbers are assigned race-free from
`last_turn_number`, and concurrent turns of one session queue up instead of colliding
on the unique (session, turn_number) constraint. Under that lock the instance's totals
are the row's, so they are moved on in memory and written back with one fixed UPDATE
(`sessions_save_counters`, shared with the batch route).
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.db import connection, transaction
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


# The SELECT that locks sessions for recording turns, with each one's cart (`[{mpn,
# quantity, note}]` in position order) read by the same statement: most sessions have no
# cart, and a query of its own cost every turn a round trip. NO KEY UPDATE rather than
# UPDATE: it still serialises writers of the row (turn numbers stay race-free), but not
# the KEY SHARE locks that inserts referencing the session take for their foreign keys.
# Fixed SQL, so that nothing compiles it per turn.
_LOCK_SQL = """
SELECT s.*, ARRAY(
    SELECT jsonb_build_object('mpn', c.mpn, 'quantity', c.quantity, 'note', c.note)::text
      FROM session_selection AS c WHERE c.session_id = s.id ORDER BY c.position
) AS cart_json
  FROM chat_session AS s
 WHERE s.tenant_id = %s AND s.id = ANY(%s)
 ORDER BY s.id
   FOR NO KEY UPDATE OF s
"""


@dataclass(frozen=True)
class LockedSession:
    """A session locked for recording turns, with its cart as read under the lock."""

    session: ChatSession
    cart: list[dict[str, Any]]


def sessions_lock_for_turns(
    *, tenant: Tenant, ids: list[uuid.UUID]
) -> dict[uuid.UUID, LockedSession]:
    """Lock the tenant's sessions among `ids`, in id order (so that two writers sharing
    sessions queue instead of deadlocking), each with its cart. Unknown or foreign ids
    are absent from the answer."""
    return {
        session.pk: LockedSession(
            session=session,
            cart=[json.loads(row) for row in session.cart_json],  # type: ignore[attr-defined]
        )
        for session in ChatSession.objects.raw(_LOCK_SQL, [tenant.pk, ids])
    }


def _lock_session(*, tenant: Tenant, session_id: Any) -> LockedSession:
    try:
        pk = uuid.UUID(str(session_id))
    except ValueError as exc:
        raise NotFound("Session not found.") from exc
    locked = sessions_lock_for_turns(tenant=tenant, ids=[pk]).get(pk)
    if locked is None:
        raise NotFound("Session not found.")
    return locked


# What recording turns changes on a session row, and the PostgreSQL type of each.
_COUNTER_COLUMNS = {
    "turn_count": "int",
    "last_turn_number": "int",
    "total_input_tokens": "bigint",
    "total_output_tokens": "bigint",
    "total_cached_tokens": "bigint",
    "total_reasoning_tokens": "bigint",
    "total_cost_usd": "numeric",
    "total_calls": "int",
    "total_errors": "int",
    "unpriced_calls": "int",
    "total_duration_ms": "bigint",
    "last_active_at": "timestamptz",
    "expires_at": "timestamptz",
    "updated_at": "timestamptz",
    "status": "text",
    "budget_exceeded_at": "timestamptz",
}
# Built once from the constant column names above (no input reaches it).
_SAVE_COUNTERS_SQL = (
    "UPDATE chat_session AS s SET "  # noqa: S608
    + ", ".join(f"{name} = v.{name}" for name in _COUNTER_COLUMNS)
    + ", state = v.state::jsonb FROM unnest(%s::uuid[], "
    + ", ".join(f"%s::{kind}[]" for kind in _COUNTER_COLUMNS.values())
    + ", %s::text[]) AS v(id, "
    + ", ".join(_COUNTER_COLUMNS)
    + ", state) WHERE s.id = v.id"
)


def sessions_save_counters(sessions: list[ChatSession]) -> None:
    """Write what recording turns changed on these locked sessions (counters, activity,
    expiry, status, state, budget flag) in one UPDATE for all of them. The rows are
    locked by `sessions_lock_for_turns` until commit, so the values on the instances are the
    rows' values: no other writer can have moved them. A fixed statement, so that
    neither the ORM nor PostgreSQL compiles it per turn."""
    if not sessions:
        return
    params: list[Any] = [[session.pk for session in sessions]]
    params += [[getattr(session, name) for session in sessions] for name in _COUNTER_COLUMNS]
    params.append([json.dumps(session.state) for session in sessions])
    with connection.cursor() as cursor:
        cursor.execute(_SAVE_COUNTERS_SQL, params)


def _quantize(cost: Decimal | None) -> Decimal | None:
    """To the stored precision, so that the turn's sum equals the sum of its stored steps."""
    return None if cost is None else cost.quantize(COST_PRECISION)


def turn_price_steps(
    *, turn: ChatTurn, session: ChatSession, steps: list[StepInput], at: datetime
) -> list[TurnStep]:
    """The turn's step rows, priced, not saved. InvalidInput for counts that do not add
    up; nothing is written before that, so a batch can refuse just this turn."""
    rows = []
    for order, step in enumerate(steps, start=1):
        try:
            counts = step.counts.validate(prefix=f"steps.{order - 1}.")
        except UsageError as exc:
            raise InvalidInput(fields={exc.field: [exc.message]}) from exc
        cost = _quantize(price_step(StepUsage(model=step.model, tokens=counts, at=at)))
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


# The session's running totals and the turn attribute each one adds up.
SESSION_TOTALS = {
    "total_input_tokens": "input_tokens",
    "total_output_tokens": "output_tokens",
    "total_cached_tokens": "cached_tokens",
    "total_reasoning_tokens": "reasoning_tokens",
    "total_cost_usd": "cost_usd",
    "total_calls": "call_count",
    "total_errors": "error_count",
    "unpriced_calls": "unpriced_calls",
    "total_duration_ms": "duration_ms",
}


def turn_set_totals(*, turn: ChatTurn, step_rows: list[TurnStep], duration_ms: int | None) -> None:
    """The turn's totals from its priced steps (before it is inserted)."""
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


def turn_increments(turn: ChatTurn) -> dict[str, Any]:
    """What the turn adds to its session's counters."""
    return {
        "turn_count": 1,
        "last_turn_number": 1,
        **{total: getattr(turn, name) for total, name in SESSION_TOTALS.items()},
    }


def session_apply_turn(
    *, session: ChatSession, turn: ChatTurn, state: dict[str, Any], now: datetime
) -> None:
    """Move the locked session's instance on by one turn: counters, activity and expiry,
    state (unless UNCHANGED), opened -> active, and the budget flag when this turn spends
    the budget. `sessions_save_counters` writes it."""
    for name, value in turn_increments(turn).items():
        setattr(session, name, getattr(session, name) + value)
    session_touch(session=session, now=now)
    session.updated_at = now
    if state is not UNCHANGED:
        session.state = state
    if session.status == SessionStatus.OPENED:
        session.status = SessionStatus.ACTIVE
    if session.budget_exceeded_at is None and budget_remaining(session).exceeded:
        session.budget_exceeded_at = now


def turn_price_warnings(step_rows: list[TurnStep]) -> list[TurnWarning]:
    return [
        TurnWarning(
            code="price_missing",
            message=f"No price for model {row.model!r}; the step's cost is not counted.",
        )
        for row in step_rows
        if row.cost_usd is None and row.model
    ]


def budget_exceeded_warning(*, was_exceeded: bool) -> TurnWarning:
    return TurnWarning(
        code="budget_exceeded",
        message=(
            "The session's budget is spent"
            + ("" if was_exceeded else " with this turn")
            + "; the turn was stored. Check POST …/budget/check before spending more."
        ),
    )


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
    locked = _lock_session(tenant=tenant, session_id=session_id)
    session = locked.session
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
        context_after=session_workspace_snapshot(session=session, cart=locked.cart),
        idempotency_key=idempotency_key,
    )
    # Steps are priced and summed before the turn is inserted, so the turn is written
    # once, with its totals (an insert then an update cost a query per turn).
    step_rows = turn_price_steps(turn=turn, session=session, steps=steps, at=now)
    turn_set_totals(turn=turn, step_rows=step_rows, duration_ms=duration_ms)
    turn.save()
    TurnStep.objects.bulk_create(step_rows)  # takes turn_id from the now saved turn
    # The response lists the steps: serve them from memory, not from another query.
    turn._prefetched_objects_cache = {"steps": step_rows}  # type: ignore[attr-defined]

    session_apply_turn(session=session, turn=turn, state=state, now=now)
    warnings = turn_price_warnings(step_rows)
    if budget_remaining(session).exceeded:
        warnings.append(budget_exceeded_warning(was_exceeded=was_exceeded))
    sessions_save_counters([session])
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
    session = _lock_session(tenant=tenant, session_id=session_id).session
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
