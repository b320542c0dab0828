"""Period budgets: managing them, and moving their spend with every recorded turn.

Every recorded step with tokens or cost adds to each budget of its tenant that applies
to it (its session's user and agent, its own model), in the period that contains the
recording time; a turn recorded without a check counts all the same, and nothing is
refused here. One INSERT … ON CONFLICT per recording call, into the shard rows of the
recording connection (`BudgetSpend.shard`): the turn holds those rows until it commits,
and concurrent turns under the same budgets, on other connections, do not wait for it.
Rows go in (budget, period) order, so recorders sharing a shard queue, not deadlock.

Thresholds: when an upsert moves a period's total spend past one of the budget's
`alert_thresholds` (percent of either limit) above the highest already alerted, the
period's alerted mark (on shard 0) moves up by a conditional upsert, which only one
transaction wins, so each threshold fires once per budget and period;
`budget_threshold_crossed` is sent after commit. A turn sees the others' spend once
they committed, so under concurrent turns a crossing may be noticed by the next turn.
"""

from __future__ import annotations

import json
import zoneinfo
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from functools import cache
from typing import Any

from django.db import DatabaseError, connection, transaction
from psycopg import sql

from sessions_app.errors import InvalidInput
from sessions_app.hooks import budget_threshold_crossed
from sessions_app.model_names import model_key
from sessions_app.models import (
    BudgetAction,
    BudgetPeriod,
    BudgetScope,
    BudgetSpend,
    SpendBudget,
    Tenant,
    TurnStep,
)
from sessions_app.models.spend_budgets import SCOPE_KEYS
from sessions_app.selectors.spend_budgets import PERIOD_START_SQL, SPEND_SHARD_SQL

EDITABLE_FIELDS = (
    "name",
    "scope",
    "user_id",
    "agent_id",
    "model",
    "period",
    "time_zone",
    "limit_tokens",
    "limit_usd",
    "action",
    "alert_thresholds",
)
MAX_THRESHOLD = 1000  # percent: alerting at ten times the limit is the most that makes sense


@cache
def _python_zones() -> frozenset[str]:
    return frozenset(zoneinfo.available_timezones())


def _zone_known_to_postgres(name: str) -> bool:
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SELECT now() AT TIME ZONE %s", [name])
    except DatabaseError:
        return False
    return True


def spend_budget_errors(values: dict[str, Any]) -> dict[str, list[str]]:
    """What is wrong with a budget's values, by field (empty when nothing)."""
    errors: dict[str, list[str]] = {}
    scope = values.get("scope")
    if scope not in BudgetScope.values:
        errors["scope"] = [f"Unknown scope; one of {', '.join(BudgetScope.values)}."]
    else:
        for key in ("user_id", "agent_id", "model"):
            named = bool(str(values.get(key) or "").strip())
            if key in SCOPE_KEYS[scope] and not named:
                errors[key] = [f"Required for scope {scope!r}."]
            elif key not in SCOPE_KEYS[scope] and named:
                errors[key] = [f"Must be blank for scope {scope!r}."]
    if values.get("period") not in BudgetPeriod.values:
        errors["period"] = [f"Unknown period; one of {', '.join(BudgetPeriod.values)}."]
    if values.get("action") not in BudgetAction.values:
        errors["action"] = [f"Unknown action; one of {', '.join(BudgetAction.values)}."]
    zone = values.get("time_zone")
    known = isinstance(zone, str) and zone in _python_zones()
    if not known or not _zone_known_to_postgres(str(zone)):
        errors["time_zone"] = ["Unknown time zone; an IANA name such as 'Europe/Paris'."]
    tokens, usd = values.get("limit_tokens"), values.get("limit_usd")
    if tokens is not None and (isinstance(tokens, bool) or not isinstance(tokens, int)):
        errors["limit_tokens"] = ["Must be a whole number."]
    elif tokens is not None and tokens < 0:
        errors["limit_tokens"] = ["Must be zero or more."]
    if usd is not None and (not usd.is_finite() or usd < 0):
        errors["limit_usd"] = ["Must be a number, zero or more."]
    if values.get("limit_tokens") is None and values.get("limit_usd") is None:
        errors["limit_tokens"] = ["Give limit_tokens, limit_usd or both."]
    thresholds = values.get("alert_thresholds")
    if not isinstance(thresholds, list) or not all(
        isinstance(t, int) and not isinstance(t, bool) and 0 < t <= MAX_THRESHOLD
        for t in thresholds
    ):
        errors["alert_thresholds"] = [f"A list of whole percents, 1 to {MAX_THRESHOLD}."]
    return errors


def spend_budget_normalised(values: dict[str, Any]) -> dict[str, Any]:
    """The values as stored. The model is stored as its `model_key` (lower case, without
    a gateway's routing prefix or a release date), the name every step's model is
    compared by: a budget given `openai/gpt-4o-mini` or `gpt-4o-mini-2024-07-18` is the
    gpt-4o-mini budget. It is normalised here rather than compared normalised because the
    comparisons run in SQL (the spend upsert, the applying budgets, the reservation's
    prepared statement): an equality there needs no second implementation of the rules
    in SQL."""
    values = dict(values)
    for key in ("user_id", "agent_id", "name"):
        values[key] = str(values.get(key) or "").strip()
    values["model"] = model_key(str(values.get("model") or ""))
    usd = values.get("limit_usd")
    if usd is not None and not isinstance(usd, Decimal):
        try:
            values["limit_usd"] = Decimal(str(usd))
        except ArithmeticError:
            values["limit_usd"] = Decimal("NaN")
    if isinstance(values.get("alert_thresholds"), list):
        values["alert_thresholds"] = sorted(set(values["alert_thresholds"]))
    return values


def spend_budget_create(*, tenant: Tenant, **fields: Any) -> SpendBudget:
    """InvalidInput naming every bad field; nothing is written then."""
    unknown = set(fields) - set(EDITABLE_FIELDS)
    if unknown:
        raise InvalidInput(fields={name: ["Unknown field."] for name in sorted(unknown)})
    defaults = {
        "time_zone": "UTC",
        "action": BudgetAction.REFUSE,
        "alert_thresholds": SpendBudget._meta.get_field("alert_thresholds").get_default(),
    }
    values = spend_budget_normalised({**defaults, **fields})
    errors = spend_budget_errors(values)
    if errors:
        raise InvalidInput(fields=errors)
    return SpendBudget.objects.create(tenant=tenant, **values)


@transaction.atomic
def spend_budget_update(*, budget: SpendBudget, **fields: Any) -> SpendBudget:
    """Change some fields; the result is validated whole. A changed period or time zone
    starts counting in the periods it defines (spend rows are per period start)."""
    unknown = set(fields) - set(EDITABLE_FIELDS)
    if unknown:
        raise InvalidInput(fields={name: ["Unknown field."] for name in sorted(unknown)})
    stored = {name: getattr(budget, name) for name in EDITABLE_FIELDS}
    values = spend_budget_normalised({**stored, **fields})
    errors = spend_budget_errors(values)
    if errors:
        raise InvalidInput(fields=errors)
    changed = [name for name in EDITABLE_FIELDS if getattr(budget, name) != values[name]]
    for name in changed:
        setattr(budget, name, values[name])
    if changed:
        budget.save(update_fields=[*changed, "updated_at"])
    return budget


def spend_budget_delete(*, budget: SpendBudget) -> None:
    """The budget and its spend rows go; reservations' holds on it no longer count."""
    budget.delete()


# Every recorded step's spend, summed per (budget, period) it falls under, added to the
# shard of this connection (`SPEND_SHARD`); each row comes back with the period's total
# over all its shards and the highest threshold already alerted. `%(models)s` are the
# steps' `model_key`s, the form a budget's model is stored in.
SPEND_SQL = sql.SQL(
    "WITH up AS (INSERT INTO {spend} (budget_id, period_start, shard, tokens, cost_usd,"
    " alerted, updated_at)"
    " SELECT b.id, {period_start}, {shard}, sum(s.tokens), sum(s.cost), 0, %(at)s"
    " FROM {budget} AS b JOIN unnest(%(users)s::text[], %(agents)s::text[],"
    " %(models)s::text[], %(tokens)s::bigint[], %(costs)s::numeric[])"
    " AS s(user_id, agent_id, model, tokens, cost)"
    " ON (b.user_id = '' OR b.user_id = s.user_id)"
    " AND (b.agent_id = '' OR b.agent_id = s.agent_id)"
    " AND (b.model = '' OR b.model = s.model)"
    " WHERE b.tenant_id = %(tenant)s GROUP BY 1, 2 ORDER BY 1, 2"
    " ON CONFLICT (budget_id, period_start, shard) DO UPDATE SET"
    " tokens = {spend}.tokens + EXCLUDED.tokens,"
    " cost_usd = {spend}.cost_usd + EXCLUDED.cost_usd, updated_at = EXCLUDED.updated_at"
    " RETURNING budget_id, period_start, shard, tokens, cost_usd, alerted)"
    " SELECT up.budget_id, up.period_start, up.tokens + coalesce(o.tokens, 0),"
    " up.cost_usd + coalesce(o.cost_usd, 0), greatest(up.alerted, coalesce(o.alerted, 0)),"
    " b.limit_tokens, b.limit_usd, b.alert_thresholds, b.scope, b.name, b.period, b.action,"
    " b.user_id, b.agent_id, b.model"
    " FROM up JOIN {budget} AS b ON b.id = up.budget_id"
    " LEFT JOIN LATERAL (SELECT sum(t.tokens) AS tokens, sum(t.cost_usd) AS cost_usd,"
    " max(t.alerted) AS alerted FROM {spend} AS t WHERE t.budget_id = up.budget_id"
    " AND t.period_start = up.period_start AND t.shard <> up.shard) AS o ON true"
).format(
    spend=sql.Identifier(BudgetSpend._meta.db_table),
    budget=sql.Identifier(SpendBudget._meta.db_table),
    period_start=PERIOD_START_SQL,
    shard=SPEND_SHARD_SQL,
)
# Raise the period's alerted mark (kept on shard 0) to a threshold; a row comes back only
# for the one caller that raised it, which alone sends the alert.
ALERTED_SQL = sql.SQL(
    "INSERT INTO {spend} AS t (budget_id, period_start, shard, tokens, cost_usd, alerted,"
    " updated_at) VALUES (%(budget)s, %(start)s, 0, 0, 0, %(threshold)s, %(at)s)"
    " ON CONFLICT (budget_id, period_start, shard) DO UPDATE SET alerted = EXCLUDED.alerted"
    " WHERE t.alerted < EXCLUDED.alerted RETURNING t.budget_id"
).format(spend=sql.Identifier(BudgetSpend._meta.db_table))


@dataclass(frozen=True)
class BudgetPassed:
    """A period budget whose period's spend, this turn's included, reached a limit (as
    the turn's transaction sees it: others' uncommitted spend is not in it)."""

    budget_id: Any
    scope: str
    name: str
    period: str
    action: str
    user_id: str
    agent_id: str
    model: str
    spent_tokens: int
    spent_usd: Decimal
    limit_tokens: int | None
    limit_usd: Decimal | None

    def covers(self, step: TurnStep) -> bool:
        """Whether `step` counts under the budget (SPEND_SQL's join, for a batch that
        says which of its turns a budget concerns)."""
        return (
            self.user_id in ("", step.user_id)
            and self.agent_id in ("", step.agent_id)
            and self.model in ("", model_key(step.model))
        )


@dataclass(frozen=True)
class ThresholdCrossed:
    budget_id: Any
    period_start: datetime
    threshold: int  # percent
    spent_tokens: int
    spent_usd: Decimal


def spend_percent(
    *, tokens: int, usd: Decimal, limit_tokens: int | None, limit_usd: Decimal | None
) -> Decimal:
    """How much of the budget is spent, in percent of the tighter limit. A zero limit
    with any spend is infinitely spent; with none, not at all."""
    shares = []
    for spent, limit in ((Decimal(tokens), limit_tokens), (Decimal(usd), limit_usd)):
        if limit is None:
            continue
        if Decimal(limit) == 0:
            shares.append(Decimal("Infinity") if spent > 0 else Decimal(0))
        else:
            shares.append(spent * 100 / Decimal(limit))
    return max(shares, default=Decimal(0))


def period_budgets_spend(
    *, tenant_id: int, steps: list[TurnStep], at: datetime
) -> list[BudgetPassed]:
    """Add recorded steps to the budgets they fall under (inside the caller's
    transaction, after the steps are inserted). Alerts for thresholds crossed are sent
    after commit. Answers the budgets these steps fall under whose period's spend is now
    at or past a limit, from the rows the same statement returns."""
    spending = [s for s in steps if s.input_tokens or s.output_tokens or s.cost_usd]
    if not spending:
        return []
    params: dict[str, Any] = {
        "tenant": tenant_id,
        "at": at,
        "users": [s.user_id for s in spending],
        "agents": [s.agent_id for s in spending],
        "models": [model_key(s.model) for s in spending],
        "tokens": [s.input_tokens + s.output_tokens for s in spending],
        "costs": [s.cost_usd or Decimal(0) for s in spending],
    }
    with connection.cursor() as cursor:
        cursor.execute(SPEND_SQL, params)
        rows = cursor.fetchall()
    crossed = [item for item in map(_threshold_crossed, rows) if item is not None]
    if crossed:
        crossed = _alerts_claimed(crossed, at=at)
    if crossed:
        transaction.on_commit(
            lambda: budget_threshold_crossed.send(sender=SpendBudget, crossed=crossed)
        )
    return [item for item in map(_budget_passed, rows) if item is not None]


def _budget_passed(row: tuple[Any, ...]) -> BudgetPassed | None:
    budget_id, _start, tokens, usd, _alerted, limit_tokens, limit_usd, _thresholds = row[:8]
    scope, name, period, action, user_id, agent_id, model = row[8:]
    # A zero limit is passed by any spend, not by none (as `spend_percent` reads it).
    over_tokens = limit_tokens is not None and tokens >= limit_tokens and tokens > 0
    over_usd = limit_usd is not None and usd >= limit_usd and usd > 0
    if not (over_tokens or over_usd):
        return None
    return BudgetPassed(
        budget_id=budget_id, scope=scope, name=name, period=period, action=action,
        user_id=user_id, agent_id=agent_id, model=model, spent_tokens=int(tokens),
        spent_usd=Decimal(usd), limit_tokens=limit_tokens, limit_usd=limit_usd,
    )  # fmt: skip


def _threshold_crossed(row: tuple[Any, ...]) -> ThresholdCrossed | None:
    """The highest threshold this spend reached above the one already alerted, if any."""
    budget_id, start, tokens, usd, alerted, limit_tokens, limit_usd, thresholds = row[:8]
    percent = spend_percent(tokens=tokens, usd=usd, limit_tokens=limit_tokens, limit_usd=limit_usd)
    if isinstance(thresholds, str):  # Django's connections read jsonb as text
        thresholds = json.loads(thresholds)
    reached = [t for t in thresholds or [] if alerted < t <= percent]
    if not reached:
        return None
    return ThresholdCrossed(
        budget_id=budget_id,
        period_start=start,
        threshold=max(reached),
        spent_tokens=int(tokens),
        spent_usd=Decimal(usd),
    )


def _alerts_claimed(crossed: list[ThresholdCrossed], *, at: datetime) -> list[ThresholdCrossed]:
    """The crossings this transaction is the first to claim (the period's alerted mark
    moves up under its row lock); a concurrent turn that crossed the same threshold
    claims nothing, so each threshold alerts once per budget and period."""
    claimed = []
    with connection.cursor() as cursor:
        for item in sorted(crossed, key=lambda c: (str(c.budget_id), c.period_start)):
            cursor.execute(
                ALERTED_SQL,
                {"budget": item.budget_id, "start": item.period_start,
                 "threshold": item.threshold, "at": at},
            )  # fmt: skip
            if cursor.fetchone() is not None:
                claimed.append(item)
    return claimed
