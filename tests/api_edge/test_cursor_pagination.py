"""Cursors have the shape the schema publishes, and every cursor of that shape is one the
API follows: walking `next` then `previous` visits every row once, in order, for a list
ordered by time (sessions) and one ordered by an integer (a session's turns); a cursor of
another shape is a 400 naming `cursor`."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
from django.test import Client
from rest_framework.test import APIClient

from sessions_app.api.pagination import CURSOR_PATTERN
from tests.sessions_app.helpers import assert_error, create_session, post_turn

pytestmark = pytest.mark.django_db


def _walk(api: APIClient, url: str, link: str, key: str) -> list[Any]:
    seen: list[Any] = []
    while url:
        page = api.get(url).json()
        seen += [item[key] for item in page["results"]]
        url = page[link]
        if url:
            (cursor,) = parse_qs(urlparse(url).query)["cursor"]
            assert re.fullmatch(CURSOR_PATTERN, cursor), cursor
    return seen


def _last_page_url(api: APIClient, url: str) -> str:
    while True:
        following = api.get(url).json()["next"]
        if not following:
            return url
        url = following


def test_sessions_page_forward_and_back_by_time(api: APIClient) -> None:
    made = [create_session(api, user_id=f"u{n}")["id"] for n in range(5)]
    forward = _walk(api, "/api/v1/sessions?page_size=2", "next", "id")
    assert forward == made[::-1]  # newest first
    back = _walk(api, _last_page_url(api, "/api/v1/sessions?page_size=2"), "previous", "id")
    assert sorted(back) == sorted(made) and len(back) == len(made)


def test_turns_page_forward_and_back_by_number(api: APIClient) -> None:
    session = create_session(api)
    for _ in range(5):
        assert post_turn(api, session["id"]).status_code == 201
    url = f"/api/v1/sessions/{session['id']}/turns?page_size=2"
    assert _walk(api, url, "next", "turn_number") == [1, 2, 3, 4, 5]
    back = _walk(api, _last_page_url(api, url), "previous", "turn_number")
    assert sorted(back) == [1, 2, 3, 4, 5] and len(back) == 5


def test_any_cursor_of_the_pattern_is_followed(api: APIClient) -> None:
    session = create_session(api)
    post_turn(api, session["id"])
    turns = f"/api/v1/sessions/{session['id']}/turns"
    for cursor in ("0f", "0r", "9999f9999999999999999", "0000r0", "12f1", "0f0"):
        assert re.fullmatch(CURSOR_PATTERN, cursor)
        for path in ("/api/v1/sessions", "/api/v1/memories", "/api/v1/budgets", turns):
            response = api.get(path, {"cursor": cursor})
            assert response.status_code == 200, (path, cursor, response.content)
    # A position past the data: an empty page, not an error.
    assert api.get(turns, {"cursor": "0f9999999999999999"}).json()["results"] == []
    assert [t["turn_number"] for t in api.get(turns, {"cursor": "0f0"}).json()["results"]] == [1]


@pytest.mark.parametrize("cursor", ["", "bogus", "0x1", "f1", "10000f", "0f" + "1" * 17, "0F1"])
def test_a_cursor_of_another_shape_is_refused_naming_it(api: APIClient, cursor: str) -> None:
    assert not re.fullmatch(CURSOR_PATTERN, cursor)
    response = api.get("/api/v1/sessions", {"cursor": cursor})
    assert "cursor" in assert_error(response, 400, "invalid")["fields"]


def test_the_schema_states_the_cursor_pattern() -> None:
    schema = Client().get("/api/schema/?format=json").json()
    cursors = [
        parameter
        for operations in schema["paths"].values()
        for operation in operations.values()
        for parameter in operation.get("parameters", [])
        if parameter["name"] == "cursor"
    ]
    assert len(cursors) >= 4
    assert all(p["schema"]["pattern"] == CURSOR_PATTERN for p in cursors)
