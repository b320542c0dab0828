"""MCP `session_open` and `POST /sessions` share one live session per conversation id:
the tool resumes it (never a twin), and the route refuses a second one without `resume`."""

from __future__ import annotations

from typing import Any

import anyio
import httpx2

from sessions_app.services.api_keys import IssuedKey
from tests.integrations.test_mcp import data, http_session

OPEN = {"agent_id": "claude", "user_id": "maria", "external_session_id": "chat-1"}


def test_session_open_resumes_the_one_live_session_of_its_external_id(
    live_server: Any, live_key: IssuedKey
) -> None:
    async def main() -> list[dict[str, Any]]:
        async with http_session(f"{live_server.url}/mcp", live_key.secret) as session:
            await session.initialize()
            return [data(await session.call_tool("session_open", OPEN)) for _ in range(2)]

    first, again = anyio.run(main)
    assert first["created"] is True and again["created"] is False
    assert again["session"]["id"] == first["session"]["id"]
    headers = {"Authorization": f"Bearer {live_key.secret}"}
    created = httpx2.post(
        f"{live_server.url}/api/v1/sessions", json=OPEN, headers=headers, timeout=60
    )
    assert created.status_code == 409, created.text
    assert created.json()["error"]["session_id"] == first["session"]["id"]
    listed = httpx2.get(
        f"{live_server.url}/api/v1/sessions",
        params={"external_session_id": "chat-1"}, headers=headers, timeout=60,
    )  # fmt: skip
    assert [row["id"] for row in listed.json()["results"]] == [first["session"]["id"]]
