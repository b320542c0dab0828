"""The one-message reservation (`budget_reservation_fastpath`) decides as the plain,
statement-by-statement path does, case by case at the edges of a period budget: the
same answer, the same reason, and a reservation exactly when allowed."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone

from sessions_app.models import BudgetReservation, ChatSession, Tenant
from sessions_app.services import budget_reservation_fastpath as fastpath
from sessions_app.services.budgets import _Ask, _check_reserve_locked, budget_check_reserve
from sessions_app.services.sessions import session_create
from sessions_app.services.spend_budgets import spend_budget_create
from sessions_app.services.turn_recording import turn_record
from sessions_app.services.turn_totals import StepInput
from sessions_app.usage import TokenCounts

MODEL = "gpt-4o-mini"

# (budget's limits and action, tokens spent, tokens others hold, estimate tokens, estimate USD)
CASES = [
    ({"limit_tokens": 3000}, 2000, 0, 1000, None),  # exactly to the limit
    ({"limit_tokens": 3000}, 2000, 0, 1001, None),  # one past it
    ({"limit_tokens": 3000}, 3000, 0, 0, None),  # spent
    ({"limit_tokens": 3000}, 2000, 1000, 0, None),  # the rest is held by others
    ({"limit_tokens": 3000}, 1000, 1000, 1000, None),  # room beside the others
    ({"limit_tokens": 3000}, 1000, 1000, 1001, None),  # no room beside the others
    ({"limit_tokens": 0}, 0, 0, 0, None),  # a zero limit
    ({"limit_usd": "0.000300"}, 1000, 0, 0, "0.000100"),  # USD: 0.000240 spent
    ({"limit_usd": "0.000300"}, 1000, 0, 0, "0.000061"),  # USD: one micro-dollar past
    ({"limit_usd": "0.000300"}, 0, 0, 1000, None),  # USD estimated from the tokens
    ({"limit_tokens": 1500, "action": "alert"}, 2000, 0, 1000, None),  # alert only
    ({"limit_tokens": 3000, "limit_usd": "1"}, 0, 0, 1000, None),  # USD held, estimated
]


def spend(tenant: Tenant, session: ChatSession, tokens: int) -> None:
    if tokens:
        counts = TokenCounts(input_tokens=tokens - tokens // 10, output_tokens=tokens // 10)
        turn_record(tenant=tenant, session_id=session.pk,
                    steps=[StepInput(step_type="chat", model=MODEL, counts=counts)])  # fmt: skip


def decide(path: str, tenant: Tenant, session: ChatSession, tokens: int, usd: Any) -> Any:
    estimate = None if usd is None else Decimal(usd)
    if path == "fast":
        return budget_check_reserve(
            tenant=tenant, session_id=session.pk, estimated_tokens=tokens,
            estimated_usd=estimate, reserve=True, model=MODEL,
        )  # fmt: skip
    ask = _Ask(tokens, estimate, None, MODEL)
    return _check_reserve_locked(
        tenant=tenant, session_id=session.pk, ask=ask, reserve=True, now=timezone.now(),
        known=None,
    )  # fmt: skip


@pytest.mark.django_db
@pytest.mark.parametrize(("limits", "spent", "held", "tokens", "usd"), CASES)
def test_both_paths_decide_alike(
    tenant: Tenant, limits: dict[str, Any], spent: int, held: int, tokens: int, usd: Any
) -> None:
    spend_budget_create(tenant=tenant, scope="user", user_id="u1", period="day", **limits)
    session = session_create(tenant=tenant, user_id="u1", agent_id="a")
    other = session_create(tenant=tenant, user_id="u1", agent_id="b")
    spend(tenant, session, spent)
    if held:
        assert decide("fast", tenant, other, held, None).reservation is not None
    answers = []
    for path in ("plain", "fast"):
        decision = decide(path, tenant, session, tokens, usd)
        mine = BudgetReservation.objects.filter(session=session)
        holds = decision.check.allowed and any(f.refuses for f in decision.periods)
        assert (decision.reservation is not None) == holds == mine.exists()
        stored = list(mine.values_list("tokens", "cost_usd"))
        if decision.reservation is not None:  # as stored: the USD held, estimated or given
            assert stored == [(decision.reservation.tokens, decision.reservation.cost_usd)]
        answers.append(
            (decision.check, decision.refusal and decision.refusal.retry_after > 0, stored)
        )
        assert [f.reserved_tokens for f in decision.periods if f.refuses] in ([held], [])
        mine.delete()
    assert answers[0] == answers[1]


@pytest.mark.django_db
def test_a_runaway_blocked_session_is_refused_and_holds_nothing(tenant: Tenant) -> None:
    spend_budget_create(tenant=tenant, scope="tenant", period="day", limit_tokens=10_000)
    session = session_create(tenant=tenant, user_id="u1", agent_id="a")
    ChatSession.objects.filter(pk=session.pk).update(runaway_blocked=True)
    decision = budget_check_reserve(
        tenant=tenant, session_id=session.pk, estimated_tokens=10, reserve=True
    )
    assert not decision.check.allowed and "runaway" in decision.check.reason
    assert decision.reservation is None and not BudgetReservation.objects.exists()


@pytest.mark.django_db
def test_the_reserving_statement_is_prepared_once_per_connection(tenant: Tenant) -> None:
    """The message prepares its statement on a connection that lacks it (a new one, or
    one whose prepared statements were dropped) and reuses it after."""
    spend_budget_create(tenant=tenant, scope="tenant", period="day", limit_tokens=10_000)
    session = session_create(tenant=tenant, user_id="u1", agent_id="a")

    def prepared() -> list[Any]:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT name FROM pg_prepared_statements WHERE name LIKE 'engram_budget%%'"
            )
            return [row[0] for row in cursor.fetchall()]

    with connection.cursor() as cursor:
        cursor.execute("DEALLOCATE ALL")
    taken = []
    for dropped in (False, False, True):
        if dropped:
            with connection.cursor() as cursor:
                cursor.execute("DEALLOCATE ALL")
        decision = budget_check_reserve(
            tenant=tenant, session_id=session.pk, estimated_tokens=1000, reserve=True
        )
        assert decision.reservation is not None
        taken.append(decision.reservation.pk)
        assert prepared() == [fastpath.prepared_name()]
    assert BudgetReservation.objects.filter(pk__in=taken).count() == 3
