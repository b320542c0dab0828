"""The date-times the API takes: each with its UTC offset, as the schema's `date-time`
format (RFC 3339) says. A local time or a bare date answers 400 naming the field, the
same moment with its offset is taken. What is stored (a memory's and a turn's times)
shares one range, years 1-9999 in UTC, with a 400 naming the field outside it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from rest_framework.test import APIClient

from tests.sessions_app.helpers import create_session, turn_body

pytestmark = pytest.mark.django_db

Send = Callable[[APIClient, str], Any]


def _memory(api: APIClient, **fields: Any) -> Any:
    body = {"user_id": "ana", "agent_id": "a", "type": "fact", "content": "Gold member"}
    return api.post("/api/v1/memories", body | fields, format="json")


def _memory_update(api: APIClient, field: str, value: str) -> Any:
    memory = _memory(api).json()["memory"]["id"]
    return api.patch(f"/api/v1/memories/{memory}?acting_user_id=ana", {field: value}, format="json")


def _turn(api: APIClient, value: str) -> Any:
    session = create_session(api)["id"]
    body = turn_body(occurred_at=value)
    return api.post(f"/api/v1/sessions/{session}/turns", body, format="json")


def _batch(api: APIClient, value: str) -> Any:
    item = {"session_id": create_session(api)["id"], **turn_body(occurred_at=value)}
    return api.post("/api/v1/turns/batch", {"turns": [item]}, format="json")


def _imported(api: APIClient, value: str, *, on_message: bool) -> Any:
    message = {"role": "user", "content": "hi"} | ({"timestamp": value} if on_message else {})
    conversation = {"conversation_id": f"c-{value}", "user_id": "ana", "messages": [message]}
    if not on_message:
        conversation["started_at"] = value
    return api.post(
        "/api/v1/conversations/import", {"conversations": [conversation]}, format="json"
    )


def _context(api: APIClient, value: str) -> Any:
    session = create_session(api)["id"]
    return api.get(f"/api/v1/sessions/{session}/context", {"as_of": value})


# (the field as an error names it, how to send a value to it)
FIELDS: list[tuple[str, Send]] = [
    ("occurred_at", lambda api, v: _memory(api, occurred_at=v)),
    ("valid_from", lambda api, v: _memory(api, valid_from=v)),
    ("valid_to", lambda api, v: _memory(api, valid_to=v)),
    ("valid_from", lambda api, v: _memory_update(api, "valid_from", v)),
    ("valid_to", lambda api, v: _memory_update(api, "valid_to", v)),
    ("occurred_at", _turn),
    ("occurred_at", _batch),
    ("started_at", lambda api, v: _imported(api, v, on_message=False)),
    ("messages.0.timestamp", lambda api, v: _imported(api, v, on_message=True)),
    ("as_of", _context),
    ("as_of", lambda api, v: api.post(
        "/api/v1/memories/search", {"query": "gold", "user_id": "ana", "as_of": v}, format="json"
    )),
    *[
        (name, lambda api, v, name=name: api.post(
            "/api/v1/memories/search", {"query": "gold", "user_id": "ana", name: v}, format="json"
        ))
        for name in ("created_from", "created_to", "occurred_from", "occurred_to", "valid_at")
    ],
    ("to", lambda api, v: api.get("/api/v1/usage", {"group_by": "day", "to": v})),
]  # fmt: skip
# A usage window's bound may also be a bare date: a whole UTC day, as its schema says.
DATE_TIMES_ONLY = FIELDS[:-1]
IDS = [f"{field}-{index}" for index, (field, _) in enumerate(FIELDS)]


def _per_item(response: Any) -> bool:
    """A batch or an import: 200 with one result, and its status, per item."""
    results = response.json().get("results") if response.status_code == 200 else None
    return bool(results) and "status" in results[0]


def _field_errors(response: Any) -> dict[str, list[str]]:
    """The refused fields of a 400, or of the one item of a batch or an import."""
    body = response.json()
    if _per_item(response):
        error = body["results"][0]["error"] or {}
        return error.get("fields", {})  # type: ignore[no-any-return]
    assert response.status_code == 400, response.content
    return body["error"]["fields"]  # type: ignore[no-any-return]


def _taken(response: Any) -> bool:
    if _per_item(response):
        return response.json()["results"][0]["status"] in (200, 201)
    return response.status_code in (200, 201)


@pytest.mark.parametrize(("field", "send"), FIELDS, ids=IDS)
def test_a_local_time_is_refused_naming_the_field(api: APIClient, field: str, send: Send) -> None:
    errors = _field_errors(send(api, "2024-05-01T10:00:00"))
    assert list(errors) == [field], errors
    assert "UTC offset" in errors[field][0]


@pytest.mark.parametrize(("field", "send"), DATE_TIMES_ONLY, ids=IDS[:-1])
def test_a_bare_date_is_refused_naming_the_field(api: APIClient, field: str, send: Send) -> None:
    errors = _field_errors(send(api, "2024-05-01"))
    assert list(errors) == [field], errors
    assert "UTC offset" in errors[field][0]


@pytest.mark.parametrize(("field", "send"), FIELDS, ids=IDS)
def test_the_same_time_with_its_offset_is_taken(api: APIClient, field: str, send: Send) -> None:
    response = send(api, "2024-05-01T12:00:00+02:00")
    assert _taken(response), response.content


def test_a_usage_window_takes_bare_dates_as_utc_days(api: APIClient) -> None:
    response = api.get(
        "/api/v1/usage", {"group_by": "day", "from": "2024-05-01", "to": "2024-05-01"}
    )
    assert response.status_code == 200, response.content
    assert response.json()["start"] == "2024-05-01T00:00:00Z"


@pytest.mark.parametrize("value", ["1969-12-31T23:59:59Z", "0001-01-01T00:00:00Z"])
def test_turns_and_memories_take_the_same_early_times(api: APIClient, value: str) -> None:
    turn = _turn(api, value)
    assert turn.status_code == 201, turn.content
    assert turn.json()["turn"]["occurred_at"] == value
    memory = _memory(api, occurred_at=value)
    assert memory.status_code == 201, memory.content
    assert memory.json()["memory"]["occurred_at"] == value


@pytest.mark.parametrize("send", [_turn, lambda api, v: _memory(api, occurred_at=v)])
@pytest.mark.parametrize("value", ["0001-01-01T00:00:00+02:00", "9999-12-31T23:00:00-05:00"])
def test_a_time_outside_the_range_in_utc_is_refused_naming_the_field(
    api: APIClient, send: Send, value: str
) -> None:
    errors = _field_errors(send(api, value))
    assert list(errors) == ["occurred_at"], errors
    assert "0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999Z" in errors["occurred_at"][0]
