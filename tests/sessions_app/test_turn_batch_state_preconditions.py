"""If-Match on `POST /api/v1/turns/batch`, as on `POST /sessions/{id}/turns`: a batch of
one session's turns made conditional on its state is refused whole with 412 when the
state's tag moved, writing none of its turns; with the current tag it is recorded and
answers the tag of the state it left as `ETag`; a retry of a recorded batch replays its
stored turns instead of failing on the tag its own turns moved."""

from __future__ import annotations

from typing import Any

import pytest
from django.db.models import Sum
from django.test import Client
from rest_framework.test import APIClient

from sessions_app.models import BudgetSpend, ChatSession, ChatTurn, IdempotencyRecord, TurnStep
from sessions_app.selectors.session_state import state_etag
from tests.sessions_app.helpers import assert_error, create_session, turn_body

pytestmark = pytest.mark.django_db

BATCH = "/api/v1/turns/batch"
STEP = {"step_type": "response", "model": "gpt-4o-mini", "input_tokens": 900,
        "output_tokens": 100}  # fmt: skip


def _etag(api: APIClient, sid: str) -> str:
    response = api.get(f"/api/v1/sessions/{sid}")
    assert response.status_code == 200, response.content
    return str(response["ETag"])


def _item(sid: str, key: str | None = None, **fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"session_id": sid, **turn_body(steps=[STEP], **fields)}
    if key is not None:
        body["idempotency_key"] = key
    return body


def _batch(api: APIClient, turns: list[Any], if_match: str | None) -> Any:
    headers = {} if if_match is None else {"HTTP_IF_MATCH": if_match}
    return api.post(BATCH, {"turns": turns}, format="json", **headers)


def _written(sid: str) -> dict[str, Any]:
    """What a turn writes, as the database holds it."""
    session = ChatSession.objects.get(pk=sid)
    return {
        "state": session.state,
        "turns": ChatTurn.objects.filter(session_id=sid).count(),
        "steps": TurnStep.objects.filter(turn__session_id=sid).count(),
        "session_totals": (session.total_input_tokens, session.total_calls),
        "spend": BudgetSpend.objects.aggregate(t=Sum("tokens"))["t"] or 0,
        "keys": IdempotencyRecord.objects.count(),
    }


def test_a_stale_if_match_refuses_the_whole_batch_and_writes_none_of_it(
    api: APIClient,
) -> None:
    budget = {"scope": "user", "user_id": "u1", "period": "day", "limit_tokens": 100_000}
    assert api.post("/api/v1/budgets", budget, format="json").status_code == 201
    sid = create_session(api, state={"stage": "browsing"})["id"]
    stale = _etag(api, sid)
    moved = api.patch(f"/api/v1/sessions/{sid}", {"state": {"stage": "cart"}}, format="json")
    assert moved.status_code == 200, moved.content
    before = _written(sid)

    turns = [_item(sid, key="b-1"), _item(sid, key="b-2", state={"stage": "paid"}), _item(sid)]
    refused = _batch(api, turns, stale)
    error = assert_error(refused, 412, "precondition_failed")
    assert list(error["fields"]) == ["If-Match"]
    assert error["state_etag"] == moved["ETag"] == _etag(api, sid)
    assert _written(sid) == before  # no turn, step, spend or state; no key kept

    # The refusal freed the keys: the same batch with the current tag records it all.
    recorded = _batch(api, turns, moved["ETag"])
    assert recorded.status_code == 200, recorded.content
    assert [r["status"] for r in recorded.json()["results"]] == [201, 201, 201]
    after = _written(sid)
    assert after["state"] == {"stage": "paid"} and after["spend"] == 3000
    assert after["turns"] == before["turns"] + 3  # (the PATCH recorded a state_change turn)


def test_the_current_tag_records_the_batch_and_answers_the_new_etag(api: APIClient) -> None:
    sid = create_session(api, state={"n": 0})["id"]
    etag = _etag(api, sid)
    turns = [_item(sid, key="b-1", state={"n": 1}), _item(sid, key="b-2", state={"n": 2.0})]
    recorded = _batch(api, turns, etag)
    assert recorded.status_code == 200, recorded.content
    results = recorded.json()["results"]
    assert [(r["status"], r["replayed"]) for r in results] == [(201, False), (201, False)]
    new = recorded["ETag"]
    assert new == state_etag({"n": 2}) == _etag(api, sid)
    assert new == results[-1]["turn"]["session"]["state_etag"]

    # A batch without If-Match is unconditional, and answers the tag it left too.
    plain = _batch(api, [_item(sid, state={"n": 3})], None)
    assert plain.status_code == 200 and plain.json()["results"][0]["status"] == 201
    assert plain["ETag"] == state_etag({"n": 3}) == _etag(api, sid)


def test_a_retry_of_a_recorded_batch_replays_it_despite_its_now_stale_tag(
    api: APIClient,
) -> None:
    sid = create_session(api, state={"n": 0})["id"]
    etag = _etag(api, sid)
    turns = [_item(sid, key="b-1", state={"n": 1}), _item(sid, key="b-2", state={"n": 2})]
    first = _batch(api, turns, etag)
    assert first.status_code == 200, first.content
    written = _written(sid)

    # The same batch again with the tag it was sent with (its own turns moved the
    # state since): its stored answers, as a replayed single turn, not a 412.
    again = _batch(api, turns, etag)
    assert again.status_code == 200, again.content
    results = again.json()["results"]
    assert [(r["status"], r["replayed"]) for r in results] == [(201, True), (201, True)]
    assert [r["turn"] for r in results] == [r["turn"] for r in first.json()["results"]]
    assert again["ETag"] == first["ETag"] == state_etag({"n": 2})
    assert _written(sid) == written

    # A batch with a turn left to record after its replays is checked, and refused
    # whole: that turn would be based on the state the tag no longer names.
    mixed = _batch(api, [*turns, _item(sid, key="b-3", state={"n": 3})], etag)
    assert_error(mixed, 412, "precondition_failed")
    assert _written(sid) == written


@pytest.mark.parametrize("if_match", ["abc", "", '"a" "b"', '"a",'])
def test_a_malformed_if_match_on_a_batch_is_a_400_naming_it(api: APIClient, if_match: str) -> None:
    sid = create_session(api, state={"n": 0})["id"]
    before = _written(sid)
    response = _batch(api, [_item(sid, key="b-1", state={"n": 1})], if_match)
    error = assert_error(response, 400, "invalid")
    assert list(error["fields"]) == ["If-Match"]
    assert _written(sid) == before


def test_if_match_on_a_batch_of_several_sessions_is_a_400_naming_it(api: APIClient) -> None:
    one, two = create_session(api)["id"], create_session(api)["id"]
    response = _batch(api, [_item(one, key="b-1"), _item(two, key="b-2")], "*")
    error = assert_error(response, 400, "invalid")
    assert list(error["fields"]) == ["If-Match"]
    assert _written(one)["turns"] == _written(two)["turns"] == 0
    assert IdempotencyRecord.objects.count() == 0
    # Without If-Match such a batch is taken, and answers no ETag: it left two states.
    taken = _batch(api, [_item(one), _item(two)], None)
    assert taken.status_code == 200 and "ETag" not in taken


@pytest.mark.parametrize(
    ("if_match", "status"),
    [("*", 200), ('"nope", CURRENT', 200), ("W/CURRENT", 412), ('"nope"', 412)],
)
def test_if_match_on_a_batch_takes_star_and_tag_lists(
    api: APIClient, if_match: str, status: int
) -> None:
    sid = create_session(api, state={"n": 0})["id"]
    header = if_match.replace("CURRENT", _etag(api, sid))
    response = _batch(api, [_item(sid, state={"n": 1})], header)
    assert response.status_code == status, response.content


def test_the_schema_documents_if_match_412_and_etag_on_the_batch() -> None:
    schema = Client().get("/api/schema/", HTTP_ACCEPT="application/json").json()
    post = schema["paths"]["/api/v1/turns/batch"]["post"]
    headers = {p["name"]: p for p in post.get("parameters", []) if p["in"] == "header"}
    assert "If-Match" in headers and "412" in headers["If-Match"]["description"]
    assert "412" in post["responses"]
    assert "precondition_failed" in post["responses"]["412"]["description"]
    assert "ETag" in post["responses"]["200"].get("headers", {})
