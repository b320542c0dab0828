"""Recording one turn under an `Idempotency-Key`: the use case behind
`POST /sessions/{id}/turns`, the MCP `turn_record` tool and the SDK (which posts to that
route). Every way in claims the key under the same scope and fingerprints the same body,
so a retry through any of them replays the first answer instead of counting twice."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from sessions_app.models import Tenant
from sessions_app.services.budgets import BudgetDecision, budget_check_reserve
from sessions_app.services.idempotency import (
    IdempotentOutcome,
    idempotent_execute,
    request_fingerprint,
)
from sessions_app.services.turns import TurnFields, TurnRecorded, turn_record

# A recorded turn's 201 body; `keyed` says it will be stored for replays (so it must be
# JSON-ready as a client receives it).
Render = Callable[[TurnRecorded, bool], dict[str, Any]]


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
