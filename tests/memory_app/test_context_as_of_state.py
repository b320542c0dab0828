"""A context asked in the past (`as_of`) shows the session's state, focus, results and
cart as they stood then, the version the turn log keeps; what has no version then is
listed as left out with reason `no_history`, never shown as it is today."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from sessions_app.models import SessionComponent
from sessions_app.services.demo_shopping import LAPTOPS
from tests.sessions_app.workspace_helpers import DELL, HP, store_laptops

pytestmark = pytest.mark.django_db

STEP = [{"step_type": "response", "input_tokens": 5, "output_tokens": 5}]


def _session(api: APIClient, state: dict[str, Any]) -> str:
    body = {"user_id": "ana", "agent_id": "shop", "state": state}
    response = api.post("/api/v1/sessions", body, format="json")
    assert response.status_code == 201, response.content
    return str(response.json()["id"])


def _turn(api: APIClient, sid: str, user: str, at: datetime, state: dict[str, Any]) -> None:
    body = {"user_message": user, "assistant_response": "Done.", "steps": STEP,
            "state": state, "occurred_at": at.isoformat()}  # fmt: skip
    response = api.post(f"/api/v1/sessions/{sid}/turns", body, format="json")
    assert response.status_code == 201, response.content


def _focus_and_add_to_cart(api: APIClient, sid: str, mpn: str) -> None:
    response = api.put(f"/api/v1/sessions/{sid}/focus", {"mpn": mpn}, format="json")
    assert response.status_code == 200, response.content
    response = api.post(f"/api/v1/sessions/{sid}/selections", {"mpn": mpn}, format="json")
    assert response.status_code == 201, response.content


def _context(api: APIClient, sid: str, **params: Any) -> dict[str, Any]:
    response = api.get(f"/api/v1/sessions/{sid}/context", {"budget": 4000, **params})
    assert response.status_code == 200, response.content
    return response.json()  # type: ignore[no-any-return]


def _state_message(body: dict[str, Any]) -> str:
    messages = [m["content"] for m in body["messages"] if m["content"].startswith("Current")]
    return messages[0] if messages else ""


def _no_history(body: dict[str, Any]) -> set[str]:
    return {row["key"] for row in body["excluded"] if row["reason"] == "no_history"}


def test_a_context_asked_in_the_past_shows_the_state_and_workspace_then(
    api: APIClient,
) -> None:
    """The laptops fetched four days ago, the Dell in focus and in the cart, a turn
    three days ago; then the HP fetched again, focused and added to the cart, a turn a
    day ago and a PATCH of the state now. Asked two days ago: the first turn's state,
    focus and cart, the HP named by its MPN alone (its details were fetched since, and
    are listed as without history); asked now: today's."""
    now = timezone.now()
    sid = _session(api, {"stage": "new"})
    store_laptops(api, sid)
    SessionComponent.objects.filter(session_id=sid).update(fetched_at=now - timedelta(days=4))
    _focus_and_add_to_cart(api, sid, DELL)
    _turn(api, sid, "Add the Dell.", now - timedelta(days=3), {"stage": "browsing"})
    store_laptops(api, sid, [LAPTOPS[1]])
    _focus_and_add_to_cart(api, sid, HP)
    _turn(api, sid, "And the HP.", now - timedelta(days=1), {"stage": "comparing"})
    patched = api.patch(f"/api/v1/sessions/{sid}", {"state": {"stage": "checkout"}}, format="json")
    assert patched.status_code == 200, patched.content

    past = _context(api, sid, as_of=(now - timedelta(days=2)).isoformat())
    state = _state_message(past)
    assert '"stage":"browsing"' in state, state
    assert f"focus: {DELL} (Dell XPS 15)" in state
    assert f"cart: 1. {DELL} x1" in state and HP not in state.split("cart:")[1]
    assert f"2. {HP};" in state  # in the results then, its details fetched since
    assert _no_history(past) == {"item_details"}

    current = _state_message(_context(api, sid))
    assert '"stage":"checkout"' in current
    assert f"focus: {HP} (HP Spectre x360)" in current
    assert f"cart: 1. {DELL} x1; 2. {HP} x1" in current


def test_a_context_asked_before_the_first_turn_lists_the_workspace_as_without_history(
    api: APIClient,
) -> None:
    """Asked before the session's first turn: the state it was created with, and no
    focus, results or cart (they are versioned from the first turn on), each listed as
    left out with reason `no_history`."""
    now = timezone.now()
    sid = _session(api, {"stage": "new"})
    store_laptops(api, sid)
    _focus_and_add_to_cart(api, sid, DELL)
    _turn(api, sid, "Add the Dell.", now - timedelta(days=1), {"stage": "browsing"})

    past = _context(api, sid, as_of=(now - timedelta(days=2)).isoformat())
    state = _state_message(past)
    assert '"stage":"new"' in state, state
    assert "focus:" not in state and "cart:" not in state and "last results" not in state
    assert _no_history(past) == {"focus", "results", "cart"}

    current = _context(api, sid)
    assert '"stage":"browsing"' in _state_message(current)
    assert f"cart: 1. {DELL} x1" in _state_message(current)
    assert _no_history(current) == set()
