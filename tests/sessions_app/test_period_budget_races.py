"""Period budgets under concurrency: fifty agents, each in its own new session, under one
user's, one model's or the tenant's daily budget; and a worker killed mid-reservation.

Each agent checks `budget/check` with `reserve: true` for its next turn's tokens and
records the turn only when allowed. The budget is shared across sessions, so the
session's row lock does not serialise them: the budget rows' locks do.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.db.models import Sum
from django.utils import timezone
from rest_framework.test import APIClient

from sessions_app.models import BudgetReservation, BudgetSpend, ChatTurn, Tenant
from sessions_app.services.api_keys import IssuedKey
from sessions_app.services.budgets import budget_check_reserve, budget_reservations_purge
from sessions_app.services.sessions import session_create
from sessions_app.services.spend_budgets import spend_budget_create
from tests.live_processes import database_url
from tests.sessions_app.helpers import post_turn, turn_body

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

AGENTS = 50
TURN_TOKENS = 1000
LIMIT = 20 * TURN_TOKENS
STEPS = [{"step_type": "response", "model": "gpt-4o-mini", "input_tokens": 900,
          "output_tokens": 100}]  # fmt: skip
SCOPES = {
    "user": {"scope": "user", "user_id": "u1"},
    "model": {"scope": "model", "model": "gpt-4o-mini"},
    "tenant": {"scope": "tenant"},
}


def _each_agent_in_a_thread(agent: Any, errors: list[BaseException]) -> list[BaseException]:
    """Run `agent(n)` for every agent at once, one thread each; the errors they reported."""
    threads = [threading.Thread(target=agent, args=(n,)) for n in range(AGENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=600)
    return errors


def run_agents(issued_key: IssuedKey, scope: str, *, reserve: bool) -> list[BaseException]:
    """Each agent opens its own session (the user scope: all for user u1; the others:
    a user each), then loops: check, and record a turn while allowed."""
    barrier = threading.Barrier(AGENTS)
    errors: list[BaseException] = []

    def agent(n: int) -> None:
        try:
            client = APIClient()
            client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued_key.secret}")
            user = "u1" if scope == "user" else f"user-{n}"
            body = {"user_id": user, "agent_id": f"agent-{n}"}
            made = client.post("/api/v1/sessions", body, format="json")
            assert made.status_code == 201, made.content
            sid = made.json()["id"]
            barrier.wait(timeout=120)
            for _ in range(3):
                check = client.post(
                    f"/api/v1/sessions/{sid}/budget/check",
                    {"estimated_tokens": TURN_TOKENS, "reserve": reserve, "model": "gpt-4o-mini"},
                    format="json",
                )
                if check.status_code == 429:
                    assert int(check["Retry-After"]) >= 1
                    return
                assert check.status_code == 200, check.content
                extra = {}
                if reserve and n % 2 == 0:  # half name their reservation, half rely on FIFO
                    extra["reservation_id"] = check.json()["reservation"]["id"]
                turn = post_turn(client, sid, turn_body(steps=STEPS, **extra))
                assert turn.status_code == 201, turn.content
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)
        finally:
            connection.close()

    return _each_agent_in_a_thread(agent, errors)


def recorded_tokens() -> int:
    turns = ChatTurn.objects.all()
    return sum(turn.input_tokens + turn.output_tokens for turn in turns)


@pytest.mark.parametrize("scope", list(SCOPES))
def test_fifty_agents_in_new_sessions_stay_within_a_shared_daily_budget(
    tenant: Tenant, issued_key: IssuedKey, scope: str
) -> None:
    budget = spend_budget_create(
        tenant=tenant, period="day", time_zone="Europe/Paris", limit_tokens=LIMIT, **SCOPES[scope]
    )
    errors = run_agents(issued_key, scope, reserve=True)
    assert errors == []
    recorded = recorded_tokens()
    # At most one request's reservation over (here: none, estimates being exact).
    assert recorded <= LIMIT + TURN_TOKENS, recorded
    assert recorded >= LIMIT // 2  # the agents did reach the budget
    # The budget's own count is what the turns recorded, and no reservation is left.
    # (summed over the period's shard rows, one per recording connection at most)
    spent = BudgetSpend.objects.filter(budget=budget).aggregate(tokens=Sum("tokens"))
    assert spent["tokens"] == recorded
    assert not BudgetReservation.objects.exists()


def test_the_same_agents_checking_without_reserving_overshoot(
    tenant: Tenant, issued_key: IssuedKey
) -> None:
    """The baseline the reservations fix: if this ever stops overshooting, the test above
    proves nothing."""
    spend_budget_create(tenant=tenant, period="day", limit_tokens=LIMIT, **SCOPES["user"])
    assert run_agents(issued_key, "user", reserve=False) == []
    assert recorded_tokens() > LIMIT + TURN_TOKENS


def run_agents_reserving_next(issued_key: IssuedKey) -> list[BaseException]:
    """Fifty agents of user u1, each in its own new session: one check that reserves,
    then turns that each spend the reservation held and reserve the next call
    (`reserve_next`), until the next call is refused or the third turn (which reserves
    nothing more)."""
    barrier = threading.Barrier(AGENTS)
    errors: list[BaseException] = []
    reserve_next = {"estimated_tokens": TURN_TOKENS, "model": "gpt-4o-mini"}

    def agent(n: int) -> None:
        try:
            client = APIClient()
            client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued_key.secret}")
            made = client.post(
                "/api/v1/sessions", {"user_id": "u1", "agent_id": f"agent-{n}"}, format="json"
            )
            sid = made.json()["id"]
            barrier.wait(timeout=120)
            check = client.post(
                f"/api/v1/sessions/{sid}/budget/check",
                {**reserve_next, "reserve": True}, format="json",
            )  # fmt: skip
            if check.status_code == 429:
                return
            assert check.status_code == 200, check.content
            for number in range(3):
                extra = {"reserve_next": reserve_next} if number < 2 else {}
                turn = post_turn(client, sid, turn_body(steps=STEPS, **extra))
                assert turn.status_code == 201, turn.content
                if extra and not turn.json()["next_call"]["allowed"]:
                    assert turn.json()["next_call"]["retry_after"] >= 1
                    return
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)
        finally:
            connection.close()

    return _each_agent_in_a_thread(agent, errors)


def test_fifty_agents_reserving_with_each_turn_stay_within_a_shared_daily_budget(
    tenant: Tenant, issued_key: IssuedKey
) -> None:
    """The one-round-trip way (`reserve_next`) holds the budget as check-then-turn does."""
    budget = spend_budget_create(
        tenant=tenant, period="day", time_zone="Europe/Paris", limit_tokens=LIMIT,
        **SCOPES["user"],
    )  # fmt: skip
    assert run_agents_reserving_next(issued_key) == []
    recorded = recorded_tokens()
    assert LIMIT // 2 <= recorded <= LIMIT + TURN_TOKENS, recorded
    spent = BudgetSpend.objects.filter(budget=budget).aggregate(tokens=Sum("tokens"))
    assert spent["tokens"] == recorded
    assert not BudgetReservation.objects.exists()


# A worker that takes a reservation and dies before its transaction commits.
WORKER = """
import sys, time, django
django.setup()
from django.db import transaction
from sessions_app.models import Tenant
from sessions_app.services.budgets import budget_check_reserve
with transaction.atomic():
    decision = budget_check_reserve(
        tenant=Tenant.objects.get(pk=int(sys.argv[1])), session_id=sys.argv[2],
        estimated_tokens=int(sys.argv[3]), reserve=True, lease_seconds=30)
    print(decision.reservation.pk, flush=True)
    time.sleep(600)
"""


def test_a_worker_killed_mid_reservation_leaves_nothing_held(
    api: APIClient, tenant: Tenant
) -> None:
    spend_budget_create(tenant=tenant, period="day", limit_tokens=LIMIT, **SCOPES["user"])
    session = session_create(tenant=tenant, user_id="u1", agent_id="a")
    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "DJANGO_SETTINGS_MODULE": "config.settings.test",
    }
    worker = subprocess.Popen(
        [sys.executable, "-c", WORKER, str(tenant.pk), str(session.pk), str(LIMIT)],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert worker.stdout is not None
        assert worker.stdout.readline().strip()  # reserved the whole budget, not committed
        # Another agent's check waits on the budget's lock while the worker lives.
        answer: dict[str, Any] = {}

        def other_agent() -> None:
            try:
                answer["decision"] = budget_check_reserve(
                    tenant=tenant, session_id=session.pk, estimated_tokens=LIMIT, reserve=True
                )
            finally:
                connection.close()

        waiting = threading.Thread(target=other_agent)
        waiting.start()
        waiting.join(timeout=1.0)
        assert waiting.is_alive(), "the check did not wait for the budget's lock"
        worker.send_signal(signal.SIGKILL)
        worker.wait(timeout=30)
        waiting.join(timeout=60)
        assert not waiting.is_alive()
    finally:
        if worker.poll() is None:
            worker.kill()
    # The dead worker's reservation never committed: the whole budget was free again.
    decision = answer["decision"]
    assert decision.check.allowed and decision.reservation is not None
    assert [f.reserved_tokens for f in decision.periods] == [0]


def test_a_worker_killed_after_reserving_holds_only_until_the_lease_ends(
    tenant: Tenant,
) -> None:
    spend_budget_create(tenant=tenant, period="day", limit_tokens=LIMIT, **SCOPES["tenant"])
    first = session_create(tenant=tenant, user_id="u1", agent_id="a")
    second = session_create(tenant=tenant, user_id="u2", agent_id="b")
    now = timezone.now()
    taken = budget_check_reserve(
        tenant=tenant, session_id=first.pk, estimated_tokens=LIMIT, reserve=True,
        lease_seconds=30, now=now,
    )  # fmt: skip
    assert taken.reservation is not None  # ... and its worker never records the turn
    blocked = budget_check_reserve(
        tenant=tenant, session_id=second.pk, estimated_tokens=1, reserve=True, now=now
    )
    assert not blocked.check.allowed and blocked.refusal is not None
    assert blocked.refusal.retry_after <= 60  # a lease may end: not the period's end
    later = now + timedelta(seconds=31)
    freed = budget_check_reserve(
        tenant=tenant, session_id=second.pk, estimated_tokens=LIMIT, reserve=True, now=later
    )
    assert freed.check.allowed and freed.periods[0].reserved_tokens == 0
    assert budget_reservations_purge(now=later) == 1
    assert BudgetReservation.objects.filter(pk=taken.reservation.pk).count() == 0
    assert not BudgetSpend.objects.exists()  # nothing was spent: nothing counted
