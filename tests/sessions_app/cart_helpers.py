"""What the workspace and cart page tests share: a session holding the stored laptop
results, and the cart read and written through the selections API."""

from __future__ import annotations

from rest_framework.test import APIClient

from tests.sessions_app.workspace_helpers import create_session, store_laptops


def stocked_session(api: APIClient) -> str:
    """A new session with the laptop results stored in it."""
    session_id = create_session(api)
    store_laptops(api, session_id)
    return session_id


def cart(api: APIClient, sid: str) -> list[tuple[int, str, int]]:
    body = api.get(f"/api/v1/sessions/{sid}/selections").json()
    return [(line["position"], line["mpn"], line["quantity"]) for line in body["results"]]


def add(api: APIClient, sid: str, **payload):
    return api.post(f"/api/v1/sessions/{sid}/selections", payload, format="json")
