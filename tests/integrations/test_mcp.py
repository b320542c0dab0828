"""The MCP server through a real `mcp` client session, over both transports: stdio (a
`manage.py mcp_serve` subprocess) and streamable HTTP at `/mcp/` of the live server."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import engram
import httpx2
import pytest
from django.conf import settings
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from memory_app.api.serializers import MAX_CONTENT_CHARS
from memory_app.api.serializers_context import MAX_CONTEXT_QUERY_CHARS
from memory_app.models import MemoryType
from sessions_app.api.serializers_workspace import MAX_QUANTITY
from sessions_app.services.api_keys import IssuedKey
from sessions_app.services.demo_shopping import LAPTOP_QUERY, LAPTOPS
from tests.live_processes import database_url

TOOLS = {
    "memory_add", "memory_search", "context_get", "session_open", "turn_record",
    "resolve_reference", "results_store", "cart_add", "cart_list", "cart_remove",
    "usage_report",
}  # fmt: skip
ACER = LAPTOPS[-1]["mpn"]


def data(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    if result.structured_content is not None:
        payload = result.structured_content
        return payload.get("result", payload) if set(payload) == {"result"} else payload
    return json.loads(result.content[0].text)


async def exercise(session: ClientSession) -> dict[str, Any]:
    """Every tool once, as an agent would chain them; returns what the checks need."""
    await session.initialize()
    listed = await session.list_tools()
    tools = {tool.name: tool for tool in listed.tools}
    assert set(tools) >= TOOLS
    for name in TOOLS:
        assert tools[name].description and len(tools[name].description) > 30
        assert tools[name].input_schema["type"] == "object"
    assert "session_id" in tools["cart_add"].input_schema["required"]
    assert "step_type" in json.dumps(tools["turn_record"].input_schema)  # steps are typed
    # The tools take every memory type the REST API takes (the Literal is spelled out).
    memory_type = tools["memory_add"].input_schema["properties"]["type"]
    assert set(memory_type["enum"]) == set(MemoryType.values)
    # …and the REST API's limits, which the tools' calls go through.
    content = tools["memory_add"].input_schema["properties"]["content"]
    assert content["maxLength"] == MAX_CONTENT_CHARS
    context = tools["context_get"].input_schema["properties"]
    assert context["query"]["maxLength"] == MAX_CONTEXT_QUERY_CHARS
    assert json.dumps(tools["cart_add"].input_schema).count(f'"maximum": {MAX_QUANTITY}') == 1

    opened = data(await session.call_tool("session_open", {
        "agent_id": "claude", "external_session_id": "conv-7", "user_id": "maria"}))  # fmt: skip
    assert opened["created"] is True
    again = data(await session.call_tool("session_open", {
        "agent_id": "claude", "external_session_id": "conv-7", "user_id": "maria"}))  # fmt: skip
    assert again["created"] is False and again["session"]["id"] == opened["session"]["id"]
    sid = opened["session"]["id"]
    return {"sid": sid, "tools": tools}


TURN_ARGS = {
    "user_message": "add the cheapest", "assistant_response": "Done.",
    "idempotency_key": "mcp-turn-1",
    "steps": [{"step_type": "response", "model": "gpt-4o-mini", "input_tokens": 300,
               "output_tokens": 40, "cached_tokens": 100}],
}  # fmt: skip


async def check_cart_from_stored_results(session: ClientSession, sid: str) -> None:
    resolved = data(
        await session.call_tool("resolve_reference", {"session_id": sid, "ref": "the cheapest"})
    )
    assert resolved["item"]["mpn"] == ACER
    added = data(await session.call_tool("cart_add", {"session_id": sid, "ref": "the cheapest"}))
    assert added["added"] is True and added["line"]["mpn"] == ACER
    cart = data(await session.call_tool("cart_list", {"session_id": sid}))
    assert [line["mpn"] for line in cart["results"]] == [ACER]


async def check_turn_record_and_its_replay(session: ClientSession, sid: str) -> None:
    turn = data(await session.call_tool("turn_record", {"session_id": sid, **TURN_ARGS}))
    assert turn["turn"]["turn_number"] == 1 and turn["replayed"] is False
    replay = data(await session.call_tool("turn_record", {"session_id": sid, **TURN_ARGS}))
    assert replay["replayed"] is True and replay["totals"]["input_tokens"] == 300


async def check_memory_context_and_usage(session: ClientSession, sid: str) -> None:
    fact = {"user_id": "maria", "type": "preference", "content": "Maria prefers matte screens."}
    memory = data(await session.call_tool("memory_add", fact))
    assert memory["action"] == "created"
    found = data(
        await session.call_tool("memory_search", {"query": "screen preference", "user_id": "maria"})
    )
    assert found["results"][0]["memory"]["id"] == memory["memory"]["id"]
    context = data(await session.call_tool("context_get", {"session_id": sid, "query": "laptops"}))
    assert context["session_id"] == sid
    usage = data(await session.call_tool("usage_report", {"group_by": "session"}))
    assert usage["totals"]["input_tokens"] == 300


async def check_bad_arguments_are_tool_errors(session: ClientSession, sid: str) -> None:
    """Bad arguments are tool errors, and the session goes on working."""
    missing = await session.call_tool("cart_add", {"ref": "the cheapest"})
    assert missing.is_error
    wrong_type = await session.call_tool(
        "memory_add", {"user_id": "maria", "content": "x", "type": "mood"}
    )
    assert wrong_type.is_error
    unknown = await session.call_tool("cart_list", {"session_id": "not-a-uuid"})
    assert unknown.is_error and "not_found" in unknown.content[0].text
    unresolved = await session.call_tool(
        "resolve_reference", {"session_id": sid, "ref": "the purple one"}
    )
    assert unresolved.is_error and "unresolved" in unresolved.content[0].text
    bad_step = await session.call_tool(
        "turn_record", {"session_id": sid, "steps": [{"model": "x"}]}
    )
    assert bad_step.is_error and "step_type" in bad_step.content[0].text
    assert data(await session.call_tool("cart_list", {"session_id": sid}))["count"] == 1


async def exercise_with_results(
    session: ClientSession, store: Callable[[str], Awaitable[None]]
) -> dict[str, Any]:
    seen = await exercise(session)
    sid = seen["sid"]
    await store(sid)
    await check_cart_from_stored_results(session, sid)
    await check_turn_record_and_its_replay(session, sid)
    await check_memory_context_and_usage(session, sid)
    await check_bad_arguments_are_tool_errors(session, sid)
    return {"sid": sid}


def store_laptops_sync(url: str, key: IssuedKey, sid: str) -> None:
    """Results come from the agent's own search, stored through the REST API."""
    engram.Engram(url, key.secret).store_results(sid, query=LAPTOP_QUERY, items=LAPTOPS)


@asynccontextmanager
async def http_session(url: str, secret: str) -> AsyncIterator[ClientSession]:
    client = httpx2.AsyncClient(headers={"Authorization": f"Bearer {secret}"}, timeout=60)
    async with (
        client,
        streamable_http_client(url, http_client=client) as streams,
        ClientSession(streams[0], streams[1]) as session,
    ):
        yield session


def test_mcp_over_streamable_http(
    live_server: Any, live_key: IssuedKey, other_live_key: IssuedKey
) -> None:
    url = f"{live_server.url}/mcp/"

    async def store(sid: str) -> None:
        await anyio.to_thread.run_sync(store_laptops_sync, live_server.url, live_key, sid)

    async def main() -> str:
        async with http_session(url, live_key.secret) as session:
            seen = await exercise_with_results(session, store)
        # Another tenant's key sees none of it.
        async with http_session(url, other_live_key.secret) as foreign:
            await foreign.initialize()
            refused = await foreign.call_tool("cart_list", {"session_id": seen["sid"]})
            assert refused.is_error and "not_found" in refused.content[0].text
            usage = data(await foreign.call_tool("usage_report", {"group_by": "session"}))
            assert usage["rows"] == []
        return str(seen["sid"])

    anyio.run(main)
    bad = httpx2.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert bad.status_code == 401 and bad.json()["error"]["code"] == "not_authenticated"
    wrong = httpx2.post(url, json={}, headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401 and wrong.json()["error"]["code"] == "authentication_failed"


@pytest.mark.slow
def test_mcp_over_stdio(live_server: Any, live_key: IssuedKey) -> None:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.test",
        "DATABASE_URL": database_url(),
        "REDIS_URL": settings.REDIS_URL,
    }
    params = StdioServerParameters(
        command=sys.executable,
        args=["manage.py", "mcp_serve", "--api-key", live_key.secret],
        env=env,
        cwd=str(settings.BASE_DIR),
    )

    async def store(sid: str) -> None:
        await anyio.to_thread.run_sync(store_laptops_sync, live_server.url, live_key, sid)

    async def main() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await exercise_with_results(session, store)

    anyio.run(main)
