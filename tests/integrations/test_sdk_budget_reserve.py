"""The SDK's turn block with `reserve`: the budget is checked and reserved before the
block runs, and the turn it records spends that reservation (against a live Engram)."""

from __future__ import annotations

import asyncio
from typing import Any

import engram
import pytest
from django.db.models import Sum

from sessions_app.models import BudgetReservation, BudgetSpend, ChatTurn
from sessions_app.services.api_keys import IssuedKey, tenant_get_or_create
from sessions_app.services.spend_budgets import spend_budget_create


def user_day_budget(limit_tokens: int) -> Any:
    return spend_budget_create(
        tenant=tenant_get_or_create(name="acme"), scope="user", user_id="u", period="day",
        limit_tokens=limit_tokens,
    )  # fmt: skip


def spent_tokens(budget: Any) -> int:
    return BudgetSpend.objects.filter(budget=budget).aggregate(t=Sum("tokens"))["t"] or 0


def test_a_reserving_turn_block_holds_the_budget_and_its_turn_spends_it(
    live_server: Any, live_key: IssuedKey
) -> None:
    budget = user_day_budget(2500)
    client = engram.Engram(live_server.url, live_key.secret, max_retries=0)
    session = client.create_session(user_id="u", agent_id="a")
    with session.turn(user_message="hi", reserve=1000) as turn:
        held = BudgetReservation.objects.get()
        assert turn.reservation is not None and turn.reservation["id"] == str(held.pk)
        assert held.tokens == 1000 and held.budget_ids == [budget.pk]
        turn.add_step("response", model="gpt-4o-mini", input_tokens=900, output_tokens=100)
    assert not BudgetReservation.objects.exists()  # the turn spent it
    assert spent_tokens(budget) == 1000
    # A mapping: estimate, model and lease.
    with session.turn(reserve={"estimated_tokens": 1000, "model": "gpt-4o-mini"}) as turn:
        assert (
            BudgetReservation.objects.get().expires_at > BudgetReservation.objects.get().created_at
        )
        turn.add_step("response", model="gpt-4o-mini", input_tokens=900, output_tokens=100)
    # 2000 of 2500 spent: a block that would pass the limit does not run.
    ran = []
    with pytest.raises(engram.BudgetExceeded) as refused, session.turn(reserve=1000):
        ran.append(True)
    assert not ran and refused.value.retry_after is not None and refused.value.retry_after > 0
    assert ChatTurn.objects.filter(session_id=session.id).count() == 2
    assert not BudgetReservation.objects.exists()


def test_without_a_budget_a_reserving_block_holds_nothing(
    live_server: Any, live_key: IssuedKey
) -> None:
    client = engram.Engram(live_server.url, live_key.secret, max_retries=0)
    session = client.create_session(user_id="u", agent_id="a")
    with session.turn(reserve=1000) as turn:
        turn.add_step("response", model="gpt-4o-mini", input_tokens=10, output_tokens=5)
    assert turn.reservation is None and turn.result["turn"]["turn_number"] == 1
    with pytest.raises(ValueError, match="estimated_tokens"), session.turn(reserve={}):
        pass


def test_the_async_block_reserves_the_same_way(live_server: Any, live_key: IssuedKey) -> None:
    budget = user_day_budget(1500)

    async def run() -> None:
        async with engram.AsyncEngram(live_server.url, live_key.secret, max_retries=0) as client:
            session = await client.create_session(user_id="u", agent_id="a")
            async with session.turn(reserve=1000) as turn:
                assert turn.reservation is not None
                turn.add_step("response", model="gpt-4o-mini", input_tokens=900, output_tokens=100)
            with pytest.raises(engram.BudgetExceeded):
                async with session.turn(reserve=1000):
                    pass

    asyncio.run(run())
    assert spent_tokens(budget) == 1000
    assert not BudgetReservation.objects.exists()
