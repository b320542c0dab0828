"""Optimistic concurrency on a session's state for an MCP agent, through a real `mcp`
client over streamable HTTP: `session_open` gives the state's tag (`state_etag`),
`turn_record` takes it as `if_match`, answers the new tag, and refuses a stale one with
the REST API's code (`precondition_failed`) in the MCP error shape, recording nothing,
with the current tag as the error's `state_etag` to retry with."""

from __future__ import annotations

from typing import Any

import anyio
from django.db import connection
from mcp.client.session import ClientSession

from sessions_app.models import ChatSession, ChatTurn, TurnStep
from sessions_app.selectors.session_state import state_etag
from sessions_app.services.api_keys import IssuedKey
from tests.integrations.test_mcp import data, http_session
from tests.integrations.test_mcp_results_and_errors import error_of

STEP = {"step_type": "response", "model": "gpt-4o-mini", "input_tokens": 300,
        "output_tokens": 40}  # fmt: skip
OPEN = {"agent_id": "claude", "external_session_id": "c-9", "user_id": "maria"}


async def _turn(session: ClientSession, sid: str, **arguments: Any) -> Any:
    return await session.call_tool(
        "turn_record", {"session_id": sid, "user_message": "hi", "steps": [STEP], **arguments}
    )


def _recorded(sid: str) -> tuple[Any, int, int]:
    """The state, the turns and the steps the database holds for the session."""
    turns = ChatTurn.objects.filter(session_id=sid)
    steps = TurnStep.objects.filter(turn__session_id=sid).count()
    return ChatSession.objects.get(pk=sid).state, turns.count(), steps


def _recorded_on_a_worker_thread(sid: str) -> tuple[Any, int, int]:
    """`_recorded` from a worker thread, whose connection is closed after."""
    try:
        return _recorded(sid)
    finally:
        connection.close()


async def _conditional_turns(session: ClientSession) -> str:
    await session.initialize()
    opened = data(await session.call_tool("session_open", OPEN))["session"]
    sid, first = opened["id"], opened["state_etag"]
    assert first == state_etag({})

    moved = data(await _turn(session, sid, state={"stage": "cart"}, if_match=first))
    second = moved["session"]["state_etag"]
    assert second == state_etag({"stage": "cart"}) != first
    assert data(await session.call_tool("session_open", OPEN))["session"]["state_etag"] == second

    before = await anyio.to_thread.run_sync(_recorded_on_a_worker_thread, sid)
    stale_call = await _turn(session, sid, state={"stage": "paid"}, if_match=first)
    stale = error_of(stale_call, "state_etag")
    assert stale["code"] == "precondition_failed" and list(stale["fields"]) == ["if_match"]
    # The current tag is a member of the structured error, as REST's `error.state_etag`.
    assert stale["state_etag"] == stale_call.structured_content["state_etag"] == second
    assert (
        await anyio.to_thread.run_sync(_recorded_on_a_worker_thread, sid) == before
    )  # nothing recorded
    # Retried with that tag, without reading the session again, the turn is recorded.
    retried = await _turn(session, sid, state={"stage": "paid"}, if_match=stale["state_etag"])
    assert data(retried)["session"]["state_etag"] == state_etag({"stage": "paid"})

    malformed = error_of(await _turn(session, sid, if_match="abc"))
    assert malformed["code"] == "invalid" and list(malformed["fields"]) == ["if_match"]
    third = state_etag({"stage": "paid"})
    assert data(await _turn(session, sid, if_match="*"))["session"]["state_etag"] == third
    return str(sid)


def test_an_mcp_agent_records_turns_conditional_on_the_state(
    live_server: Any, live_key: IssuedKey
) -> None:
    async def main() -> str:
        async with http_session(f"{live_server.url}/mcp/", live_key.secret) as session:
            return await _conditional_turns(session)

    sid = anyio.run(main)
    state, turns, steps = _recorded(sid)
    assert state == {"stage": "paid"} and turns == 3 and steps == 3


def test_turn_record_says_its_precondition_error_carries_the_current_tag(
    live_server: Any, live_key: IssuedKey
) -> None:
    async def main() -> str:
        async with http_session(f"{live_server.url}/mcp/", live_key.secret) as session:
            await session.initialize()
            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
            return str(tools["turn_record"].description)

    description = anyio.run(main)
    assert "precondition_failed error whose state_etag is the state's current tag" in (
        " ".join(description.split())
    )
