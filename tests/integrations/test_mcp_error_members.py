"""An MCP tool's error carries every member the REST error body has, through a real
`mcp` client over streamable HTTP: a rotated session refused by `turn_record` and by
`results_store` names its successor (`successor_session_id`), as `POST …/turns` does."""

from __future__ import annotations

from typing import Any

import anyio
import httpx

from sessions_app.services.api_keys import IssuedKey
from tests.integrations.test_mcp import data, http_session
from tests.integrations.test_mcp_results_and_errors import error_of

# 1000 tokens a turn against a threshold of 1000: the second turn rotates the session.
STEP = {"step_type": "response", "model": "gpt-4o-mini", "input_tokens": 900,
        "output_tokens": 100}  # fmt: skip
SESSION_EXPIRED_MEMBERS = ("expires_at", "session_status", "successor_session_id")


def _rotated_session(client: httpx.Client) -> str:
    made = client.post(
        "/api/v1/sessions",
        json={"user_id": "maria", "agent_id": "claude", "rotate_after_tokens": 1000},
    )
    assert made.status_code == 201, made.text
    return str(made.json()["id"])


async def _refusals(url: str, secret: str, sid: str) -> tuple[str, dict[str, Any], dict[str, Any]]:
    async with http_session(url, secret) as session:
        await session.initialize()
        turn = {"session_id": sid, "user_message": "hi", "steps": [STEP]}
        assert data(await session.call_tool("turn_record", turn))["session"]["id"] == sid
        rotated = data(await session.call_tool("turn_record", turn))["session"]["id"]
        assert rotated != sid
        refused_turn = error_of(
            await session.call_tool("turn_record", turn), *SESSION_EXPIRED_MEMBERS
        )
        store = {"session_id": sid, "query": "laptops", "items": [{"mpn": "A1"}]}
        refused_store = error_of(
            await session.call_tool("results_store", store), *SESSION_EXPIRED_MEMBERS
        )
        return rotated, refused_turn, refused_store


def test_an_mcp_call_on_a_rotated_session_names_its_successor(
    live_server: Any, live_key: IssuedKey
) -> None:
    client = httpx.Client(
        base_url=live_server.url,
        headers={"Authorization": f"Bearer {live_key.secret}"},
        timeout=30,
    )
    sid = _rotated_session(client)
    successor, refused_turn, refused_store = anyio.run(
        _refusals, f"{live_server.url}/mcp/", live_key.secret, sid
    )
    rest = client.post(
        f"/api/v1/sessions/{sid}/turns", json={"user_message": "hi", "steps": [STEP]}
    )
    assert rest.status_code == 410, rest.text
    assert refused_turn["code"] == "session_expired"
    assert refused_turn["successor_session_id"] == successor
    assert refused_turn == rest.json()["error"]
    assert refused_store["successor_session_id"] == successor
    assert refused_store["session_status"] == "archived"
