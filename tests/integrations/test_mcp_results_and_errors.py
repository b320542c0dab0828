"""An MCP-only agent through a real `mcp` client over streamable HTTP: it stores its
search's results with `results_store`, resolves references and fills the cart against
them and takes an item out with `cart_remove`, without the REST API; and every refused
call, bad arguments included, answers the REST API's error `{code, message, fields}`
as JSON text and as structured content."""

from __future__ import annotations

import json
from typing import Any

import anyio
from mcp.client.session import ClientSession

from sessions_app.services.api_keys import IssuedKey
from sessions_app.services.demo_shopping import LAPTOP_FILTERS, LAPTOP_QUERY, LAPTOPS
from tests.integrations.test_mcp import data, http_session

ACER = LAPTOPS[-1]["mpn"]  # the cheapest
FIRST = LAPTOPS[0]["mpn"]


def error_of(result: Any, *extra: str) -> dict[str, Any]:
    """A refused call's error: its text is the JSON of its structured content, the REST
    error's `code`, `message` and `fields` and only the `extra` members named."""
    assert result.is_error, result.content
    text = result.content[0].text
    assert "errors.pydantic.dev" not in text and "Error executing tool" not in text, text
    body = json.loads(text)
    assert result.structured_content == body
    assert set(body) == {"code", "message", "fields", *extra}
    return body  # type: ignore[no-any-return]


async def open_session(session: ClientSession) -> str:
    await session.initialize()
    opened = await session.call_tool(
        "session_open", {"agent_id": "claude", "external_session_id": "c-1", "user_id": "maria"}
    )
    return str(data(opened)["session"]["id"])


async def shop_without_rest(session: ClientSession, sid: str) -> None:
    stored = data(
        await session.call_tool(
            "results_store",
            {"session_id": sid, "query": LAPTOP_QUERY, "filters": LAPTOP_FILTERS, "items": LAPTOPS},
        )
    )
    assert stored["last_results"] == [item["mpn"] for item in LAPTOPS]
    assert stored["last_query"] == LAPTOP_QUERY and len(stored["results"]) == len(LAPTOPS)
    cheapest = await session.call_tool(
        "resolve_reference", {"session_id": sid, "ref": "the cheapest"}
    )
    assert data(cheapest)["item"]["mpn"] == ACER
    for ref in ("the cheapest", "the first one"):
        assert data(await session.call_tool("cart_add", {"session_id": sid, "ref": ref}))["added"]
    left = data(await session.call_tool("cart_remove", {"session_id": sid, "mpn": ACER}))
    assert left["removed"] == ACER
    assert [line["mpn"] for line in left["results"]] == [FIRST] and left["count"] == 1
    cart = data(await session.call_tool("cart_list", {"session_id": sid}))
    assert [(line["mpn"], line["position"]) for line in cart["results"]] == [(FIRST, 1)]
    again = error_of(await session.call_tool("cart_remove", {"session_id": sid, "mpn": ACER}))
    assert again["code"] == "not_in_cart"


async def check_argument_errors(session: ClientSession, sid: str) -> None:
    missing = error_of(await session.call_tool("cart_add", {"ref": "the cheapest"}))
    assert missing["code"] == "invalid" and missing["message"] == "Invalid arguments."
    assert list(missing["fields"]) == ["session_id"]
    wrong = error_of(
        await session.call_tool("memory_add", {"user_id": "maria", "content": "x", "type": "mood"})
    )
    assert wrong["code"] == "invalid" and list(wrong["fields"]) == ["type"]
    no_mpn = error_of(
        await session.call_tool(
            "results_store", {"session_id": sid, "query": "q", "items": [{"name": "A laptop"}]}
        )
    )
    assert no_mpn["code"] == "invalid" and list(no_mpn["fields"]) == ["items.0.mpn"]
    bad_step = error_of(
        await session.call_tool("turn_record", {"session_id": sid, "steps": [{"model": "x"}]})
    )
    assert list(bad_step["fields"]) == ["steps.0.step_type"]
    # What the REST serializer refuses comes in the same shape.
    blank = error_of(
        await session.call_tool(
            "results_store", {"session_id": sid, "query": "q", "items": [{"mpn": ""}]}
        )
    )
    assert blank["code"] == "invalid" and "items" in json.dumps(blank["fields"])
    unknown = error_of(await session.call_tool("cart_list", {"session_id": "not-a-uuid"}))
    assert unknown["code"] == "not_found"


def test_an_mcp_only_agent_stores_results_and_manages_the_cart(
    live_server: Any, live_key: IssuedKey, other_live_key: IssuedKey
) -> None:
    url = f"{live_server.url}/mcp/"

    async def main() -> None:
        async with http_session(url, live_key.secret) as session:
            sid = await open_session(session)
            await shop_without_rest(session, sid)
            await check_argument_errors(session, sid)
        async with http_session(url, other_live_key.secret) as foreign:
            await foreign.initialize()
            refused = await foreign.call_tool(
                "results_store", {"session_id": sid, "query": "q", "items": []}
            )
            assert error_of(refused)["code"] == "not_found"
            removed = await foreign.call_tool("cart_remove", {"session_id": sid, "mpn": FIRST})
            assert error_of(removed)["code"] == "not_found"

    anyio.run(main)
