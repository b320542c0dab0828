"""MCP clients are often configured with `http://host/mcp`: that URL serves the endpoint
itself (a redirect to `/mcp/` would come back as a GET, which MCP refuses), and only
`/mcp/` is documented."""

from __future__ import annotations

from typing import Any

import anyio
import httpx2

from sessions_app.services.api_keys import IssuedKey
from tests.integrations.test_mcp import data, http_session


def test_mcp_without_the_trailing_slash_serves_the_endpoint(
    live_server: Any, live_key: IssuedKey
) -> None:
    url = f"{live_server.url}/mcp"

    async def main() -> None:
        async with http_session(url, live_key.secret) as session:
            await session.initialize()
            tools = {tool.name for tool in (await session.list_tools()).tools}
            assert "session_open" in tools
            opened = await session.call_tool(
                "session_open", {"agent_id": "claude", "user_id": "maria"}
            )
            assert data(opened)["created"] is True

    anyio.run(main)
    headers = {"Authorization": f"Bearer {live_key.secret}", "Accept": "application/json"}
    message = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    posted = httpx2.post(url, json=message, headers=headers, timeout=60)
    assert posted.status_code == 200 and posted.json()["id"] == 1, posted.text
    got = httpx2.get(url, headers=headers, timeout=60)
    assert got.status_code == 405 and got.json()["error"]["code"], got.text
    anonymous = httpx2.post(url, json=message, timeout=60)
    assert anonymous.status_code == 401
    assert anonymous.json()["error"]["code"] == "not_authenticated"
    schema = httpx2.get(f"{live_server.url}/api/schema/", headers={"Accept": "application/json"})
    assert "/mcp/" in schema.json()["paths"] and "/mcp" not in schema.json()["paths"]
