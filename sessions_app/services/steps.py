"""Steps added to a turn after it was recorded: Engram's own LLM calls.

When Engram calls an LLM because of a session (an abstractive summary of its older
turns, memory extraction from one of its messages), the call is recorded as a step of
that session like any agent's (`engram.summarize`, `engram.extract`), so Engram's own
spend appears in `/usage`, the rollups, the dashboards and the session's budget. The
step is attached to the turn that caused the call (the last turn of the summarised
span, the turn the memories come from) and added to that turn's and the session's
totals, in one transaction.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.db import transaction
from django.db.models import F, Max
from django.utils import timezone

from sessions_app.models import ChatSession, ChatTurn, TurnStep
from sessions_app.selectors.budgets import budget_remaining
from sessions_app.services.turn_totals import SESSION_TOTALS, StepInput, turn_price_steps

ENGRAM_STEP_PREFIX = "engram."  # step types of Engram's own calls


@transaction.atomic
def turn_steps_append(*, turn_id: int, steps: list[StepInput]) -> list[TurnStep]:
    """Price and store `steps` after the turn's own, and add them to the turn's and the
    session's totals. An empty list when the turn is gone (its session was deleted
    since). The session's activity time and expiry do not move: this is Engram's work,
    not the agent's. A session that this spend takes past its budget is flagged
    `budget_exceeded_at`, as a recorded turn would be."""
    turn = ChatTurn.objects.filter(pk=turn_id).only("pk", "session_id").first()
    if turn is None or not steps:
        return []
    session = ChatSession.objects.select_for_update().filter(pk=turn.session_id).first()
    if session is None:
        return []
    rows = turn_price_steps(turn=turn, session=session, steps=steps, at=timezone.now())
    last = TurnStep.objects.filter(turn_id=turn.pk).aggregate(last=Max("step_order"))["last"]
    for offset, row in enumerate(rows, start=1):
        row.step_order = (last or 0) + offset
    TurnStep.objects.bulk_create(rows)

    priced = [row.cost_usd for row in rows if row.cost_usd is not None]
    sums: dict[str, Any] = {
        "input_tokens": sum(row.input_tokens for row in rows),
        "output_tokens": sum(row.output_tokens for row in rows),
        "cached_tokens": sum(row.cached_tokens for row in rows),
        "reasoning_tokens": sum(row.reasoning_tokens for row in rows),
        "cost_usd": sum(priced, Decimal(0)),
        "call_count": len(rows),
        "error_count": sum(1 for row in rows if not row.success),
        "unpriced_calls": len(rows) - len(priced),
    }
    ChatTurn.objects.filter(pk=turn.pk).update(
        **{name: F(name) + value for name, value in sums.items()}
    )
    # The session totals a turn moves, less its duration: this is Engram's time, not the
    # agent's.
    ChatSession.objects.filter(pk=session.pk).update(
        **{
            column: F(column) + sums[name]
            for column, name in SESSION_TOTALS.items()
            if name in sums
        }
    )
    session.refresh_from_db()
    if session.budget_exceeded_at is None and budget_remaining(session).exceeded:
        session.budget_exceeded_at = timezone.now()
        session.save(update_fields=["budget_exceeded_at"])
    return rows
