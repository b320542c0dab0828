"""Seed 002: a session past its token threshold rotates. The next turn opens a
successor linked by previous_session_id, carrying state, focus, results and cart; the old
one is archived and answers 410 naming its successor; the successor's context still
finds what was said in the old one."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import override_settings
from rest_framework.test import APIClient

from tests.sessions_app.helpers import post_turn, turn_body
from tests.sessions_app.workspace_helpers import (
    DELL,
    HP,
    assert_error,
    create_session,
    store_laptops,
)

pytestmark = pytest.mark.django_db

STEP = [
    {"step_type": "response", "model": "gpt-4o-mini", "input_tokens": 600, "output_tokens": 400}
]  # fmt: skip  1000 tokens a turn


def turn(api: APIClient, sid: str, message: str, **fields: Any) -> dict[str, Any]:
    response = post_turn(api, sid, turn_body(STEP, user_message=message, **fields))
    assert response.status_code == 201, response.content
    return response.json()  # type: ignore[no-any-return]


def test_a_session_past_its_threshold_rotates_on_the_next_turn(api: APIClient) -> None:
    sid = create_session(api, rotate_after_tokens=2000, budget_tokens=10_000)
    store_laptops(api, sid)
    api.get(f"/api/v1/sessions/{sid}/resolve", {"ref": "the first one"})
    api.post(f"/api/v1/sessions/{sid}/selections", {"ref": "add the HP"}, format="json")
    turn(api, sid, "My name is Priya and I need a laptop for video editing", state={"s": 1})
    second = turn(api, sid, "the budget is strictly under 900 dollars")
    assert second["session"]["id"] == sid  # 1000 tokens before it: under the threshold
    assert second["session"]["previous_session_id"] is None

    third = turn(api, sid, "what about battery life?")  # 2000 tokens before it: rotates
    new = third["session"]["id"]
    assert new != sid and third["session"]["previous_session_id"] == sid
    assert third["turn"]["turn_number"] == 1
    assert [w["code"] for w in third["warnings"]] == ["session_rotated"]
    assert new in third["warnings"][0]["message"]

    old = api.get(f"/api/v1/sessions/{sid}").json()
    assert old["status"] == "archived" and old["totals"]["total_tokens"] == 2000
    successor = api.get(f"/api/v1/sessions/{new}").json()
    assert successor["previous_session_id"] == sid
    assert successor["state"] == {"s": 1}
    assert successor["focus_mpn"] == HP  # adding it to the cart focused it
    assert successor["last_results"][:2] == [DELL, HP]
    assert successor["budget"]["budget_tokens"] == 8000  # what was left, not a fresh 10k
    assert successor["totals"]["total_tokens"] == 1000
    cart = api.get(f"/api/v1/sessions/{new}/selections").json()["results"]
    assert [line["mpn"] for line in cart] == [HP]
    # Fetched items came along: "the second one" still resolves in the successor.
    resolved = api.get(f"/api/v1/sessions/{new}/resolve", {"ref": "the second one"}).json()
    assert resolved["item"]["mpn"] == HP

    # The old session takes no more turns and says where to go.
    error = assert_error(post_turn(api, sid, turn_body(STEP)), 410, "session_expired")
    assert error["successor_session_id"] == new

    # What was said before is still found by the successor's context.
    context = api.get(
        f"/api/v1/sessions/{new}/context", {"query": "what budget did the user give?"}
    ).json()
    included = {item["key"]: item["kind"] for item in context["included"]}
    assert f"previous:{sid}:turn:2" in included
    assert included[f"previous:{sid}:turn:2"] == "previous_turn"
    text = "\n".join(message["content"] for message in context["messages"])
    assert "strictly under 900 dollars" in text
    # Without a query nothing is paged out for dissimilarity: the first turn is there too.
    plain = api.get(f"/api/v1/sessions/{new}/context").json()
    assert "Priya" in "\n".join(message["content"] for message in plain["messages"])


@override_settings(ENGRAM_ROTATE_AFTER_TOKENS=1000, ENGRAM_ROTATE_AFTER_TOKENS_BY_AGENT={"big": 0})
def test_thresholds_come_from_the_agent_or_the_settings_and_zero_is_off(api: APIClient) -> None:
    sid = create_session(api)  # agent "shop": the global 1000
    turn(api, sid, "one")
    assert turn(api, sid, "two")["session"]["id"] != sid
    big = create_session(api, agent_id="big")  # its agent's 0: never
    for message in ("one", "two", "three"):
        assert turn(api, big, message)["session"]["id"] == big
    own = create_session(api, rotate_after_tokens=0)  # the session's own wins
    for message in ("one", "two"):
        assert turn(api, own, message)["session"]["id"] == own


@override_settings(ENGRAM_ROTATE_AFTER_TOKENS=1000)
def test_a_state_patch_does_not_rotate(api: APIClient) -> None:
    sid = create_session(api)
    turn(api, sid, "one")
    patched = api.patch(f"/api/v1/sessions/{sid}", {"state": {"a": 1}}, format="json")
    assert patched.status_code == 200 and patched.json()["id"] == sid
    bad = api.patch(f"/api/v1/sessions/{sid}", {"rotate_after_tokens": -1}, format="json")
    assert_error(bad, 400, "invalid", field="rotate_after_tokens")


def test_resume_by_identity_finds_the_successor_not_the_archived_session(
    api: APIClient,
) -> None:
    identity = {"user_id": "u1", "agent_id": "cli", "external_session_id": "conv-42",
                "resume": True, "rotate_after_tokens": 1000}  # fmt: skip
    opened = api.post("/api/v1/sessions", identity, format="json")
    assert opened.status_code == 201, opened.content
    sid = opened.json()["id"]
    turn(api, sid, "one")
    new = turn(api, sid, "two")["session"]["id"]  # rotated
    assert new != sid
    successor = api.get(f"/api/v1/sessions/{new}").json()
    assert successor["external_session_id"] == "conv-42"

    resumed = api.post("/api/v1/sessions", identity, format="json")
    assert resumed.status_code == 200, resumed.content  # found, not created
    assert resumed.json()["id"] == new
    assert resumed.json()["previous_session_id"] == sid


def _chain(api: APIClient, length: int) -> tuple[str, list[str]]:
    """A session rotated `length` times (1000 tokens a turn, threshold 1000): returns
    the newest session and its predecessors, newest first."""
    sid = create_session(api, rotate_after_tokens=1000)
    chain = [sid]
    turn(api, sid, "turn in session 0")
    for index in range(1, length + 1):
        sid = turn(api, sid, f"turn in session {index}")["session"]["id"]
        chain.append(sid)
    assert len(set(chain)) == length + 1
    return chain[-1], list(reversed(chain[:-1]))


def _predecessors_offered(context: dict[str, Any]) -> list[str]:
    keys = [item["key"] for item in [*context["included"], *context["excluded"]]]
    return sorted({key.split(":")[1] for key in keys if key.startswith("previous:")})


@override_settings(ENGRAM_CONTEXT_PREDECESSOR_DEPTH=3)
def test_predecessor_depth_is_configurable_and_bounded_by_the_budget(api: APIClient) -> None:
    newest, predecessors = _chain(api, 5)
    url = f"/api/v1/sessions/{newest}/context"
    assert _predecessors_offered(api.get(url).json()) == sorted(predecessors[:3])

    with override_settings(ENGRAM_CONTEXT_PREDECESSOR_DEPTH=5):
        deep = api.get(url).json()
    assert _predecessors_offered(deep) == sorted(predecessors)
    text = "\n".join(message["content"] for message in deep["messages"])
    assert "turn in session 0" in text  # five sessions back

    # A policy sets its own depth; the walk also stops once the lines exceed the budget.
    made = api.put("/api/v1/tenant/context-policies/deep", {"predecessor_depth": 20},
                   format="json")  # fmt: skip
    assert made.status_code == 201, made.content
    by_policy = api.get(url, {"policy": "deep"}).json()
    assert by_policy["policy"]["predecessor_depth"] == 20
    assert _predecessors_offered(by_policy) == sorted(predecessors)
    small = api.get(url, {"policy": "deep", "budget": 50}).json()
    assert 1 <= len(_predecessors_offered(small)) < 5
    assert set(_predecessors_offered(small)) <= set(predecessors[:4])
    off = api.put("/api/v1/tenant/context-policies/none", {"predecessor_depth": 0},
                  format="json")  # fmt: skip
    assert off.status_code == 201
    assert _predecessors_offered(api.get(url, {"policy": "none"}).json()) == []
