"""Turns and steps for analytics tests, recorded through the real `turn_record` service
(pricing, totals, budget flag, receivers after commit), then back-dated.

`at` back-dates the rows, which the service stamps with now: replays of a night are then
possible without waiting a night. The turn is recorded at the real now (so the session's
`expires_at` stays in the future, as it would for live traffic), and only what a clock
decides is moved: the turn's and its steps' `created_at` and the session's
`last_active_at`. Back-dating happens in the same transaction as the recording, so the
`turn_recorded` receivers (run after commit) see the back-dated rows.

Costs come from the price table, as in production. The test database holds the default
prices (genai-prices, seeded after migrate); a test that wants a round cost sets an
operator's price with `set_price`, which supersedes the loaded one from now on.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from django.db import transaction
from django.utils import timezone

from analytics_app.pricing import price_table_clear
from analytics_app.services.prices import PriceEntry, prices_load
from memory_app import receivers as memory_receivers
from sessions_app.hooks import turn_recorded
from sessions_app.models import ChatSession, ChatTurn, Tenant, TurnStep
from sessions_app.services.sessions import session_create
from sessions_app.services.turn_recording import turn_record
from sessions_app.services.turn_totals import StepInput
from sessions_app.usage import TokenCounts


@dataclass(frozen=True)
class Step:
    """One LLM (or tool) call; its cost is the price table's for `model` (the default, a
    150/20-token gpt-4o-mini call, costs $0.0000345 at the loaded price)."""

    step_type: str = "intent"
    model: str = "gpt-4o-mini"
    input_tokens: int = 150
    output_tokens: int = 20
    cached_tokens: int = 0
    success: bool = True
    error: str | None = None
    duration_ms: int = 180

    def as_input(self) -> StepInput:
        return StepInput(
            step_type=self.step_type,
            model=self.model,
            counts=TokenCounts(
                input_tokens=self.input_tokens,
                output_tokens=self.output_tokens,
                cached_tokens=self.cached_tokens,
            ),
            duration_ms=self.duration_ms,
            success=self.success,
            error=self.error,
        )


def set_price(model: str, *, input_per_million: str, output_per_million: str) -> None:
    """An operator's price for `model`, valid from now on (so it wins over the loaded
    one), through the loader service; the price cache is cleared at once because a
    test's transaction never commits."""
    prices_load(
        entries=[
            PriceEntry(
                model=model,
                provider="test",
                pattern="",
                input_per_million=Decimal(input_per_million),
                cached_input_per_million=None,
                cache_write_per_million=None,
                output_per_million=Decimal(output_per_million),
                valid_from=timezone.now() - timedelta(seconds=1),
                source="admin",
            )
        ]
    )
    price_table_clear()


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
    """Record a turn with `turn_record`; with `at`, move its clock fields to `at` (steps
    1 ms apart, in order)."""
    with transaction.atomic():
        recorded = turn_record(
            tenant=session.tenant,
            session_id=session.pk,
            steps=[step.as_input() for step in steps],
            user_message=user_message,
        )
        turn = recorded.turn
        if at is not None:  # created_at is auto_now_add: back-date after the insert
            ChatTurn.objects.filter(pk=turn.pk).update(created_at=at)
            for order in range(1, len(steps) + 1):
                TurnStep.objects.filter(turn=turn, step_order=order).update(
                    created_at=at + timedelta(milliseconds=order)
                )
            ChatSession.objects.filter(pk=recorded.session.pk).update(last_active_at=at)
    session.refresh_from_db()
    return ChatTurn.objects.get(pk=turn.pk)  # as stored, back-dated


# memory_app's reactions to `turn_recorded`, as its AppConfig.ready() connects them.
MEMORY_APP_RECEIVERS = ((memory_receivers.on_turn_recorded, "memory_remember_turn"),)


@contextmanager
def without_memory_reactions() -> Iterator[None]:
    """Record turns as a deployment without memory_app would: no turn indexing, memory
    extraction or compaction after commit (they run eagerly in tests, with the real
    embedding model). For tests about spend, and for seeds whose memories are written by
    hand: memory_app's own tests cover those reactions."""
    for _, uid in MEMORY_APP_RECEIVERS:
        turn_recorded.disconnect(dispatch_uid=uid)
    try:
        yield
    finally:
        for receiver, uid in MEMORY_APP_RECEIVERS:
            turn_recorded.connect(receiver, dispatch_uid=uid)
