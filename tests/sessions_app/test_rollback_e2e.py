"""Rollback through HTTP over seed 000's conversation: the agent acts during a turn
(stores results, resolves, fills the cart) and records the turn at its end; rolling back
turn n undoes state, focus, results and cart changes made during turns n and later."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from tests.sessions_app.helpers import post_turn, turn_body
from tests.sessions_app.workspace_helpers import ACER, DELL, create_session, store_laptops

pytestmark = pytest.mark.django_db


def view(api: APIClient, sid: str) -> dict[str, Any]:
    session = api.get(f"/api/v1/sessions/{sid}").json()
    cart = api.get(f"/api/v1/sessions/{sid}/selections").json()["results"]
    return {
        "focus": session["focus_mpn"],
        "query": session["last_query"],
        "cart": [line["mpn"] for line in cart],
        "state": session["state"],
    }


def test_rollback_undoes_what_each_turn_did_to_focus_results_and_cart(api: APIClient) -> None:
    sid = create_session(api)
    store_laptops(api, sid)
    post_turn(api, sid, turn_body(state={"stage": "searching"}))  # turn 1
    ref = api.get(f"/api/v1/sessions/{sid}/resolve", {"ref": "Tell me about the first one"})
    assert ref.json()["item"]["mpn"] == DELL
    post_turn(api, sid, turn_body(state={"stage": "detail"}))  # turn 2
    added = api.post(f"/api/v1/sessions/{sid}/selections", {"ref": "add the Dell"}, format="json")
    assert added.status_code == 201
    post_turn(api, sid, turn_body(state={"stage": "cart"}))  # turn 3
    api.post(f"/api/v1/sessions/{sid}/selections", {"ref": "the cheapest one too"}, format="json")
    post_turn(api, sid, turn_body(state={"stage": "cart"}))  # turn 4
    assert view(api, sid)["cart"] == [DELL, ACER] and view(api, sid)["focus"] == ACER

    assert api.post(f"/api/v1/sessions/{sid}/turns/4/rollback").status_code == 200
    assert view(api, sid) == {
        "focus": DELL,
        "query": "Find laptops under $1000",
        "cart": [DELL],
        "state": {"stage": "cart"},
    }

    assert api.post(f"/api/v1/sessions/{sid}/turns/2/rollback").status_code == 200
    after = view(api, sid)
    assert after == {
        "focus": None,
        "query": "Find laptops under $1000",
        "cart": [],
        "state": {"stage": "searching"},
    }
    # The results of turn 1 still resolve "the first one".
    again = api.get(f"/api/v1/sessions/{sid}/resolve", {"ref": "the first one"})
    assert again.json()["item"]["mpn"] == DELL

    assert api.post(f"/api/v1/sessions/{sid}/turns/1/rollback").status_code == 200
    assert view(api, sid) == {"focus": None, "query": None, "cart": [], "state": {}}
