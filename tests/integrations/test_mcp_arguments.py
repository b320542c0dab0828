"""What the MCP tools take, through a real `mcp` client over streamable HTTP. Every tool
refuses an argument it does not declare, and every object argument a field it does not
declare, as the REST API refuses an unknown field (`invalid`, naming it), and its input
schema says so; an unknown tool answers the same error shape; `session_open` without an
`external_session_id` opens a new session, as `POST /sessions` does without `resume`."""

from __future__ import annotations

from typing import Any

import anyio
from mcp.client.session import ClientSession

from sessions_app.models import ChatTurn
from sessions_app.services.api_keys import IssuedKey
from tests.integrations.test_mcp import data, http_session
from tests.integrations.test_mcp_results_and_errors import error_of

STEP = {"step_type": "response", "model": "gpt-4o-mini", "input_tokens": 30}


async def _every_tool_refuses_an_unknown_argument(session: ClientSession) -> None:
    for tool in (await session.list_tools()).tools:
        assert tool.input_schema.get("additionalProperties") is False, tool.name
        refused = error_of(await session.call_tool(tool.name, {"bogus": 1}))
        assert refused["code"] == "invalid", (tool.name, refused)
        assert refused["fields"]["bogus"] == ["Unknown argument."], (tool.name, refused)
        # The message names it and lists what the tool takes, to correct the call from.
        assert "bogus" in refused["message"] and tool.name in refused["message"], refused
        for name in tool.input_schema["properties"]:
            assert name in refused["message"], (tool.name, name, refused["message"])


async def _misspelt_arguments_are_refused(session: ClientSession, sid: str) -> None:
    usage = error_of(await session.call_tool("usage_report", {"from": "garbage"}))
    assert usage["code"] == "invalid" and usage["fields"] == {"from": ["Unknown argument."]}
    assert "start" in usage["message"] and "end" in usage["message"]
    search = error_of(await session.call_tool("memory_search", {"query": "screens", "limitt": 2}))
    assert search["code"] == "invalid" and search["fields"] == {"limitt": ["Unknown argument."]}
    # A field of a step, and of the next call to reserve, is held to the same rule.
    step = error_of(
        await session.call_tool(
            "turn_record", {"session_id": sid, "steps": [{**STEP, "modle": "gpt-4o"}]}
        )
    )
    assert step["fields"] == {"steps.0.modle": ["Unknown field."]}
    reserve = error_of(
        await session.call_tool(
            "turn_record",
            {"session_id": sid, "reserve_next": {"estimated_tokens": 5, "lease": 60}},
        )
    )
    assert reserve["fields"] == {"reserve_next.lease": ["Unknown field."]}
    item = error_of(
        await session.call_tool(
            "results_store",
            {"session_id": sid, "query": "q", "items": [{"mpn": "A-1", "price": 9}]},
        )
    )
    assert item["fields"] == {"items.0.price": ["Unknown field."]}
    # Known arguments still go through.
    known = {"group_by": "day", "start": "2026-01-01"}
    usage = data(await session.call_tool("usage_report", known))
    assert usage["totals"]["input_tokens"] == 0


async def _an_unknown_tool_answers_the_error_shape(session: ClientSession) -> None:
    refused = error_of(await session.call_tool("memory_delete", {"memory_id": "x"}))
    assert refused["code"] == "not_found"
    assert refused["fields"] == {"name": ["Unknown tool."]}
    assert "memory_delete" in refused["message"] and "memory_add" in refused["message"]


async def _session_open_without_an_external_id(session: ClientSession) -> None:
    tools = {tool.name: tool for tool in (await session.list_tools()).tools}
    assert "external_session_id" not in tools["session_open"].input_schema["required"]
    plain = {"agent_id": "claude", "user_id": "maria"}
    first = data(await session.call_tool("session_open", plain))
    second = data(await session.call_tool("session_open", plain))
    assert first["created"] is True and second["created"] is True
    assert first["session"]["id"] != second["session"]["id"]
    assert first["session"]["external_session_id"] is None
    keyed = {**plain, "external_session_id": "conv-1"}
    opened = data(await session.call_tool("session_open", keyed))
    resumed = data(await session.call_tool("session_open", keyed))
    assert opened["created"] is True and resumed["created"] is False
    assert resumed["session"]["id"] == opened["session"]["id"] != first["session"]["id"]


def _run(live_server: Any, key: IssuedKey, check: Any) -> Any:
    async def main() -> Any:
        async with http_session(f"{live_server.url}/mcp/", key.secret) as session:
            await session.initialize()
            return await check(session)

    return anyio.run(main)


def test_every_tool_refuses_arguments_and_fields_it_does_not_take(
    live_server: Any, live_key: IssuedKey
) -> None:
    async def check(session: ClientSession) -> str:
        await _every_tool_refuses_an_unknown_argument(session)
        opened = await session.call_tool("session_open", {"agent_id": "claude", "user_id": "maria"})
        sid = str(data(opened)["session"]["id"])
        await _misspelt_arguments_are_refused(session, sid)
        return sid

    sid = _run(live_server, live_key, check)
    assert not ChatTurn.objects.filter(session_id=sid).exists()


def test_an_unknown_tool_is_refused_in_the_error_shape(
    live_server: Any, live_key: IssuedKey
) -> None:
    _run(live_server, live_key, _an_unknown_tool_answers_the_error_shape)


def test_session_open_opens_a_new_session_without_an_external_id(
    live_server: Any, live_key: IssuedKey
) -> None:
    _run(live_server, live_key, _session_open_without_an_external_id)
