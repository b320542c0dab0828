"""If-Match on `POST /sessions/{id}/turns`: a turn made conditional on the session's
state is refused with 412 when the state's tag moved, and then nothing of it is written
(turn, steps, spend, reservations, state); with the current tag it is recorded and
answers the new `ETag`. The check is the PATCH's, under the same lock, so a turn and a
PATCH holding one tag cannot both write."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.db import connection
from django.db.models import Sum
from rest_framework.test import APIClient

from sessions_app.models import BudgetReservation, BudgetSpend, ChatSession, ChatTurn, TurnStep
from sessions_app.selectors.session_state import state_etag
from sessions_app.services.api_keys import IssuedKey
from tests.sessions_app.helpers import assert_error, create_session, turn_body

pytestmark = pytest.mark.django_db

STEP = {"step_type": "response", "model": "gpt-4o-mini", "input_tokens": 900,
        "output_tokens": 100}  # fmt: skip


def _etag(api: APIClient, sid: str) -> str:
    response = api.get(f"/api/v1/sessions/{sid}")
    assert response.status_code == 200, response.content
    return str(response["ETag"])


def _turn(
    api: APIClient, sid: str, body: dict[str, Any], if_match: str | None, key: str | None = None
) -> Any:
    headers = {} if if_match is None else {"HTTP_IF_MATCH": if_match}
    if key is not None:
        headers["HTTP_IDEMPOTENCY_KEY"] = key
    return api.post(f"/api/v1/sessions/{sid}/turns", body, format="json", **headers)


def _written(sid: str) -> dict[str, Any]:
    """What a turn writes, as the database holds it."""
    session = ChatSession.objects.get(pk=sid)
    return {
        "state": session.state,
        "turns": list(ChatTurn.objects.filter(session_id=sid).values_list("turn_number", "kind")),
        "steps": TurnStep.objects.filter(turn__session_id=sid).count(),
        "session_totals": (session.total_input_tokens, session.total_cost_usd, session.total_calls),
        "spend": BudgetSpend.objects.aggregate(t=Sum("tokens"))["t"] or 0,
        "reservations": sorted(str(pk) for pk in BudgetReservation.objects.values_list("pk")),
    }


def test_a_stale_if_match_refuses_the_turn_and_writes_nothing_of_it(api: APIClient) -> None:
    budget = {"scope": "user", "user_id": "u1", "period": "day", "limit_tokens": 100_000}
    assert api.post("/api/v1/budgets", budget, format="json").status_code == 201
    sid = create_session(api, state={"stage": "browsing"})["id"]
    stale = _etag(api, sid)
    moved = api.patch(f"/api/v1/sessions/{sid}", {"state": {"stage": "cart"}}, format="json")
    assert moved.status_code == 200, moved.content
    check = {"estimated_tokens": 1000, "reserve": True}
    assert api.post(f"/api/v1/sessions/{sid}/budget/check", check, format="json").status_code == 200
    before = _written(sid)
    assert len(before["reservations"]) == 1

    body = turn_body(steps=[STEP], state={"stage": "paid"}, reserve_next={"estimated_tokens": 5})
    refused = _turn(api, sid, body, stale, key="turn-1")
    error = assert_error(refused, 412, "precondition_failed")
    assert list(error["fields"]) == ["If-Match"]
    assert error["state_etag"] == moved["ETag"] == _etag(api, sid)
    # No turn, no step, no spend on the session or its budget, the reservation it would
    # have spent still held and no new one for `reserve_next`, the state as it was.
    assert _written(sid) == before

    # The refusal freed the key: the same key with the current tag records the turn.
    recorded = _turn(api, sid, body, moved["ETag"], key="turn-1")
    assert recorded.status_code == 201, recorded.content
    after = _written(sid)
    assert after["state"] == {"stage": "paid"} and after["steps"] == 1 and after["spend"] == 1000


def test_the_current_tag_records_the_turn_and_answers_the_new_etag(api: APIClient) -> None:
    sid = create_session(api, state={"stage": "browsing"})["id"]
    etag = _etag(api, sid)
    body = turn_body(steps=[STEP], state={"stage": "comparing", "n": 1.0})
    recorded = _turn(api, sid, body, etag, key="turn-1")
    assert recorded.status_code == 201, recorded.content
    new = recorded["ETag"]
    assert new != etag
    assert new == recorded.json()["session"]["state_etag"] == _etag(api, sid)
    assert new == state_etag({"stage": "comparing", "n": 1})
    # The retry of that turn (its tag now stale) replays the answer, with the same ETag.
    replayed = _turn(api, sid, body, etag, key="turn-1")
    assert replayed.status_code == 201 and replayed["Idempotent-Replayed"] == "true"
    assert replayed["ETag"] == new
    assert ChatTurn.objects.filter(session_id=sid).count() == 1
    # A turn without If-Match is unconditional, as before, and answers the ETag too.
    plain = _turn(api, sid, turn_body(steps=[STEP]), None)
    assert plain.status_code == 201 and plain["ETag"] == new


def test_if_match_on_a_turn_without_state_still_checks_the_state(api: APIClient) -> None:
    sid = create_session(api, state={"stage": "browsing"})["id"]
    stale = _etag(api, sid)
    api.patch(f"/api/v1/sessions/{sid}", {"state": {"stage": "cart"}}, format="json")
    before = _written(sid)
    refused = _turn(api, sid, turn_body(steps=[STEP]), stale)
    assert_error(refused, 412, "precondition_failed")
    assert _written(sid) == before
    current = _etag(api, sid)
    recorded = _turn(api, sid, turn_body(steps=[STEP]), current)
    assert recorded.status_code == 201, recorded.content
    assert recorded["ETag"] == current  # the state did not change: neither did its tag


@pytest.mark.parametrize(
    ("if_match", "status"),
    [("*", 201), ('"nope", CURRENT', 201), ("W/CURRENT", 412), ('"nope"', 412)],
)
def test_if_match_on_a_turn_takes_star_and_tag_lists(
    api: APIClient, if_match: str, status: int
) -> None:
    sid = create_session(api, state={"n": 0})["id"]
    header = if_match.replace("CURRENT", _etag(api, sid))
    response = _turn(api, sid, turn_body(steps=[STEP], state={"n": 1}), header)
    assert response.status_code == status, response.content


@pytest.mark.parametrize("if_match", ["abc", "", '"a" "b"', '"a",'])
def test_a_malformed_if_match_on_a_turn_is_a_400_naming_it(api: APIClient, if_match: str) -> None:
    sid = create_session(api, state={"n": 0})["id"]
    before = _written(sid)
    response = _turn(api, sid, turn_body(steps=[STEP], state={"n": 1}), if_match)
    error = assert_error(response, 400, "invalid")
    assert list(error["fields"]) == ["If-Match"]
    assert _written(sid) == before


@pytest.mark.django_db(transaction=True)
def test_turns_and_patches_racing_with_one_tag_one_writes(
    api: APIClient, issued_key: IssuedKey
) -> None:
    sid = create_session(api, state={"writer": None})["id"]
    etag = _etag(api, sid)
    barrier = threading.Barrier(8)
    statuses: list[tuple[str, int]] = []
    lock = threading.Lock()

    def write(n: int) -> None:
        try:
            client = APIClient()
            client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued_key.secret}")
            barrier.wait(timeout=30)
            if n % 2:
                kind = "patch"
                response = client.patch(
                    f"/api/v1/sessions/{sid}", {"state": {"writer": n}}, format="json",
                    HTTP_IF_MATCH=etag,
                )  # fmt: skip
            else:
                kind = "turn"
                response = _turn(client, sid, turn_body(steps=[STEP], state={"writer": n}), etag)
            with lock:
                statuses.append((kind, response.status_code))
        finally:
            connection.close()

    threads = [threading.Thread(target=write, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)

    winners = [outcome for outcome in statuses if outcome[1] != 412]
    assert len(statuses) == 8 and len(winners) == 1, statuses
    assert winners[0] in {("patch", 200), ("turn", 201)}
    turns = list(ChatTurn.objects.filter(session_id=sid).values("state_before", "state_after"))
    assert len(turns) == 1 and turns[0]["state_before"] == {"writer": None}
    assert ChatSession.objects.get(pk=sid).state == turns[0]["state_after"]
    steps = TurnStep.objects.filter(turn__session_id=sid).count()
    assert steps == (1 if winners[0][0] == "turn" else 0)
