"""Reconciliation: Engram's tokens and cost against a provider's, per UTC day and model.

Engram's side sums the tenant's recorded steps of the day by model, as its `model_key`
(without a gateway's route or a release date, `sessions_app.model_names`), keeping the
models that are the provider's: those its exports name, and those whose price row names
it as provider. The provider's side is
what its imported exports say. Drift is Engram minus provider: positive when Engram counts more.
Days and models only one side knows are listed too (the other side is zero), so a call
Engram never saw shows as negative drift. Only days the provider's imports cover are
reported.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from django.db.models import F, Sum, Value
from django.db.models.functions import Coalesce, TruncDate

from analytics_app.models import ProviderUsage
from analytics_app.pricing import price_for_model
from sessions_app.model_names import model_key
from sessions_app.selectors.turns import step_list

if TYPE_CHECKING:
    from sessions_app.models import Tenant

COMPARED = ("input_tokens", "output_tokens", "cached_tokens", "cost_usd")
MAX_ROWS = 2000


@dataclass(frozen=True)
class ReconciliationReport:
    provider: str
    start: date
    end: date  # inclusive
    rows: list[dict[str, Any]]
    totals: dict[str, Any]
    truncated: bool


def _engram(
    tenant: Tenant, start: date, end: date
) -> tuple[dict[tuple[date, str], dict[str, Any]], dict[str, str]]:
    """Sums per (day, model key), and one recorded name of each model key."""
    begin = datetime.combine(start, time(), tzinfo=UTC)
    stop = datetime.combine(end + timedelta(days=1), time(), tzinfo=UTC)
    zero = Value(0)
    grouped = (
        step_list(tenant=tenant, start=begin, end=stop)
        .exclude(model="")
        .annotate(day=TruncDate("created_at", tzinfo=UTC), step_model=F("model"))
        .values("day", "step_model")
        .annotate(
            input_tokens=Coalesce(Sum("input_tokens"), zero),
            output_tokens=Coalesce(Sum("output_tokens"), zero),
            cached_tokens=Coalesce(Sum("cached_tokens"), zero),
            cost_usd=Coalesce(Sum("cost_usd"), Value(Decimal(0))),
        )
    )
    sums: dict[tuple[date, str], dict[str, Any]] = defaultdict(lambda: dict.fromkeys(COMPARED, 0))
    names: dict[str, str] = {}
    for row in grouped:
        values: dict[str, Any] = dict(row)
        key = model_key(values["step_model"])
        names.setdefault(key, values["step_model"])
        bucket = sums[(values["day"], key)]
        for name in COMPARED:
            bucket[name] += values[name]
    return sums, names


def _providers_models(provider: str, names: dict[str, str], at: datetime) -> set[str]:
    """The model keys whose price row (valid at `at`) names `provider`."""
    found = set()
    for key, name in names.items():
        price = price_for_model(name, at)
        if price is not None and price.provider == provider:
            found.add(key)
    return found


def reconciliation_report(
    *, tenant: Tenant, provider: str, start: date, end: date
) -> ReconciliationReport:
    """Per (day, model) in [start, end] (UTC days), oldest first."""
    imported = ProviderUsage.objects.filter(
        tenant=tenant, provider=provider, day__gte=start, day__lte=end
    )
    theirs = {(row.day, row.model): row for row in imported}
    days = {day for day, _ in theirs}
    sums, names = _engram(tenant, start, end)
    at = datetime.combine(end, time(), tzinfo=UTC)
    models = {model for _, model in theirs} | _providers_models(provider, names, at)
    ours = {key: s for key, s in sums.items() if key[0] in days and key[1] in models}
    rows = []
    totals: dict[str, Any] = {f"{side}_{n}": 0 for side in ("engram", "provider") for n in COMPARED}
    for day, model in sorted(set(theirs) | set(ours)):
        mine = ours.get((day, model), dict.fromkeys(COMPARED, 0))
        other = theirs.get((day, model))
        row: dict[str, Any] = {"day": day, "model": model}
        for name in COMPARED:
            value = None if other is None else getattr(other, name)
            provider_value = 0 if other is None else value
            row[f"engram_{name}"] = mine[name]
            row[f"provider_{name}"] = provider_value
            # A column the provider's files have not given (no cost export yet): no drift.
            row[f"drift_{name}"] = None if provider_value is None else mine[name] - provider_value
            totals[f"engram_{name}"] += mine[name]
            totals[f"provider_{name}"] += provider_value or 0
        rows.append(row)
    for name in COMPARED:
        totals[f"drift_{name}"] = totals[f"engram_{name}"] - totals[f"provider_{name}"]
    return ReconciliationReport(
        provider=provider,
        start=start,
        end=end,
        rows=rows[:MAX_ROWS],
        totals=totals,
        truncated=len(rows) > MAX_ROWS,
    )
