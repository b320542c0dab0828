"""Optimistic concurrency on a session's state: the ETag (`state_etag`) of its reads and
writes, If-Match on PATCH answered 412 when the state changed since, and the turn log's
state chain intact whoever wins."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.db import connection
from rest_framework.test import APIClient

from sessions_app.services.api_keys import IssuedKey
from tests.sessions_app.helpers import assert_error, create_session, post_turn, turn_body

pytestmark = pytest.mark.django_db


def _read(api: APIClient, sid: str) -> tuple[dict[str, Any], str]:
    response = api.get(f"/api/v1/sessions/{sid}")
    assert response.status_code == 200, response.content
    return response.json(), response["ETag"]


def _patch(api: APIClient, sid: str, body: dict[str, Any], if_match: str | None = None) -> Any:
    headers = {} if if_match is None else {"HTTP_IF_MATCH": if_match}
    return api.patch(f"/api/v1/sessions/{sid}", body, format="json", **headers)


def _state_chain(api: APIClient, sid: str) -> list[tuple[Any, Any]]:
    turns = api.get(f"/api/v1/sessions/{sid}/turns").json()["results"]
    return [(turn["state_before"], turn["state_after"]) for turn in turns]


def test_the_etag_is_the_states_tag_and_survives_storage(api: APIClient) -> None:
    sid = create_session(api, state={"stage": "browsing"})["id"]
    body, etag = _read(api, sid)
    assert etag.startswith('"') and etag.endswith('"') and len(etag) > 10
    assert body["state_etag"] == etag

    # Numbers jsonb writes differently from Python (1e20, 1.0) keep the tag the write gave.
    state = {"big": 1e20, "one": 1.0, "third": 0.333, "nested": {"b": [1, "x"], "a": None}}
    written = _patch(api, sid, {"state": state}, if_match=etag)
    assert written.status_code == 200, written.content
    assert written["ETag"] != etag
    assert written.json()["state_etag"] == written["ETag"]
    assert _read(api, sid)[1] == written["ETag"]
    # Other fields leave the state's tag alone.
    assert _patch(api, sid, {"metadata": {"k": "v"}})["ETag"] == written["ETag"]


def test_a_stale_if_match_is_refused_and_changes_nothing(api: APIClient) -> None:
    sid = create_session(api, state={"stage": "browsing", "items": []})["id"]
    _, etag = _read(api, sid)  # both agents read the same state

    first = _patch(api, sid, {"state": {"stage": "cart", "items": ["a"]}}, if_match=etag)
    assert first.status_code == 200, first.content
    second = _patch(
        api, sid, {"state": {"stage": "browsing", "items": ["b"]}, "metadata": {"x": 1}}, etag
    )
    error = assert_error(second, 412, "precondition_failed")
    assert list(error["fields"]) == ["If-Match"]
    assert error["state_etag"] == first["ETag"]

    body, _ = _read(api, sid)
    assert body["state"] == {"stage": "cart", "items": ["a"]}
    assert body["metadata"] == {}  # the refused PATCH changed nothing at all
    assert _state_chain(api, sid) == [
        ({"stage": "browsing", "items": []}, {"stage": "cart", "items": ["a"]})
    ]
    # Read again, retry: it goes through.
    retried = _patch(api, sid, {"state": {"stage": "cart", "items": ["a", "b"]}}, first["ETag"])
    assert retried.status_code == 200, retried.content


def test_a_turn_that_changes_the_state_moves_the_tag(api: APIClient) -> None:
    sid = create_session(api, state={"stage": "browsing"})["id"]
    _, etag = _read(api, sid)
    assert post_turn(api, sid, turn_body()).status_code == 201  # no state: tag kept
    assert _read(api, sid)[1] == etag
    assert post_turn(api, sid, turn_body(state={"stage": "comparing"})).status_code == 201
    assert_error(_patch(api, sid, {"state": {"stage": "x"}}, etag), 412, "precondition_failed")


def test_without_if_match_the_last_writer_wins(api: APIClient) -> None:
    sid = create_session(api, state={"n": 0})["id"]
    assert _patch(api, sid, {"state": {"n": 1}}).status_code == 200
    assert _patch(api, sid, {"state": {"n": 2}}).status_code == 200
    assert _read(api, sid)[0]["state"] == {"n": 2}


@pytest.mark.parametrize(
    ("if_match", "status"),
    [("*", 200), ('"nope", CURRENT', 200), ("W/CURRENT", 412), ('"nope"', 412)],
)
def test_if_match_lists_star_and_weak_tags(api: APIClient, if_match: str, status: int) -> None:
    sid = create_session(api, state={"n": 0})["id"]
    _, etag = _read(api, sid)
    response = _patch(api, sid, {"state": {"n": 1}}, if_match.replace("CURRENT", etag))
    assert response.status_code == status, response.content


@pytest.mark.parametrize("if_match", ["abc", "", '"a" "b"', '"a",'])
def test_an_if_match_that_is_not_entity_tags_is_a_400_naming_it(
    api: APIClient, if_match: str
) -> None:
    sid = create_session(api, state={"n": 0})["id"]
    error = assert_error(_patch(api, sid, {"state": {"n": 1}}, if_match), 400, "invalid")
    assert list(error["fields"]) == ["If-Match"]
    assert _read(api, sid)[0]["state"] == {"n": 0}


@pytest.mark.django_db(transaction=True)
def test_concurrent_writers_with_one_tag_one_wins(api: APIClient, issued_key: IssuedKey) -> None:
    sid = create_session(api, state={"writer": None})["id"]
    _, etag = _read(api, sid)
    barrier = threading.Barrier(8)
    statuses: list[int] = []
    lock = threading.Lock()

    def write(n: int) -> None:
        try:
            client = APIClient()
            client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued_key.secret}")
            barrier.wait(timeout=30)
            response = _patch(client, sid, {"state": {"writer": n}}, if_match=etag)
            with lock:
                statuses.append(response.status_code)
        finally:
            connection.close()

    threads = [threading.Thread(target=write, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)

    assert sorted(statuses) == [200] + [412] * 7
    chain = _state_chain(api, sid)
    assert len(chain) == 1 and chain[0][0] == {"writer": None}
    assert _read(api, sid)[0]["state"] == chain[0][1]
