"""Helpers for the session-workspace tests: create sessions and store the seed-000
laptops through the HTTP API, as an agent would."""

from __future__ import annotations

from typing import Any

from rest_framework.test import APIClient

from sessions_app.services.demo_shopping import LAPTOP_FILTERS, LAPTOP_QUERY, LAPTOPS

DELL, HP, LENOVO, ASUS, ACER = (laptop["mpn"] for laptop in LAPTOPS)


def create_session(api: APIClient, **extra: Any) -> str:
    response = api.post(
        "/api/v1/sessions", {"user_id": "u1", "agent_id": "shop", **extra}, format="json"
    )
    assert response.status_code == 201, response.content
    return str(response.json()["id"])


def store_laptops(api: APIClient, session_id: str, items: list[dict[str, Any]] | None = None):
    response = api.post(
        f"/api/v1/sessions/{session_id}/results",
        {"query": LAPTOP_QUERY, "filters": LAPTOP_FILTERS, "items": items or LAPTOPS},
        format="json",
    )
    assert response.status_code == 201, response.content
    return response


def assert_error(response: Any, status: int, code: str, field: str | None = None) -> dict:
    assert response.status_code == status, response.content
    body = response.json()
    assert set(body) == {"error"}, body
    assert body["error"]["code"] == code, body
    assert body["error"]["message"]
    if field is not None:
        assert field in body["error"]["fields"], body
    return body["error"]
