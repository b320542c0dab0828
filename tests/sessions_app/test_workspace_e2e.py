"""Acceptance 1: seed 000's laptop conversation, end to end over HTTP."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from sessions_app.services.api_keys import IssuedKey
from tests.sessions_app.workspace_helpers import ACER, DELL, create_session, store_laptops

pytestmark = pytest.mark.django_db


def test_the_laptop_conversation_remembers_first_one_and_the_cart(
    api: APIClient, issued_key: IssuedKey, make_client
) -> None:
    sid = create_session(api)
    base = f"/api/v1/sessions/{sid}"

    # Turn 1: "Find laptops under $1000" → five options, stored in order.
    stored = store_laptops(api, sid).json()
    assert [r["name"] for r in stored["results"]] == [
        "Dell XPS 15",
        "HP Spectre x360",
        "Lenovo ThinkPad",
        "Asus ZenBook",
        "Acer Swift",
    ]
    assert [r["position"] for r in stored["results"]] == [1, 2, 3, 4, 5]

    # Turn 2: "Tell me about the first one" → the Dell, which becomes the focus.
    resolved = api.get(f"{base}/resolve", {"ref": "Tell me about the first one"})
    assert resolved.status_code == 200, resolved.content
    assert resolved.json()["item"]["name"] == "Dell XPS 15"
    assert resolved.json()["rule"] == "ordinal"
    assert api.get(base).json()["focus_mpn"] == DELL

    # Turn 3: "add the Dell to my list".
    added = api.post(f"{base}/selections", {"ref": "add the Dell to my list"}, format="json")
    assert added.status_code == 201, added.content
    assert added.json()["mpn"] == DELL and added.json()["position"] == 1
    cart = api.get(f"{base}/selections").json()
    assert [line["name"] for line in cart["results"]] == ["Dell XPS 15"]

    # Turn 4: "and the cheapest one too" → the Acer Swift ($699).
    added = api.post(f"{base}/selections", {"ref": "and the cheapest one too"}, format="json")
    assert added.status_code == 201, added.content
    assert added.json()["mpn"] == ACER and added.json()["position"] == 2

    # The page refresh of seed 000: a fresh client with the same key sees the same cart.
    fresh = make_client(issued_key.secret)
    cart = fresh.get(f"{base}/selections").json()
    assert [(line["position"], line["mpn"]) for line in cart["results"]] == [(1, DELL), (2, ACER)]
    assert cart["total"] == "1598.000000"
    session = fresh.get(base).json()
    assert session["last_query"] == "Find laptops under $1000"
    assert session["focus_mpn"] == ACER  # the last item the user talked about
