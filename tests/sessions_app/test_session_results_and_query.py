"""Seeds 002 and 003: the session shows its last results and query
history, one turn can be read, state changes are logged and rolled back as turns, and a
session's TTL defaults by provider."""

from __future__ import annotations

from datetime import datetime

import pytest
from django.test import override_settings
from rest_framework.test import APIClient

from sessions_app.services.demo_shopping import LAPTOP_QUERY
from tests.sessions_app.helpers import post_turn, turn_body
from tests.sessions_app.workspace_helpers import (
    DELL,
    HP,
    assert_error,
    create_session,
    store_laptops,
)

pytestmark = pytest.mark.django_db


def test_session_detail_shows_last_results_and_query_history(api: APIClient) -> None:
    sid = create_session(api)
    store_laptops(api, sid)
    body = api.get(f"/api/v1/sessions/{sid}").json()
    assert body["last_results"][:2] == [DELL, HP]
    assert len(body["last_results"]) == 5
    assert [entry["query"] for entry in body["query_history"]] == [LAPTOP_QUERY]


def test_one_turn_is_read_by_number_and_a_missing_one_is_404(
    api: APIClient, other_api: APIClient
) -> None:
    sid = create_session(api)
    post_turn(api, sid, turn_body(user_message="first"))
    post_turn(api, sid, turn_body(user_message="second"))
    response = api.get(f"/api/v1/sessions/{sid}/turns/2")
    assert response.status_code == 200, response.content
    turn = response.json()
    assert turn["turn_number"] == 2 and turn["user_message"] == "second"
    assert turn["kind"] == "exchange"
    assert [step["step_order"] for step in turn["steps"]] == [1, 2, 3]
    assert_error(api.get(f"/api/v1/sessions/{sid}/turns/3"), 404, "not_found")
    assert_error(other_api.get(f"/api/v1/sessions/{sid}/turns/1"), 404, "not_found")


def test_a_state_patch_is_a_turn_that_says_who_and_why_and_rolls_back(api: APIClient) -> None:
    sid = create_session(api, state={"stage": "searching", "budget": 1000})
    post_turn(api, sid, turn_body())  # turn 1, an exchange
    patched = api.patch(
        f"/api/v1/sessions/{sid}",
        {
            "state": {"stage": "checkout", "budget": 1000, "coupon": "X1"},
            "reasoning": "user confirmed the cart",
            "changed_by": "operator:ana",
        },
        format="json",
    )
    assert patched.status_code == 200, patched.content
    assert patched.json()["state"] == {"stage": "checkout", "budget": 1000, "coupon": "X1"}
    assert patched.json()["totals"]["turns"] == 2

    log = api.get(f"/api/v1/sessions/{sid}/turns").json()["results"]
    change = log[-1]
    assert change["turn_number"] == 2
    assert change["kind"] == "state_change"
    assert change["changed_by"] == "operator:ana"
    assert change["reasoning"] == "user confirmed the cart"
    assert change["state_before"] == {"stage": "searching", "budget": 1000}
    assert change["state_after"]["stage"] == "checkout"
    assert change["metadata"]["changed_keys"] == ["coupon", "stage"]
    assert change["steps"] == [] and change["cost_usd"] == "0.000000"

    rolled = api.post(f"/api/v1/sessions/{sid}/turns/2/rollback")
    assert rolled.status_code == 200, rolled.content
    assert rolled.json()["session"]["state"] == {"stage": "searching", "budget": 1000}
    assert rolled.json()["rolled_back_turns"] == [2]


def test_a_patch_without_state_logs_no_turn_and_reasoning_alone_is_400(api: APIClient) -> None:
    sid = create_session(api)
    assert (
        api.patch(f"/api/v1/sessions/{sid}", {"metadata": {"a": 1}}, format="json").status_code
        == 200
    )
    assert api.get(f"/api/v1/sessions/{sid}/turns").json()["results"] == []
    response = api.patch(f"/api/v1/sessions/{sid}", {"reasoning": "why"}, format="json")
    assert_error(response, 400, "invalid", field="reasoning")
    too_long = api.patch(
        f"/api/v1/sessions/{sid}", {"state": {}, "changed_by": "x" * 256}, format="json"
    )
    assert_error(too_long, 400, "invalid", field="changed_by")


def _ttl(api: APIClient, **fields: object) -> int:
    response = api.post(
        "/api/v1/sessions", {"user_id": "u", "agent_id": "a", **fields}, format="json"
    )
    assert response.status_code == 201, response.content
    body = response.json()
    created = datetime.fromisoformat(body["created_at"])
    assert abs((datetime.fromisoformat(body["expires_at"]) - created).total_seconds()
               - body["ttl_seconds"]) < 5  # fmt: skip
    return int(body["ttl_seconds"])


@override_settings(ENGRAM_SESSION_TTL_SECONDS=3600)
def test_ttl_defaults_by_provider_and_the_session_or_settings_override_it(
    api: APIClient, settings: object
) -> None:
    assert _ttl(api, provider="claude") == 30 * 24 * 3600
    assert _ttl(api, provider="Ollama") == 7 * 24 * 3600
    assert _ttl(api, provider="mistral") == 3600  # not in the table: the global default
    assert _ttl(api) == 3600
    assert _ttl(api, provider="claude", ttl_seconds=600) == 600  # the session's own wins
    with override_settings(ENGRAM_SESSION_TTL_BY_PROVIDER={"claude": 7200}):
        assert _ttl(api, provider="claude") == 7200
        assert _ttl(api, provider="ollama") == 3600
    assert_error(
        api.post(
            "/api/v1/sessions",
            {"user_id": "u", "agent_id": "a", "provider": "p" * 65},
            format="json",
        ),
        400,
        "invalid",
        field="provider",
    )


def test_provider_ttl_table_reads_pairs_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from config.settings.env import env_int_map

    monkeypatch.setenv("ENGRAM_TEST_MAP", "Claude=60, vllm=120,")
    assert env_int_map("ENGRAM_TEST_MAP", {"claude": 1, "ollama": 2}) == {
        "claude": 60,
        "ollama": 2,
        "vllm": 120,
    }


def test_cart_links_can_be_revoked_before_they_expire(api: APIClient, other_api: APIClient) -> None:
    from django.test import Client

    sid = create_session(api)
    store_laptops(api, sid)
    api.post(f"/api/v1/sessions/{sid}/selections", {"ref": "the first one"}, format="json")
    first = api.post(f"/api/v1/sessions/{sid}/cart-link").json()["url"].split("8000", 1)[1]
    second = api.post(f"/api/v1/sessions/{sid}/cart-link").json()["url"].split("8000", 1)[1]
    assert Client().get(first).status_code == 200

    assert_error(other_api.delete(f"/api/v1/sessions/{sid}/cart-link"), 404, "not_found")
    assert Client().get(first).status_code == 200  # another tenant revoked nothing
    assert api.delete(f"/api/v1/sessions/{sid}/cart-link").status_code == 204
    for path in (first, second):
        page = Client().get(path)
        assert page.status_code == 410  # the page says the link no longer works
        assert Client().post(path + "update", {"action": "remove", "mpn": DELL}).status_code == 410
    assert [
        line["mpn"] for line in api.get(f"/api/v1/sessions/{sid}/selections").json()["results"]
    ] == [DELL]
    fresh = api.post(f"/api/v1/sessions/{sid}/cart-link").json()["url"].split("8000", 1)[1]
    assert Client().get(fresh).status_code == 200


def test_the_resolver_handles_comparatives(api: APIClient) -> None:
    from tests.sessions_app.workspace_helpers import ASUS, LENOVO

    sid = create_session(api)
    store_laptops(api, sid)

    def resolve(ref: str) -> dict[str, object]:
        response = api.get(f"/api/v1/sessions/{sid}/resolve", {"ref": ref})
        return response.json()  # type: ignore[no-any-return]

    cheaper = resolve("is there anything cheaper than the Dell?")
    assert cheaper["rule"] == "comparative"
    assert cheaper["item"]["mpn"] == HP  # the next step down in price, 849 < 899
    assert resolve("something lighter than the first one")["item"]["mpn"] == ASUS
    assert resolve("more expensive than the HP")["item"]["mpn"] == DELL
    # Without "than", relative to the item in focus; each answer becomes the focus.
    resolve("the Dell")
    assert resolve("a lighter one")["item"]["mpn"] == ASUS  # 1.39 kg, the next below 1.86
    assert resolve("an even lighter one")["item"]["mpn"] == HP  # 1.36 kg
    nothing = api.get(f"/api/v1/sessions/{sid}/resolve", {"ref": "cheaper than the Acer"})
    assert "lower price" in assert_error(nothing, 404, "unresolved")["message"]
    added = api.post(f"/api/v1/sessions/{sid}/selections", {"ref": "add a cheaper one"},
                     format="json")  # fmt: skip
    assert added.status_code == 201, added.content
    cart = api.get(f"/api/v1/sessions/{sid}/selections").json()["results"]
    assert [line["mpn"] for line in cart] == [LENOVO]  # cheaper than the HP in focus: 799


@override_settings(ENGRAM_TURN_MAX_TOKENS=1500)
def test_a_turn_past_the_per_turn_token_ceiling_is_stored_and_flagged(api: APIClient) -> None:
    sid = create_session(api)
    step = {"step_type": "r", "model": "gpt-4o-mini", "input_tokens": 700, "output_tokens": 100}
    small = post_turn(api, sid, turn_body([step]))
    assert small.status_code == 201 and small.json()["turn"]["over_limit"] == ""
    big = post_turn(api, sid, turn_body())  # the seed's three steps: 1520 tokens
    assert big.status_code == 201, big.content
    assert big.json()["turn"]["over_limit"] == "tokens"
    assert "turn_over_limit" in [w["code"] for w in big.json()["warnings"]]
    assert api.get(f"/api/v1/sessions/{sid}/turns/2").json()["over_limit"] == "tokens"
    with override_settings(ENGRAM_TURN_MAX_TOKENS=0, ENGRAM_TURN_MAX_COST_USD=0.0001):
        costly = post_turn(api, sid, turn_body())
        assert costly.json()["turn"]["over_limit"] == "cost"
