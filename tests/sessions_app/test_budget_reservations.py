"""Budget reservations: budgets hold when many agents share one session.

Each agent checks `budget/check` with `reserve: true` for its next turn's tokens and
records the turn only when allowed. Without reservations thirty agents all see the same
remaining budget and a 10-turn budget ends 13-16 turns deep; with them, a reservation
taken under the session's row lock is counted by every later check.
"""

from __future__ import annotations

import threading
import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone
from rest_framework.test import APIClient

from sessions_app.models import BudgetReservation, ChatTurn, Tenant
from sessions_app.services.api_keys import IssuedKey
from sessions_app.services.budgets import budget_check_reserve, budget_reservations_purge
from sessions_app.tasks import purge_budget_reservations
from tests.sessions_app.helpers import assert_error, create_session, post_turn, turn_body

TURN_TOKENS = 1000  # one step: 900 in + 100 out
STEPS = [{"step_type": "response", "model": "gpt-4o-mini", "input_tokens": 900,
          "output_tokens": 100}]  # fmt: skip


def reserve(api: APIClient, sid: str, tokens: int = TURN_TOKENS, **extra: Any) -> Any:
    return api.post(
        f"/api/v1/sessions/{sid}/budget/check",
        {"estimated_tokens": tokens, "reserve": True, **extra},
        format="json",
    )


def run_agents(
    issued_key: IssuedKey, sid: str, agents: int, *, reserve_first: bool, name_it: bool
) -> list[BaseException]:
    """`agents` threads, each with its own client and database connection, loop: check
    (reserving or not), and record a turn while allowed."""
    barrier = threading.Barrier(agents)
    errors: list[BaseException] = []

    def agent(n: int) -> None:
        try:
            client = APIClient()
            client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued_key.secret}")
            barrier.wait(timeout=60)
            for _ in range(20):
                body = {"estimated_tokens": TURN_TOKENS, "reserve": reserve_first}
                check = client.post(f"/api/v1/sessions/{sid}/budget/check", body, format="json")
                if check.status_code == 429:
                    return
                assert check.status_code == 200, check.content
                extra = {}
                if name_it and n % 2 == 0:  # half name their reservation, half rely on FIFO
                    extra["reservation_id"] = check.json()["reservation"]["id"]
                turn = post_turn(client, sid, turn_body(steps=STEPS, **extra))
                assert turn.status_code == 201, turn.content
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=agent, args=(n,)) for n in range(agents)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    return errors


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_thirty_agents_with_reservations_stay_within_one_turn_of_a_ten_turn_budget(
    api: APIClient, issued_key: IssuedKey
) -> None:
    sid = create_session(api, budget_tokens=10 * TURN_TOKENS)["id"]
    errors = run_agents(issued_key, sid, 30, reserve_first=True, name_it=True)
    assert errors == []
    turns = ChatTurn.objects.filter(session_id=sid).count()
    assert 10 <= turns <= 11, turns  # at most one turn's worth over
    # Every reservation was spent by its turn: none is left holding budget.
    assert not BudgetReservation.objects.filter(session_id=sid).exists()
    assert_error(reserve(api, sid), 429, "budget_exceeded")


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_the_same_thirty_agents_without_reservations_overshoot(
    api: APIClient, issued_key: IssuedKey
) -> None:
    """The baseline the reservations fix: checking alone lets concurrent agents through
    together. (If this ever stops overshooting, the test above proves nothing.)"""
    sid = create_session(api, budget_tokens=10 * TURN_TOKENS)["id"]
    errors = run_agents(issued_key, sid, 30, reserve_first=False, name_it=False)
    assert errors == []
    assert ChatTurn.objects.filter(session_id=sid).count() > 11


@pytest.mark.django_db
def test_reservations_hold_until_the_turn_or_the_lease_ends(api: APIClient, tenant: Tenant) -> None:
    sid = create_session(api, budget_tokens=3 * TURN_TOKENS)["id"]
    first = reserve(api, sid, lease_seconds=30)
    assert first.status_code == 200, first.content
    body = first.json()
    assert body["reservation"]["tokens"] == TURN_TOKENS
    assert body["reserved_tokens"] == 0 and body["tokens_remaining_after"] == 2 * TURN_TOKENS
    second = reserve(api, sid, 2 * TURN_TOKENS).json()
    assert second["reserved_tokens"] == TURN_TOKENS and second["tokens_remaining_after"] == 0
    # Everything is reserved: a third agent is told to wait, and why.
    error = assert_error(reserve(api, sid, 1), 429, "budget_exceeded")
    assert "reserved" in error["message"] and error["reserved_tokens"] == 3 * TURN_TOKENS
    # A plain check (no reserve) counts the reservations too.
    plain = api.post(f"/api/v1/sessions/{sid}/budget/check", {"estimated_tokens": 1}, format="json")
    assert plain.status_code == 429

    # Recording a turn that names the second reservation releases it, not the first.
    turn = post_turn(api, sid, turn_body(steps=STEPS, reservation_id=second["reservation"]["id"]))
    assert turn.status_code == 201
    left = list(BudgetReservation.objects.filter(session_id=sid).values_list("pk", flat=True))
    assert [str(pk) for pk in left] == [body["reservation"]["id"]]
    # 1000 spent + 1000 held of 3000: 1000 can be reserved, 1001 cannot.
    assert_error(reserve(api, sid, TURN_TOKENS + 1), 429, "budget_exceeded")

    # Once the lease ends, the reservation no longer counts.
    later = timezone.now() + timedelta(seconds=31)
    decision = budget_check_reserve(
        tenant=tenant, session_id=sid, estimated_tokens=2 * TURN_TOKENS, now=later
    )
    assert decision.check.allowed and decision.held.count == 0

    # A turn without a reservation id spends the oldest live one.
    post_turn(api, sid, turn_body(steps=STEPS))
    assert not BudgetReservation.objects.filter(session_id=sid).exists()

    # A turn without an id spends the oldest (here: B's, named later by B's turn); B's
    # turn then spends the one left over, so no reservation outlives the turns.
    a = reserve(api, sid, 10).json()["reservation"]["id"]
    b = reserve(api, sid, 10).json()["reservation"]["id"]
    BudgetReservation.objects.filter(pk=b).update(created_at=timezone.now() - timedelta(seconds=9))
    post_turn(api, sid, turn_body(steps=[]))
    assert [str(pk) for pk in BudgetReservation.objects.values_list("pk", flat=True)] == [a]
    post_turn(api, sid, turn_body(steps=[], reservation_id=b))
    assert not BudgetReservation.objects.exists()

    # Leases that end without a turn are purged by the hourly task.
    reserve(api, sid, 10, lease_seconds=5)
    assert purge_budget_reservations.apply().get() == 0  # still live
    assert budget_reservations_purge(now=timezone.now() + timedelta(seconds=6)) == 1
    assert not BudgetReservation.objects.exists()


@pytest.mark.django_db
def test_reserve_validates_and_sessions_without_budget_hold_nothing(api: APIClient) -> None:
    sid = create_session(api)["id"]
    free = reserve(api, sid, 10**9)
    assert free.status_code == 200 and free.json()["reservation"] is None
    assert not BudgetReservation.objects.exists()
    error = assert_error(reserve(api, sid, lease_seconds=0), 400, "invalid")
    assert "lease_seconds" in error["fields"]
    error = assert_error(reserve(api, sid, reserve="maybe"), 400, "invalid")
    assert "reserve" in error["fields"]
    budgeted = create_session(api, budget_usd="0.010")["id"]
    ok = reserve(api, budgeted, estimated_cost_usd="0.006")
    assert ok.status_code == 200 and ok.json()["reservation"]["cost_usd"] == "0.006000"
    error = assert_error(reserve(api, budgeted, estimated_cost_usd="0.006"), 429, "budget_exceeded")
    assert "USD" in error["message"]
    # The older field name still works.
    assert reserve(api, budgeted, estimated_usd="0.004").status_code == 200


def test_a_negative_estimate_is_refused_as_negative_not_as_a_malformed_decimal(
    api: APIClient,
) -> None:
    sid = create_session(api, budget_usd="1")["id"]
    for value in ("-1", -1):
        error = assert_error(reserve(api, sid, estimated_cost_usd=value), 400, "invalid")
        assert error["fields"]["estimated_cost_usd"] == [
            "Ensure this value is greater than or equal to 0."
        ], value
    for value in ("abc", "--1", "1e3"):
        error = assert_error(reserve(api, sid, estimated_cost_usd=value), 400, "invalid")
        assert "decimal string" in error["fields"]["estimated_cost_usd"][0], value
    assert not BudgetReservation.objects.exists()


def _warning_codes(response: Any) -> list[str]:
    assert response.status_code == 201, response.content
    return [w["code"] for w in response.json()["warnings"]]


@pytest.mark.django_db
def test_a_turn_naming_no_reservation_of_its_session_is_recorded_and_warned(
    api: APIClient, other_api: APIClient
) -> None:
    sid = create_session(api, budget_tokens=10 * TURN_TOKENS)["id"]
    # The session holds no reservation at all: nothing to release, still warned.
    unknown = str(uuid.uuid4())
    response = post_turn(api, sid, turn_body(steps=STEPS, reservation_id=unknown))
    assert "reservation_unknown" in _warning_codes(response)
    message = next(w for w in response.json()["warnings"] if w["code"] == "reservation_unknown")
    assert "reservation_id" in message["message"] and unknown in message["message"]
    # The session holds one: an unknown id spends it (the oldest) and is warned about.
    reserve(api, sid, 10)
    response = post_turn(api, sid, turn_body(steps=STEPS, reservation_id=unknown))
    assert "reservation_unknown" in _warning_codes(response)
    assert not BudgetReservation.objects.filter(session_id=sid).exists()
    # Another tenant's live reservation is not this session's either.
    theirs_sid = create_session(other_api, budget_tokens=10 * TURN_TOKENS)["id"]
    theirs = reserve(other_api, theirs_sid, 10).json()["reservation"]["id"]
    response = post_turn(api, sid, turn_body(steps=STEPS, reservation_id=theirs))
    assert "reservation_unknown" in _warning_codes(response)
    assert BudgetReservation.objects.filter(pk=theirs).exists()
    # The session's own reservation, named: no warning.
    own = reserve(api, sid, 10).json()["reservation"]["id"]
    assert _warning_codes(post_turn(api, sid, turn_body(steps=STEPS, reservation_id=own))) == []
    assert _warning_codes(post_turn(api, sid, turn_body(steps=STEPS))) == []
