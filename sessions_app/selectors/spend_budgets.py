"""Reading period budgets: which apply to a call, and what each has spent and holds.

Periods are computed by PostgreSQL in the budget's own time zone: `date_trunc(period,
at, time_zone)` is the local midnight (or Monday, or first of the month) as an instant,
and the end is the next one, reached by local calendar arithmetic, so a day across a
DST change lasts 23 or 25 hours and a month its own number of days. Spending
(`sessions_app.services.spend_budgets`) and checking use the same expressions, so they
never disagree on which period a turn falls in. A budget without a period has one
"period" that starts at `LIFETIME_START` and never ends.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from django.db import connection
from django.db.models import QuerySet
from psycopg import sql

from sessions_app.errors import NotFound
from sessions_app.model_names import model_key
from sessions_app.models import (
    BudgetAction,
    BudgetReservation,
    BudgetSpend,
    SpendBudget,
    Tenant,
)
from sessions_app.models.spend_budgets import SPEND_SHARDS

LIFETIME_START = datetime(1970, 1, 1, tzinfo=UTC)

# The period containing %(at)s of budget `b`, as SQL over the columns of `b`.
PERIOD_START_SQL = sql.SQL(
    "(CASE WHEN b.period = 'none' THEN '1970-01-01T00:00:00Z'::timestamptz"
    " ELSE date_trunc(b.period, %(at)s::timestamptz, b.time_zone) END)"
)
PERIOD_END_SQL = sql.SQL(
    "(CASE WHEN b.period = 'none' THEN NULL ELSE"
    " (date_trunc(b.period, %(at)s::timestamptz, b.time_zone) AT TIME ZONE b.time_zone"
    " + ('1 ' || b.period)::interval) AT TIME ZONE b.time_zone END)"
)
# The spend shard a turn recorded on this connection adds to (see `BudgetSpend.shard`):
# one connection runs one transaction at a time, so concurrent turns rarely share one.
# (`%%`: the statements it goes into take parameters.)
SPEND_SHARD_SQL = sql.SQL("(pg_backend_pid() %% {})").format(sql.Literal(SPEND_SHARDS))
# The budgets that apply to a call of (user, agent, model): a blank key matches all.
# `%(model)s` is the call's `model_key`, the form a budget's model is stored in.
APPLIES_SQL = sql.SQL(
    "b.tenant_id = %(tenant)s AND (b.user_id = '' OR b.user_id = %(user)s)"
    " AND (b.agent_id = '' OR b.agent_id = %(agent)s)"
    " AND (b.model = '' OR b.model = %(model)s)"
)
_BUDGET = sql.Identifier(SpendBudget._meta.db_table)

APPLYING_SQL = sql.SQL("SELECT b.* FROM {budget} AS b WHERE {applies} ORDER BY b.id").format(
    budget=_BUDGET, applies=APPLIES_SQL
)
# The same, with the refusing ones locked in id order, so that two checks sharing
# budgets queue instead of deadlocking. NO KEY UPDATE: checks exclude each other, while
# turns (whose spend rows reference the budget) are not held up by it. The locking CTE
# runs once (the count), before the rows are returned.
APPLYING_LOCKED_SQL = sql.SQL(
    "WITH applying AS MATERIALIZED (SELECT b.* FROM {budget} AS b WHERE {applies}),"
    " locked AS (SELECT l.id FROM {budget} AS l WHERE l.id IN"
    " (SELECT a.id FROM applying AS a WHERE a.action = {refuse}) ORDER BY l.id"
    " FOR NO KEY UPDATE)"
    " SELECT applying.* FROM applying WHERE (SELECT count(*) FROM locked) >= 0"
    " ORDER BY applying.id"
).format(budget=_BUDGET, applies=APPLIES_SQL, refuse=sql.Literal(BudgetAction.REFUSE.value))


def figures_sql(which: sql.Composable, *, more: sql.Composable | None = None) -> sql.Composed:
    """The figures (`BudgetFigures`' columns, in id order) of the budgets `b` for which
    `which` holds, then the columns `more` (of `b`) if given. One statement, so one
    snapshot: a turn that commits in between spends a reservation and adds its cost at
    once, never one without the other."""
    return sql.SQL(
        "SELECT b.id, p.period_start, p.period_end,"
        " coalesce(s.tokens, 0) AS spent_tokens, coalesce(s.cost_usd, 0) AS spent_usd,"
        " coalesce(h.n, 0) AS held_count, coalesce(h.tokens, 0) AS held_tokens,"
        " coalesce(h.usd, 0) AS held_usd, h.until AS held_until{more}"
        " FROM {budget} AS b"
        " CROSS JOIN LATERAL (SELECT {start} AS period_start, {end} AS period_end) AS p"
        " LEFT JOIN LATERAL (SELECT sum(t.tokens) AS tokens, sum(t.cost_usd) AS cost_usd"
        " FROM {spend} AS t WHERE t.budget_id = b.id AND t.period_start = p.period_start)"
        " AS s ON true"
        " LEFT JOIN LATERAL (SELECT count(*) AS n, sum(r.tokens) AS tokens,"
        " sum(r.cost_usd) AS usd, min(r.expires_at) AS until FROM {reservation} AS r"
        " WHERE r.budget_ids @> ARRAY[b.id] AND r.expires_at > %(at)s) AS h ON true"
        " WHERE {which} ORDER BY b.id"
    ).format(
        budget=_BUDGET,
        start=PERIOD_START_SQL,
        end=PERIOD_END_SQL,
        spend=sql.Identifier(BudgetSpend._meta.db_table),
        reservation=sql.Identifier(BudgetReservation._meta.db_table),
        which=which,
        more=sql.SQL("") if more is None else sql.SQL(", ") + more,
    )


FIGURES_SQL = figures_sql(sql.SQL("b.id = ANY(%(ids)s)"))


@dataclass(frozen=True)
class BudgetFigures:
    """One budget in its current period: limits, spend, and live reservations."""

    budget: SpendBudget
    period_start: datetime
    period_end: datetime | None
    spent_tokens: int
    spent_usd: Decimal
    reserved_count: int
    reserved_tokens: int
    reserved_usd: Decimal
    reserved_until: datetime | None  # when the first live reservation ends (None: none)

    @property
    def refuses(self) -> bool:
        return self.budget.action == BudgetAction.REFUSE


def budgets_applying(
    *, tenant: Tenant, user_id: str, agent_id: str, model: str, at: datetime, lock: bool = False
) -> list[BudgetFigures]:
    """Every budget of the tenant that applies to a call by `user_id` with `agent_id` on
    `model` (a gateway-routed or dated name counts as its `model_key`, as in the spend),
    with its figures at `at`, in id order. With `lock` (inside a transaction),
    the refusing ones are locked, and the figures read after the locks are held (by a
    second statement, whose snapshot sees what the previous holder committed)."""
    params: dict[str, Any] = {
        "tenant": tenant.pk,
        "user": user_id,
        "agent": agent_id,
        "model": model_key(model or ""),
    }
    query = APPLYING_LOCKED_SQL if lock else APPLYING_SQL
    with connection.cursor() as cursor:
        budgets = list(SpendBudget.objects.raw(query.as_string(cursor.connection), params))
    return budgets_figures(budgets=budgets, at=at)


def budgets_figures(*, budgets: list[SpendBudget], at: datetime) -> list[BudgetFigures]:
    """These budgets' figures at `at` (one statement), in id order."""
    if not budgets:
        return []
    by_id = {budget.pk: budget for budget in budgets}
    with connection.cursor() as cursor:
        cursor.execute(FIGURES_SQL, {"at": at, "ids": list(by_id)})
        rows = cursor.fetchall()
    return figures_from_rows(by_id, rows)


def figures_from_rows(by_id: dict[Any, SpendBudget], rows: list[Any]) -> list[BudgetFigures]:
    """`FIGURES_SQL`'s rows (any columns after its nine ignored) as figures."""
    return [
        BudgetFigures(
            budget=by_id[row[0]],
            period_start=row[1],
            period_end=row[2],
            spent_tokens=int(row[3]),
            spent_usd=Decimal(row[4]),
            reserved_count=int(row[5]),
            reserved_tokens=int(row[6]),
            reserved_usd=Decimal(row[7]),
            reserved_until=row[8],
        )
        for row in rows
    ]


def spend_budgets_of(tenant: Tenant) -> QuerySet[SpendBudget]:
    return SpendBudget.objects.filter(tenant=tenant).order_by("created_at", "id")


def spend_budget_get(*, tenant: Tenant, budget_id: Any) -> SpendBudget:
    try:
        return SpendBudget.objects.get(tenant=tenant, pk=uuid.UUID(str(budget_id)))
    except (ValueError, SpendBudget.DoesNotExist) as exc:
        raise NotFound("Budget not found.") from exc


def spend_budgets_by_id(ids: list[Any]) -> dict[Any, SpendBudget]:
    """Budgets by id, whatever their tenant (for after-commit receivers that were handed
    ids by sessions_app itself)."""
    return {budget.pk: budget for budget in SpendBudget.objects.filter(pk__in=ids)}


@dataclass(frozen=True)
class BudgetForecast:
    """Spend at the period's end if it goes on at the rate so far (None: no period)."""

    tokens: int | None
    usd: Decimal | None


def budget_forecast(figures: BudgetFigures, *, at: datetime) -> BudgetForecast:
    """A straight line through the period's spend so far."""
    end = figures.period_end
    if end is None:
        return BudgetForecast(tokens=None, usd=None)
    elapsed = (at - figures.period_start).total_seconds()
    length = (end - figures.period_start).total_seconds()
    if elapsed <= 0 or length <= 0:
        return BudgetForecast(tokens=figures.spent_tokens, usd=figures.spent_usd)
    factor = Decimal(length) / Decimal(elapsed)
    return BudgetForecast(
        tokens=int(figures.spent_tokens * factor),
        usd=(figures.spent_usd * factor).quantize(Decimal("0.000001")),
    )
