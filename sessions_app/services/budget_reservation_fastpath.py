"""Reserving against period budgets in one round trip: the fast path of
`budget_check_reserve` for a session without a budget of its own (the common case under
period budgets, and what a turn with `reserve_next` runs after its commit).

Why: every agent under a shared budget queues on the budgets' row locks, so the time a
lock is held bounds how many reservations per second all agents together get; and on a
busy machine each round trip between a gunicorn thread and PostgreSQL costs about as
much as the statement it carries. Here one message does it all, run by PostgreSQL as one
implicit transaction committed without waiting for the WAL flush: lock the refusing
budgets that apply to the call (user, agent, model) in id order; then, in a statement
with a fresh snapshot (so it sees what the previous holder committed), read every
applying budget with its figures and insert the reservation only if each refusing
budget has room for it. No Python runs while the locks are held, and the budgets are
not read by a statement of their own before.

The rule "has room" is `period_refusal`'s, written once more in SQL (`FITS_SQL`); the
figures come back as they were before this reservation, and Python decides the answer
from them with `period_refusal` itself. tests/sessions_app/test_budget_reservation_fastpath.py
holds the two paths to the same decisions. A budget created between the two statements
is read and held without its lock, as the plain path would not have seen it at all: it
did not exist when the check began.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import connection
from psycopg import sql

from config.prepared_statements import prepared_statement
from sessions_app.model_names import model_key
from sessions_app.models import BudgetAction, BudgetReservation, ChatSession, SpendBudget
from sessions_app.selectors.spend_budgets import (
    APPLIES_SQL,
    BudgetFigures,
    figures_from_rows,
    figures_sql,
)

_BUDGET = sql.Identifier(SpendBudget._meta.db_table)
_FIELDS = SpendBudget._meta.concrete_fields  # the primary key first
_REFUSE = sql.Literal(BudgetAction.REFUSE.value)
FIGURES_COLUMNS = 9  # `figures_sql`'s, before the budget's own columns

# A refusing budget with figures and columns `f` has room for the estimate (`r.usd`, the
# USD the reservation holds): nothing of it is left once spent and held are set aside,
# or the estimate passes what is, means no.
FITS_SQL = sql.SQL(
    "(f.limit_tokens IS NULL OR (f.spent_tokens + f.held_tokens < f.limit_tokens"
    " AND f.spent_tokens + f.held_tokens + %(tokens)s <= f.limit_tokens))"
    " AND (f.limit_usd IS NULL OR (f.spent_usd + f.held_usd < f.limit_usd"
    " AND f.spent_usd + f.held_usd + coalesce(r.usd, 0) <= f.limit_usd))"
)
# `f`: every applying budget's figures and columns. `r`: the refusing budgets (the
# reservation's `budget_ids`) and the USD it holds: the agent's estimate, else the one
# priced from the tokens when a refusing budget has a USD limit (`_usd_held`).
RESERVE_STATEMENT = sql.SQL(
    "WITH f AS ({figures}),"
    " r AS (SELECT coalesce(array_agg(f.id ORDER BY f.id), '{{}}'::uuid[]) AS ids,"
    " coalesce(%(usd)s::numeric, CASE WHEN bool_or(f.limit_usd IS NOT NULL)"
    " THEN %(usd_estimate)s::numeric END) AS usd FROM f WHERE f.action = {refuse}),"
    " ins AS (INSERT INTO {reservation} (id, session_id, tokens, cost_usd, budget_ids,"
    " created_at, expires_at) SELECT %(id)s, %(session)s, %(tokens)s, r.usd, r.ids, %(at)s,"
    " %(expires)s FROM r WHERE %(session_ok)s AND cardinality(r.ids) > 0 AND NOT EXISTS"
    " (SELECT FROM f WHERE f.action = {refuse} AND NOT ({fits})) RETURNING id)"
    " SELECT f.*, (SELECT count(*) FROM ins) FROM f ORDER BY f.id"
).format(
    refuse=_REFUSE,
    reservation=sql.Identifier(BudgetReservation._meta.db_table),
    figures=figures_sql(
        APPLIES_SQL,
        more=sql.SQL(", ").join([sql.Identifier("b", str(field.column)) for field in _FIELDS[1:]]),
    ),
    fits=FITS_SQL,
)
# Its parameters, in the order of the prepared statement's $1, $2, ...
PARAMETERS = (
    ("tenant", "bigint"), ("user", "text"), ("agent", "text"), ("model", "text"),
    ("at", "timestamptz"), ("id", "uuid"), ("session", "uuid"), ("tokens", "bigint"),
    ("usd", "numeric"), ("usd_estimate", "numeric"), ("expires", "timestamptz"),
    ("session_ok", "boolean"),
)  # fmt: skip
_PREPARED = prepared_statement(RESERVE_STATEMENT, prefix="engram_budget_reserve_", types=PARAMETERS)


def prepared_name() -> str:
    """The name the reserving statement is prepared under on every connection."""
    return _PREPARED.name


# The message. The statement that reads and reserves runs under the budgets' locks, so it
# is a prepared statement of the connection (config.prepared_statements): planned ahead,
# not while others wait (its planning costs more than its run). The DO block that
# prepares it on a connection that has not yet runs before any lock is taken.
RESERVE_SQL = sql.SQL(
    "{prepare} SET LOCAL synchronous_commit TO off;"
    " SELECT b.id FROM {budget} AS b WHERE {applies} AND b.action = {refuse} ORDER BY b.id"
    " FOR NO KEY UPDATE; {execute}"
).format(
    prepare=_PREPARED.prepare_if_missing(),
    budget=_BUDGET,
    applies=APPLIES_SQL,
    refuse=_REFUSE,
    execute=_PREPARED.execute(),
)


@dataclass(frozen=True)
class PeriodReservation:
    """What the message found: every applying budget's figures before this reservation
    (id order), the reservation if it was taken, and the USD it holds or would hold."""

    periods: list[BudgetFigures]
    reservation: BudgetReservation | None
    usd: Decimal | None


def _budget(values: tuple[Any, ...]) -> SpendBudget:
    """A budget from its columns as the cursor read them (jsonb comes as text)."""
    converted = [
        field.from_db_value(value, None, connection) if hasattr(field, "from_db_value") else value
        for field, value in zip(_FIELDS, values, strict=True)
    ]
    return SpendBudget.from_db(connection.alias, [field.attname for field in _FIELDS], converted)


def _usd_held(
    periods: list[BudgetFigures], usd: Decimal | None, usd_estimate: Decimal | None
) -> Decimal | None:
    """`r.usd` of `RESERVE_SQL`, in Python."""
    if usd is not None:
        return usd
    limited = any(f.refuses and f.budget.limit_usd is not None for f in periods)
    return usd_estimate if limited else None


def period_budgets_reserve(
    *,
    session: ChatSession,
    model: str,
    tokens: int,
    usd: Decimal | None,
    usd_estimate: Decimal | None,
    session_ok: bool,
    lease_seconds: int | None,
    now: datetime,
) -> PeriodReservation:
    """Every period budget that applies to a call of the session's user and agent on
    `model`, and the reservation if at least one refuses and each refusing one had room
    (and `session_ok`). `usd`: the agent's USD estimate; else `usd_estimate` (priced from
    the tokens) is held when a refusing budget has a USD limit. Run outside a
    transaction, the locks end with the message; inside one, with it."""
    lease = lease_seconds or settings.ENGRAM_BUDGET_LEASE_SECONDS
    expires = now + timedelta(seconds=lease)
    params: dict[str, Any] = {
        "tenant": session.tenant_id, "user": session.user_id, "agent": session.agent_id,
        "model": model_key(model or ""), "at": now, "id": uuid.uuid4(), "session": session.pk,
        "tokens": tokens, "usd": usd, "usd_estimate": usd_estimate, "expires": expires,
        "session_ok": session_ok,
    }  # fmt: skip
    with connection.cursor() as cursor:
        cursor.execute(RESERVE_SQL, params)
        for _ in range(3):  # past the DO, the SET and the locks
            cursor.nextset()
        rows = cursor.fetchall()
    budgets = {row[0]: _budget((row[0], *row[FIGURES_COLUMNS:-1])) for row in rows}
    periods = figures_from_rows(budgets, rows)
    held = _usd_held(periods, usd, usd_estimate)
    if not rows or not rows[0][-1]:
        return PeriodReservation(periods=periods, reservation=None, usd=held)
    reservation = BudgetReservation(
        id=params["id"], session=session, tokens=tokens, cost_usd=held,
        budget_ids=[f.budget.pk for f in periods if f.refuses], created_at=now,
        expires_at=expires,
    )  # fmt: skip
    reservation._state.adding = False  # stored by the statement above
    return PeriodReservation(periods=periods, reservation=reservation, usd=held)
