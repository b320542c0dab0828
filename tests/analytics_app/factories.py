"""Turns and steps for analytics tests, written the way `turn_record` writes them (turn,
steps, session totals with F(), one transaction), until that service lands on this branch.
`at` back-dates the rows, which the real service stamps with now: replays of a night are
then possible without waiting a night."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from django.db import transaction
from django.db.models import F

from sessions_app.models import ChatSession, ChatTurn, Tenant, TurnStep
from sessions_app.services.sessions import session_create


@dataclass(frozen=True)
class Step:
    step_type: str = "intent"
    model: str = "gpt-4o-mini"
    input_tokens: int = 150
    output_tokens: int = 20
    cached_tokens: int = 0
    cost_usd: Decimal | None = Decimal("0.0000345")
    success: bool = True
    error: str | None = None
    duration_ms: int = 180


def make_session(
    tenant: Tenant, *, user_id: str = "u1", agent_id: str = "shop", **kw: Any
) -> ChatSession:
    return session_create(tenant=tenant, user_id=user_id, agent_id=agent_id, **kw)


def record_turn(
    session: ChatSession,
    steps: list[Step],
    *,
    at: datetime | None = None,
    user_message: str = "hello",
) -> ChatTurn:
    with transaction.atomic():
        locked = ChatSession.objects.select_for_update().get(pk=session.pk)
        priced = [s.cost_usd for s in steps if s.cost_usd is not None]
        totals = {
            "input_tokens": sum(s.input_tokens for s in steps),
            "output_tokens": sum(s.output_tokens for s in steps),
            "cached_tokens": sum(s.cached_tokens for s in steps),
            "cost_usd": sum(priced, Decimal(0)),
            "call_count": len(steps),
            "error_count": sum(not s.success for s in steps),
            "unpriced_calls": sum(s.cost_usd is None for s in steps),
        }
        turn = ChatTurn.objects.create(
            tenant_id=locked.tenant_id,
            session=locked,
            turn_number=locked.last_turn_number + 1,
            user_message=user_message,
            **totals,
        )
        TurnStep.objects.bulk_create(
            TurnStep(
                tenant_id=locked.tenant_id,
                turn=turn,
                session=locked,
                user_id=locked.user_id,
                agent_id=locked.agent_id,
                step_order=order,
                step_type=s.step_type,
                model=s.model,
                input_tokens=s.input_tokens,
                output_tokens=s.output_tokens,
                cached_tokens=s.cached_tokens,
                cost_usd=s.cost_usd,
                price_missing=s.cost_usd is None,
                duration_ms=s.duration_ms,
                success=s.success,
                error=s.error,
            )
            for order, s in enumerate(steps, start=1)
        )
        if at is not None:  # created_at is auto_now_add: back-date after the insert
            ChatTurn.objects.filter(pk=turn.pk).update(created_at=at)
            for order in range(1, len(steps) + 1):
                TurnStep.objects.filter(turn=turn, step_order=order).update(
                    created_at=at + timedelta(milliseconds=order)
                )
        ChatSession.objects.filter(pk=locked.pk).update(
            turn_count=F("turn_count") + 1,
            last_turn_number=F("last_turn_number") + 1,
            total_input_tokens=F("total_input_tokens") + totals["input_tokens"],
            total_output_tokens=F("total_output_tokens") + totals["output_tokens"],
            total_cached_tokens=F("total_cached_tokens") + totals["cached_tokens"],
            total_cost_usd=F("total_cost_usd") + totals["cost_usd"],
            total_calls=F("total_calls") + totals["call_count"],
            total_errors=F("total_errors") + totals["error_count"],
            unpriced_calls=F("unpriced_calls") + totals["unpriced_calls"],
            last_active_at=at or F("last_active_at"),
        )
    session.refresh_from_db()
    return turn
