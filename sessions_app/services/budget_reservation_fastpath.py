"""Reserving against period budgets in one round trip: the fast path of
`budget_check_reserve` for a session without a budget of its own (the common case under
period budgets).

Why: every agent under a shared budget queues on the budgets' row locks, so the time a
lock is held bounds how many reservations per second all agents together get. The plain
path holds the locks across four round trips between PostgreSQL and a Python thread
that competes for the GIL with the worker's other threads. Here one message carries the
whole locked part, run by PostgreSQL as one implicit transaction committed without
waiting for the WAL flush: lock the refusing budgets in id order; then, in a statement
with a fresh snapshot (so it sees what the previous holder committed), read every
applying budget's figures and insert the reservation only if each refusing budget has
room for it. No Python runs while the locks are held.

The rule "has room" is `period_refusal`'s, written once more in SQL (`FITS_SQL`); the
figures come back as they were before this reservation, and Python decides the answer
from them with `period_refusal` itself. tests/sessions_app/test_budget_reservation_fastpath.py
holds the two paths to the same decisions.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import connection
from psycopg import sql

from sessions_app.models import BudgetAction, BudgetReservation, ChatSession, SpendBudget
from sessions_app.selectors.spend_budgets import FIGURES_SQL, BudgetFigures, figures_from_rows

# A refusing budget `b` with figures `f` has room for the estimate: nothing of it is left
# once spent and held are set aside, or the estimate passes what is, means no.
FITS_SQL = sql.SQL(
    "(b.limit_tokens IS NULL OR (f.spent_tokens + f.held_tokens < b.limit_tokens"
    " AND f.spent_tokens + f.held_tokens + %(tokens)s <= b.limit_tokens))"
    " AND (b.limit_usd IS NULL OR (f.spent_usd + f.held_usd < b.limit_usd"
    " AND f.spent_usd + f.held_usd + coalesce(%(usd)s::numeric, 0) <= b.limit_usd))"
)
RESERVE_SQL = sql.SQL(
    "SET LOCAL synchronous_commit TO off;"
    " SELECT l.id FROM {budget} AS l WHERE l.id = ANY(%(refusing)s::uuid[]) ORDER BY l.id"
    " FOR NO KEY UPDATE;"
    " WITH f AS ({figures}),"
    " ins AS (INSERT INTO {reservation} (id, session_id, tokens, cost_usd, budget_ids,"
    " created_at, expires_at) SELECT %(id)s, %(session)s, %(tokens)s, %(usd)s,"
    " %(refusing)s::uuid[], %(at)s, %(expires)s WHERE %(session_ok)s AND NOT EXISTS"
    " (SELECT FROM f JOIN {budget} AS b ON b.id = f.id WHERE b.action = {refuse}"
    " AND NOT ({fits})) RETURNING id)"
    " SELECT f.*, (SELECT count(*) FROM ins) FROM f ORDER BY f.id"
).format(
    budget=sql.Identifier(SpendBudget._meta.db_table),
    reservation=sql.Identifier(BudgetReservation._meta.db_table),
    figures=FIGURES_SQL,
    refuse=sql.Literal(BudgetAction.REFUSE.value),
    fits=FITS_SQL,
)


def period_budgets_reserve(
    *,
    session: ChatSession,
    budgets: list[SpendBudget],
    tokens: int,
    usd: Decimal | None,
    session_ok: bool,
    lease_seconds: int | None,
    now: datetime,
) -> tuple[list[BudgetFigures], BudgetReservation | None]:
    """The applying `budgets`' figures before this reservation, and the reservation if
    every refusing one had room (and `session_ok`). Run outside a transaction, the locks
    end with the message; inside one, with it."""
    refusing = [budget.pk for budget in budgets if budget.action == BudgetAction.REFUSE]
    lease = lease_seconds or settings.ENGRAM_BUDGET_LEASE_SECONDS
    reservation = BudgetReservation(
        id=uuid.uuid4(), session=session, tokens=tokens, cost_usd=usd, budget_ids=refusing,
        created_at=now, expires_at=now + timedelta(seconds=lease),
    )  # fmt: skip
    params: dict[str, Any] = {
        "refusing": refusing, "ids": [budget.pk for budget in budgets], "at": now,
        "id": reservation.pk, "session": session.pk, "tokens": tokens, "usd": usd,
        "expires": reservation.expires_at, "session_ok": session_ok,
    }  # fmt: skip
    with connection.cursor() as cursor:
        cursor.execute(RESERVE_SQL, params)
        cursor.nextset()  # past the SET
        cursor.nextset()  # past the locks
        rows = cursor.fetchall()
    figures = figures_from_rows({budget.pk: budget for budget in budgets}, rows)
    if not rows or not rows[0][-1]:
        return figures, None
    reservation._state.adding = False  # stored by the statement above
    return figures, reservation
