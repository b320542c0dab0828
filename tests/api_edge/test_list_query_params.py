"""Lists refuse a query parameter they do not read (a typo such as `?usr_id=alice` must not
answer every user's rows), and take every one their schema documents."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from rest_framework.test import APIClient

from tests.sessions_app.helpers import assert_error, create_session

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def schema(django_db_blocker: Any) -> dict[str, Any]:
    with django_db_blocker.unblock():
        return Client().get("/api/schema/?format=json").json()  # type: ignore[no-any-return]


def _lists(schema: dict[str, Any], session_id: str) -> list[tuple[str, list[str]]]:
    """Every paginated GET of the schema (it takes `cursor`), with its query parameters."""
    found = []
    for path, operations in schema["paths"].items():
        names = [
            p["name"] for p in operations.get("get", {}).get("parameters", []) if p["in"] == "query"
        ]
        if "cursor" in names:
            found.append((path.replace("{session_id}", session_id), names))
    return found


def test_every_list_refuses_an_unknown_query_parameter(
    api: APIClient, schema: dict[str, Any]
) -> None:
    sid = create_session(api, user_id="alice")["id"]
    lists = _lists(schema, sid)
    assert {path for path, _ in lists} >= {
        "/api/v1/sessions",
        "/api/v1/memories",
        "/api/v1/budgets",
        f"/api/v1/sessions/{sid}/turns",
    }
    for path, _ in lists:
        response = api.get(path, {"usr_id": "alice", "page_size": "5"})
        error = assert_error(response, 400, "invalid")
        assert error["fields"] == {"usr_id": ["Unknown query parameter."]}, path


def test_every_documented_query_parameter_of_a_list_is_taken(
    api: APIClient, schema: dict[str, Any]
) -> None:
    sid = create_session(api, user_id="alice")["id"]
    for path, names in _lists(schema, sid):
        for name in names:
            response = api.get(path, {name: ""})
            fields = response.json().get("error", {}).get("fields", {}) if response.content else {}
            assert fields.get(name) != ["Unknown query parameter."], (path, name)


def test_a_typo_no_longer_lists_other_users_sessions(api: APIClient) -> None:
    create_session(api, user_id="alice")
    create_session(api, user_id="bob")
    assert len(api.get("/api/v1/sessions", {"user_id": "alice"}).json()["results"]) == 1
    assert_error(api.get("/api/v1/sessions", {"usr_id": "alice"}), 400, "invalid")
