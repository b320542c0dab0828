"""One agent's whole loop through HTTP, across every app: a shopping conversation that
stores results, resolves "the first one", fills the cart, asks for its context, records
its turns (priced steps, an Idempotency-Key), gets memories extracted from what the user
said, finds them again in a later session, reports spend, and finally erases the user."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from rest_framework.test import APIClient

from tests.sessions_app.workspace_helpers import ACER, DELL, store_laptops

# Real commits: follow-up work (extraction, compaction, runaway checks) runs after commit.
pytestmark = pytest.mark.django_db(transaction=True)


def ok(response: Any, status: int = 200) -> Any:
    assert response.status_code == status, response.content
    return response.json()


def steps(tokens_in: int) -> list[dict[str, Any]]:
    return [
        {"step_type": "intent", "model": "gemini-1.5-flash", "input_tokens": tokens_in,
         "output_tokens": 20, "duration_ms": 150},
        {"step_type": "response", "model": "gemini-1.5-pro", "input_tokens": 4 * tokens_in,
         "output_tokens": 200, "duration_ms": 450},
    ]  # fmt: skip


def record_and_replay(
    api: APIClient, sid: str, message: str, answer: str, tokens_in: int, key: str
) -> dict[str, Any]:
    """Record a turn with an Idempotency-Key, then send it again: the replay is answered
    from the stored result."""
    body = {"user_message": message, "assistant_response": answer, "steps": steps(tokens_in)}
    url = f"/api/v1/sessions/{sid}/turns"
    first = ok(api.post(url, body, format="json", HTTP_IDEMPOTENCY_KEY=key), 201)
    replay = api.post(url, body, format="json", HTTP_IDEMPOTENCY_KEY=key)
    assert replay.status_code == 201 and replay["Idempotent-Replayed"] == "true"
    return first  # type: ignore[no-any-return]


def shop_three_turns(api: APIClient, sid: str) -> dict[str, Any]:
    """Search, "the first one", the cart; returns the last turn's answer."""
    # Turn 1: the user states a budget and a preference; the agent searches.
    store_laptops(api, sid)
    record_and_replay(
        api, sid, "Find laptops under $1000. I prefer matte screens.", "Here are 5 options…",
        150, "t1",
    )  # fmt: skip
    # Turn 2: "the first one".
    ref = ok(api.get(f"/api/v1/sessions/{sid}/resolve", {"ref": "Tell me about the first one"}))
    assert ref["item"]["mpn"] == DELL and ref["rule"] == "ordinal"
    record_and_replay(api, sid, "Tell me about the first one", "The Dell XPS 15 has…", 300, "t2")
    # Turn 3: the cart.
    ok(api.post(f"/api/v1/sessions/{sid}/selections", {"ref": "add the Dell"}, format="json"), 201)
    ok(api.post(f"/api/v1/sessions/{sid}/selections", {"ref": "the cheapest"}, format="json"), 201)
    last = record_and_replay(
        api, sid, "Add the Dell and the cheapest one", "Added both.", 200, "t3"
    )
    cart = [line["mpn"] for line in ok(api.get(f"/api/v1/sessions/{sid}/selections"))["results"]]
    assert cart == [DELL, ACER]
    return last


def assert_spend_counted_once(api: APIClient, last: dict[str, Any]) -> None:
    """Three priced turns, counted once despite the replays."""
    assert last["totals"]["turns"] == 3 and last["totals"]["calls"] == 6
    assert last["totals"]["input_tokens"] == 5 * (150 + 300 + 200)
    assert last["budget"]["exceeded"] is False
    by_model = {
        row["key"]: row for row in ok(api.get("/api/v1/usage", {"group_by": "model"}))["rows"]
    }
    assert by_model["gemini-1.5-pro"]["calls"] == 3 and by_model["gemini-1.5-flash"]["calls"] == 3
    assert by_model["gemini-1.5-pro"]["unpriced_calls"] == 0


def assert_context_holds_the_cart(api: APIClient, sid: str) -> None:
    """The context for the next call: cart, focus and the recent turns, under budget."""
    context = ok(api.get(f"/api/v1/sessions/{sid}/context",
                         {"query": "which laptop did I pick?", "budget": 1200}))  # fmt: skip
    text = "\n".join(message["content"] for message in context["messages"])
    assert context["total_tokens"] <= 1200
    assert "Dell XPS 15" in text and "Acer Swift" in text


def assert_preference_found_later(api: APIClient) -> str:
    """Long-term memory: the preference was extracted from turn 1 and is found from a new
    session of the same user, by meaning. Returns that new session's id."""
    found = ok(api.post("/api/v1/memories/search",
                        {"query": "what kind of display finish does she like?",
                         "user_id": "maria", "limit": 5}, format="json"))  # fmt: skip
    assert any("matte" in hit["memory"]["content"].lower() for hit in found["results"])
    later = ok(api.post("/api/v1/sessions", {"user_id": "maria", "agent_id": "shop"},
                        format="json"), 201)  # fmt: skip
    later_context = ok(api.get(f"/api/v1/sessions/{later['id']}/context",
                               {"query": "screen finish", "budget": 600}))  # fmt: skip
    assert "matte" in "\n".join(m["content"] for m in later_context["messages"]).lower()
    return later["id"]  # type: ignore[no-any-return]


def assert_nothing_left_about_maria(sid: str, later_id: str) -> None:
    with connection.cursor() as cursor:
        for table in ("chat_session", "turn_step", "memory"):
            cursor.execute(f"SELECT count(*) FROM {table} WHERE user_id = %s", ["maria"])  # noqa: S608
            assert cursor.fetchone() == (0,), table
        cursor.execute(
            "SELECT count(*) FROM chat_turn WHERE session_id IN (%s, %s)", [sid, later_id]
        )
        assert cursor.fetchone() == (0,)


def test_a_shopping_agent_loop_end_to_end(api: APIClient, other_api: APIClient) -> None:
    body = {"user_id": "maria", "agent_id": "shop", "budget_tokens": 100_000}
    session = ok(api.post("/api/v1/sessions", body, format="json"), 201)
    sid = session["id"]

    last = shop_three_turns(api, sid)
    assert_spend_counted_once(api, last)
    assert_context_holds_the_cart(api, sid)
    later_id = assert_preference_found_later(api)

    # Another tenant sees none of it.
    assert other_api.get(f"/api/v1/sessions/{sid}").status_code == 404
    assert other_api.get("/api/v1/usage", {"group_by": "model"}).json()["rows"] == []

    # Erasure: nothing about maria is left in any table.
    ok(api.delete("/api/v1/users/maria"))
    assert_nothing_left_about_maria(sid, later_id)
    assert api.get(f"/api/v1/sessions/{sid}").status_code == 404
