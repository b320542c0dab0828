"""The MCP `budget_check` tool through a real `mcp` client over streamable HTTP: it
reserves against the period budgets of the session's user, the turn recorded with
`turn_record` spends the reservation, and at the limit the tool refuses, saying when
to ask again."""

from __future__ import annotations

from typing import Any

import anyio
from django.db import connection

from sessions_app.models import BudgetReservation
from sessions_app.services.api_keys import IssuedKey, tenant_get_or_create
from sessions_app.services.spend_budgets import spend_budget_create
from tests.integrations.test_mcp import data, http_session

STEP = {"step_type": "response", "model": "gpt-4o-mini", "input_tokens": 900,
        "output_tokens": 100}  # fmt: skip


def live_reservations() -> list[Any]:
    """Read on a worker thread, whose connection is closed after (no Django request)."""
    try:
        return list(BudgetReservation.objects.values_list("pk", flat=True))
    finally:
        connection.close()


async def check_budget_check_schema(session: Any) -> None:
    tools = {tool.name: tool for tool in (await session.list_tools()).tools}
    schema = tools["budget_check"].input_schema
    assert set(schema["required"]) == {"session_id", "estimated_tokens"}


async def reserve_then_record_turn(session: Any, sid: str, budget: Any, held: list[Any]) -> None:
    """One reservation of 1000 tokens, the live reservations it leaves, then a turn."""
    check = data(
        await session.call_tool(
            "budget_check",
            {"session_id": sid, "estimated_tokens": 1000, "model": "gpt-4o-mini"},
        )
    )
    assert check["allowed"] is True and check["reservation"]["tokens"] == 1000
    assert [b["id"] for b in check["budgets"]] == [str(budget.pk)]
    held.append(await anyio.to_thread.run_sync(live_reservations))
    turn = await session.call_tool("turn_record", {"session_id": sid, "steps": [STEP]})
    assert data(turn)["turn"]["input_tokens"] == 900


async def check_refusals_at_the_limit(session: Any, sid: str) -> None:
    refused = await session.call_tool("budget_check", {"session_id": sid, "estimated_tokens": 1})
    assert refused.is_error
    text = refused.content[0].text
    assert "budget_exceeded" in text and "Ask again in" in text
    bad = await session.call_tool("budget_check", {"session_id": sid, "estimated_tokens": -5})
    assert bad.is_error and "estimated_tokens" in bad.content[0].text


async def check_foreign_key_cannot_check(url: str, secret: str, sid: str) -> None:
    """Another tenant's key cannot check this session."""
    async with http_session(url, secret) as foreign:
        await foreign.initialize()
        refused = await foreign.call_tool(
            "budget_check", {"session_id": sid, "estimated_tokens": 1}
        )
        assert refused.is_error and "not_found" in refused.content[0].text


def test_budget_check_reserves_and_the_recorded_turn_spends_it(
    live_server: Any, live_key: IssuedKey, other_live_key: IssuedKey
) -> None:
    budget = spend_budget_create(
        tenant=tenant_get_or_create(name="acme"), scope="user", user_id="maria",
        period="day", limit_tokens=2000,
    )  # fmt: skip
    url = f"{live_server.url}/mcp/"
    held: list[Any] = []

    async def main() -> None:
        async with http_session(url, live_key.secret) as session:
            await session.initialize()
            await check_budget_check_schema(session)
            sid = await open_session(session, "c-9")
            for _ in range(2):
                await reserve_then_record_turn(session, sid, budget, held)
            await check_refusals_at_the_limit(session, sid)
        await check_foreign_key_cannot_check(url, other_live_key.secret, sid)

    anyio.run(main)
    assert [len(ids) for ids in held] == [1, 1]  # one live reservation before each turn
    assert not BudgetReservation.objects.exists()  # each turn spent its own


def test_a_check_without_reserve_holds_nothing(live_server: Any, live_key: IssuedKey) -> None:
    spend_budget_create(
        tenant=tenant_get_or_create(name="acme"), scope="tenant", period="month",
        limit_tokens=10_000,
    )  # fmt: skip

    async def main() -> dict[str, Any]:
        async with http_session(f"{live_server.url}/mcp/", live_key.secret) as session:
            await session.initialize()
            opened = data(
                await session.call_tool(
                    "session_open", {"agent_id": "a", "external_session_id": "x", "user_id": "u"}
                )
            )
            args = {"session_id": opened["session"]["id"], "estimated_tokens": 500}
            return data(await session.call_tool("budget_check", {**args, "reserve": False}))

    check = anyio.run(main)
    assert check["allowed"] is True and check["reservation"] is None
    assert check["budgets"][0]["reserved_tokens"] == 0
    assert not BudgetReservation.objects.exists()


def live_reservation_ids() -> list[str]:
    return [str(pk) for pk in live_reservations()]


async def open_session(session: Any, conversation: str) -> str:
    opened = data(
        await session.call_tool(
            "session_open",
            {"agent_id": "shop", "external_session_id": conversation, "user_id": "maria"},
        )
    )
    return str(opened["session"]["id"])


def test_turn_record_spends_the_reservation_it_names(live_server: Any, live_key: IssuedKey) -> None:
    """Two reservations live: the turn naming the second spends the second, not the
    oldest (which a turn without `reservation_id` would)."""
    spend_budget_create(
        tenant=tenant_get_or_create(name="acme"), scope="user", user_id="maria",
        period="day", limit_tokens=10_000,
    )  # fmt: skip

    async def main() -> tuple[str, str, list[str]]:
        async with http_session(f"{live_server.url}/mcp/", live_key.secret) as session:
            await session.initialize()
            schema = {t.name: t for t in (await session.list_tools()).tools}["turn_record"]
            assert {"reservation_id", "reserve_next"} <= set(schema.input_schema["properties"])
            sid = await open_session(session, "c-named")
            held = []
            for _ in range(2):
                check = await session.call_tool(
                    "budget_check", {"session_id": sid, "estimated_tokens": 1000}
                )
                held.append(data(check)["reservation"]["id"])
            turn = await session.call_tool(
                "turn_record", {"session_id": sid, "steps": [STEP], "reservation_id": held[1]}
            )
            assert data(turn)["turn"]["turn_number"] == 1
            bad = await session.call_tool(
                "turn_record", {"session_id": sid, "steps": [STEP], "reservation_id": "nope"}
            )
            assert bad.is_error and "reservation_id" in bad.content[0].text
            return held[0], held[1], await anyio.to_thread.run_sync(live_reservation_ids)

    first, second, live = anyio.run(main)
    assert live == [first] and second not in live


def test_turn_record_with_reserve_next_holds_the_next_call(
    live_server: Any, live_key: IssuedKey
) -> None:
    """Each turn spends the reservation the previous one took and reserves the next call;
    at the limit the next call is refused with when to ask again, and the turn is
    stored all the same (the same service as `POST …/turns` with `reserve_next`)."""
    spend_budget_create(
        tenant=tenant_get_or_create(name="acme"), scope="user", user_id="maria",
        period="day", limit_tokens=3000,
    )  # fmt: skip
    nxt = {"estimated_tokens": 1000, "model": "gpt-4o-mini"}
    answers: list[dict[str, Any]] = []
    live: list[list[str]] = []

    async def main() -> None:
        async with http_session(f"{live_server.url}/mcp/", live_key.secret) as session:
            await session.initialize()
            sid = await open_session(session, "c-next")
            for number in range(3):
                args = {"session_id": sid, "steps": [STEP], "reserve_next": nxt,
                        "idempotency_key": f"t-{number}"}  # fmt: skip
                answers.append(data(await session.call_tool("turn_record", args)))
                live.append(await anyio.to_thread.run_sync(live_reservation_ids))
            bad = await session.call_tool(
                "turn_record",
                {"session_id": sid, "steps": [], "reserve_next": {"estimated_tokens": -1}},
            )
            assert bad.is_error and "estimated_tokens" in bad.content[0].text

    anyio.run(main)
    calls = [answer["next_call"] for answer in answers]
    assert [call["allowed"] for call in calls] == [True, True, False]
    assert [answer["turn"]["turn_number"] for answer in answers] == [1, 2, 3]
    # The only live reservation after each turn is the one its answer carries.
    assert live[:2] == [[calls[0]["reservation"]["id"]], [calls[1]["reservation"]["id"]]]
    assert calls[0]["reservation"]["tokens"] == 1000 and calls[2]["reservation"] is None
    assert "spent" in calls[2]["reason"] and calls[2]["retry_after"] >= 1
    assert live[2] == []
