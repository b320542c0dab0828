"""Recording one turn: `turn_record` writes the turn, its steps and the session's totals
in one transaction, and `turn_record_idempotent` runs it under an `Idempotency-Key`: the
use case behind `POST /sessions/{id}/turns`, the MCP `turn_record` tool and the SDK
(which posts to that route). Every way in claims the key under the same scope and
fingerprints the same body, so a retry through any of them replays the first answer
instead of counting twice.

`turn_record` locks the session row first (`SELECT … FOR NO KEY UPDATE`, which also reads
the cart for the context snapshot), so concurrent turns of one session queue up instead
of colliding on the unique (session, turn_number) constraint; what it decides for the
turn is `turn_draft`'s, shared with the batch route."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.db import transaction
from django.utils import timezone

from sessions_app.fastpaths import sessions_save_counters
from sessions_app.models import ChatSession, ChatTurn, Tenant, TurnKind
from sessions_app.services.budgets import BudgetDecision, budget_check_reserve
from sessions_app.services.idempotency import (
    IdempotentOutcome,
    idempotent_execute,
    request_fingerprint,
)
from sessions_app.services.session_locks import session_lock_for_turn
from sessions_app.services.spend_budgets import period_budgets_spend
from sessions_app.services.turn_drafts import (
    UNCHANGED,
    TurnFields,
    turn_announce,
    turn_draft,
    turns_insert,
)
from sessions_app.services.turn_totals import StepInput, TurnWarning, spend_budget_warnings


@dataclass
class TurnRecorded:
    """A recorded turn, the session it went into (a successor after rotation) and the
    warnings it raised."""

    turn: ChatTurn
    session: ChatSession
    warnings: list[TurnWarning] = field(default_factory=list)


# A recorded turn's 201 body; `keyed` says it will be stored for replays (so it must be
# JSON-ready as a client receives it).
Render = Callable[[TurnRecorded, bool], dict[str, Any]]


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
    kind: str = TurnKind.EXCHANGE,
    changed_by: str = "",
    reservation_id: uuid.UUID | None = None,
    occurred_at: datetime | None = None,
    if_match: list[str] | None = None,
    now: datetime | None = None,
) -> TurnRecorded:
    """Store one turn with its steps and add them to the session's totals.

    `state`, when given, replaces the session's state (state_before/after are kept on
    the turn). A turn past the budget is still stored; the session gets
    `budget_exceeded_at` and the result a `budget_exceeded` warning. The turn spends a
    budget reservation (`reservation_id`, else the session's oldest live one). What is
    decided for the turn is `turn_draft`'s, shared with the batch route. Receivers of
    `turn_recorded` hear of the turn after commit.

    `if_match` (entity tags or `*`, from the If-Match header): the turn is recorded only
    if the session's state still has one of these tags, checked under the session's
    lock, else PreconditionFailed (412) and nothing is written: no turn, steps, spend,
    reservation release or state. It is checked whether or not the turn carries `state`:
    the client made the turn conditional on the state it read (a turn without `state`
    may still have been decided from it). None: no check."""
    fields = TurnFields(
        steps=steps,
        user_message=user_message,
        assistant_response=assistant_response,
        intent_data=intent_data,
        reasoning=reasoning,
        metadata=metadata,
        state=state,
        duration_ms=duration_ms,
        reservation_id=reservation_id,
        kind=kind,
        changed_by=changed_by,
        occurred_at=occurred_at,
        if_match=if_match,
    )
    return _turn_record_locked(
        tenant=tenant,
        session_id=session_id,
        fields=fields,
        idempotency_key=idempotency_key,
        now=now or timezone.now(),
    )


def _turn_record_locked(
    *,
    tenant: Tenant,
    session_id: uuid.UUID | str,
    fields: TurnFields,
    idempotency_key: str | None,
    now: datetime,
) -> TurnRecorded:
    """`turn_record`'s work inside its transaction: lock the session, draft the turn,
    write it with its steps, the session's counters and the period budgets' spend, and
    announce it after commit."""
    locked = session_lock_for_turn(tenant=tenant, session_id=session_id)
    draft = turn_draft(
        tenant=tenant,
        session=locked.session,
        cart=locked.cart,
        fields=fields,
        idempotency_key=idempotency_key,
        now=now,
        reservations_held=locked.reservations_held,
    )
    turns_insert([draft], now=now)
    sessions_save_counters([draft.session])
    passed = period_budgets_spend(tenant_id=tenant.pk, steps=draft.steps, at=now)
    draft.warnings.extend(spend_budget_warnings(passed))
    turn, session = draft.turn, draft.session
    transaction.on_commit(lambda: turn_announce(turn=turn, session=session))
    return TurnRecorded(turn=turn, session=session, warnings=draft.warnings)


def turn_idempotency_scope(session_id: uuid.UUID | str) -> str:
    """The scope a turn's key is claimed under: the single route's, whatever the way in
    (the batch route uses it too), so a key replays across all of them."""
    return f"POST /sessions/{session_id}/turns"


def turn_record_idempotent(
    *,
    tenant: Tenant,
    session_id: uuid.UUID | str,
    fields: TurnFields,
    idempotency_key: str | None,
    request_body: Any,
    render: Render,
) -> IdempotentOutcome:
    """Record the turn at most once per key: the first call records it and answers 201
    with `render`'s body (stored with the key); a retry with the same body replays that
    answer; another body under the same key is `idempotency_key_reused`. `request_body`
    is the body as the client sent it (its canonical JSON is the fingerprint)."""
    keyed = idempotency_key is not None

    def work() -> tuple[int, dict[str, Any]]:
        recorded = turn_record(
            tenant=tenant,
            session_id=session_id,
            idempotency_key=idempotency_key,
            **{field.name: getattr(fields, field.name) for field in dataclasses.fields(fields)},
        )
        return 201, render(recorded, keyed)

    return idempotent_execute(
        tenant=tenant,
        key=idempotency_key,
        scope=turn_idempotency_scope(session_id),
        request_hash=request_fingerprint(request_body) if keyed else "",
        work=work,
        session_id=session_id,
    )


@dataclass(frozen=True)
class NextCall:
    """What the agent's next call is about to spend, to reserve with the turn."""

    estimated_tokens: int
    estimated_usd: Decimal | None = None
    model: str | None = None
    lease_seconds: int | None = None


def turn_record_reserving_next(
    *,
    tenant: Tenant,
    session_id: uuid.UUID | str,
    fields: TurnFields,
    idempotency_key: str | None,
    request_body: Any,
    render: Render,
    next_call: NextCall,
) -> tuple[IdempotentOutcome, BudgetDecision | None]:
    """Record the turn (as `turn_record_idempotent`, which spends the reservation it
    held, in its transaction), then check and reserve the next call's estimate in the
    session the turn left (a successor after rotation), in a transaction of its own:
    the budgets' locks are held for the reservation alone, never across the turn's
    commit. A replayed turn reserves afresh (the first answer's reservation is spent
    or ends with its lease). No decision when the turn was not stored."""
    recorded: list[TurnRecorded] = []

    def render_keeping(result: TurnRecorded, keyed: bool) -> dict[str, Any]:
        recorded.append(result)
        return render(result, keyed)

    outcome = turn_record_idempotent(
        tenant=tenant,
        session_id=session_id,
        fields=fields,
        idempotency_key=idempotency_key,
        request_body=request_body,
        render=render_keeping,
    )
    if outcome.status != 201:
        return outcome, None
    decision = budget_check_reserve(
        tenant=tenant,
        session_id=outcome.body["session"]["id"],
        session=recorded[0].session if recorded else None,
        estimated_tokens=next_call.estimated_tokens,
        estimated_usd=next_call.estimated_usd,
        reserve=True,
        lease_seconds=next_call.lease_seconds,
        model=next_call.model,
    )
    return outcome, decision
