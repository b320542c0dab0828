"""`usage_report` over MCP takes GET /usage's filters (user_id, agent_id, session_id):
through a real `mcp` client over streamable HTTP, each filtered answer equals the REST
route's for the same query, another tenant's session included, and a bad filter is
refused in the API's error shape naming it, as the route refuses it."""

from __future__ import annotations

from typing import Any

import anyio
import httpx2
from django.utils import timezone
from mcp.client.session import ClientSession

from sessions_app.services.api_keys import IssuedKey
from tests.integrations.test_mcp import data, http_session
from tests.integrations.test_mcp_results_and_errors import error_of

# (user, agent, conversation, model, input tokens) of each session's one turn.
TURNS = [
    ("maria", "claude", "c-1", "gpt-4o-mini", 300),
    ("bob", "claude", "c-2", "gpt-4o", 500),
    ("maria", "helper", "c-3", "gpt-4o-mini", 70),
]


async def record(
    session: ClientSession, user: str, agent: str, conv: str, model: str, n: int
) -> str:
    opened = await session.call_tool(
        "session_open", {"agent_id": agent, "external_session_id": conv, "user_id": user}
    )
    sid = str(data(opened)["session"]["id"])
    step = {"step_type": "response", "model": model, "input_tokens": n, "output_tokens": 5}
    turn = {"session_id": sid, "user_message": "hi", "assistant_response": "hello",
            "idempotency_key": f"{conv}-1", "steps": [step]}  # fmt: skip
    data(await session.call_tool("turn_record", turn))
    return sid


def rest_usage(base: str, secret: str, arguments: dict[str, Any]) -> httpx2.Response:
    """GET /usage with the tool's arguments (`start`/`end` are the route's from/to)."""
    names = {"start": "from", "end": "to"}
    params = {names.get(key, key): value for key, value in arguments.items()}
    headers = {"Authorization": f"Bearer {secret}"}
    return httpx2.get(f"{base}/api/v1/usage", params=params, headers=headers, timeout=60)


async def check_schema(session: ClientSession) -> None:
    tools = {tool.name: tool for tool in (await session.list_tools()).tools}
    properties = tools["usage_report"].input_schema["properties"]
    for name in ("user_id", "agent_id", "session_id"):
        assert "steps" in properties[name]["description"], properties[name]
    assert '"maxLength": 255' in str(properties["user_id"]).replace("'", '"')
    assert "uuid" in str(properties["session_id"])


def test_usage_report_filters_answer_as_get_usage_does(
    live_server: Any, live_key: IssuedKey, other_live_key: IssuedKey
) -> None:
    url, base = f"{live_server.url}/mcp/", live_server.url
    window = {"start": str(timezone.now().date()), "end": str(timezone.now().date())}

    async def call(session: ClientSession, arguments: dict[str, Any]) -> Any:
        return await session.call_tool("usage_report", {**window, **arguments})

    async def main() -> None:
        async with http_session(url, other_live_key.secret) as foreign:
            await foreign.initialize()
            foreign_sid = await record(foreign, "maria", "claude", "c-9", "gpt-4o-mini", 900)
        async with http_session(url, live_key.secret) as session:
            await session.initialize()
            await check_schema(session)
            sids = [await record(session, *turn) for turn in TURNS]
            queries = [
                ({"group_by": "model", "user_id": "maria"}, {"gpt-4o-mini": 370}),
                ({"group_by": "user", "agent_id": "claude"}, {"maria": 300, "bob": 500}),
                ({"group_by": "agent", "user_id": "maria", "agent_id": "helper"}, {"helper": 70}),
                ({"group_by": "model", "session_id": sids[1]}, {"gpt-4o": 500}),
                ({"group_by": "session", "session_id": foreign_sid}, {}),
            ]
            for arguments, expected in queries:
                answer = data(await call(session, arguments))
                got = {row["key"]: row["input_tokens"] for row in answer["rows"]}
                assert got == expected, (arguments, answer)
                rest = await anyio.to_thread.run_sync(
                    rest_usage, base, live_key.secret, {**window, **arguments}
                )
                assert rest.status_code == 200 and rest.json() == answer, arguments
            bad = [
                ({"user_id": ""}, "user_id"),
                ({"user_id": "   "}, "user_id"),
                ({"agent_id": "a" * 256}, "agent_id"),
                ({"session_id": "not-a-uuid"}, "session_id"),
            ]
            for arguments, field in bad:
                refused = error_of(await call(session, {"group_by": "model", **arguments}))
                assert refused["code"] == "invalid" and list(refused["fields"]) == [field]
                rest = await anyio.to_thread.run_sync(
                    rest_usage, base, live_key.secret, {"group_by": "model", **arguments}
                )
                assert rest.status_code == 400 and list(rest.json()["error"]["fields"]) == [field]

    anyio.run(main)


def test_usage_report_refuses_a_bad_window_naming_the_tools_own_arguments(
    live_server: Any, live_key: IssuedKey
) -> None:
    """The tool's window is `start`/`end`; GET /usage's `from`/`to` never show through."""
    refusals = [
        ({"start": "not-a-date"}, "start", None),
        ({"end": "2026-13-40"}, "end", None),
        ({"start": "2026-05-02", "end": "2026-05-01"}, "start", "Must be before `end`."),
        ({"start": "2020-01-01", "end": "2026-01-01"}, "start", None),
    ]

    async def main() -> None:
        async with http_session(f"{live_server.url}/mcp/", live_key.secret) as session:
            await session.initialize()
            for arguments, field, message in refusals:
                result = await session.call_tool("usage_report", {"group_by": "day", **arguments})
                refused = error_of(result)
                assert refused["code"] == "invalid", refused
                assert list(refused["fields"]) == [field], (arguments, refused)
                assert "`from`" not in str(refused) and "`to`" not in str(refused), refused
                if message is not None:
                    assert refused["fields"][field] == [message], refused

    anyio.run(main)
