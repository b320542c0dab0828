"""Pricing a step: find the model's price valid at the step's time, apply the formula.

Registered as sessions_app's step pricer in `AnalyticsAppConfig.ready()`, so sessions_app
prices steps without importing this app. A model without a price is not an error: the
step is stored with `cost_usd = null` and `price_missing = true`.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from functools import lru_cache

from django.conf import settings
from django.utils import timezone

from analytics_app.models import ModelPrice
from sessions_app.hooks import StepUsage
from sessions_app.model_names import without_provider_prefix

MILLION = Decimal(1_000_000)


@lru_cache(maxsize=2048)
def _compiled(pattern: str) -> re.Pattern[str] | None:
    try:
        return re.compile(pattern, re.IGNORECASE)
    except re.error:
        return None  # an operator's broken pattern must not break turn recording


@dataclass(frozen=True)
class _PriceTable:
    """All price rows, indexed: read once per `ENGRAM_PRICE_CACHE_SECONDS` per process
    instead of up to two queries per step (B1 in bench/RESULTS.md measured those at a
    sixth of a turn's server time). An edit through the ORM clears it in this process at
    once; other processes see it within the TTL."""

    loaded_at: float
    by_name: dict[str, list[ModelPrice]]  # model and alias names; newest valid_from first
    patterned: list[ModelPrice]  # ordered by model, newest valid_from first


_table: _PriceTable | None = None


def price_table_clear(**_kwargs: object) -> None:
    """Forget the cached table (a signal receiver, hence the keyword arguments)."""
    global _table
    _table = None


def _price_table() -> _PriceTable:
    global _table
    table = _table
    ttl = settings.ENGRAM_PRICE_CACHE_SECONDS
    if table is not None and time.monotonic() - table.loaded_at < ttl:
        return table
    by_name: dict[str, list[ModelPrice]] = {}
    patterned: list[ModelPrice] = []
    for row in ModelPrice.objects.order_by("model", "-valid_from"):
        for name in {row.model, *row.aliases}:
            by_name.setdefault(name, []).append(row)
        if row.pattern:
            patterned.append(row)
    for rows in by_name.values():
        rows.sort(key=lambda row: row.valid_from, reverse=True)
    table = _PriceTable(loaded_at=time.monotonic(), by_name=by_name, patterned=patterned)
    _table = table  # a plain assignment: threads see the old table or the new one
    return table


def price_for_model(model: str, at: datetime) -> ModelPrice | None:
    """The price row for `model` valid at `at`: exact name or alias first, then the most
    specific pattern (longest canonical name); the latest `valid_from <= at` of that model.
    A name routed through a gateway (`openai/gpt-4o-mini`) is priced as the provider's
    own name (`sessions_app.model_names`, which model budgets count by too) unless a
    price row names it exactly."""
    name = model.strip().lower()
    if not name:
        return None
    table = _price_table()
    found = _price_by_name(table, name, at)
    bare = without_provider_prefix(name)
    if found is None and bare != name:
        found = _price_by_name(table, bare, at) or _price_by_pattern(table, bare, at)
    return found or _price_by_pattern(table, name, at)


def _price_by_name(table: _PriceTable, name: str, at: datetime) -> ModelPrice | None:
    for row in table.by_name.get(name, ()):
        if row.valid_from <= at:
            return row
    return None


def _price_by_pattern(table: _PriceTable, name: str, at: datetime) -> ModelPrice | None:
    latest_by_model: dict[str, ModelPrice] = {}
    for row in table.patterned:
        if row.valid_from <= at:
            latest_by_model.setdefault(row.model, row)
    matches = [
        row
        for row in latest_by_model.values()
        if (compiled := _compiled(row.pattern)) is not None and compiled.search(name)
    ]
    if not matches:
        return None
    return max(matches, key=lambda row: (len(row.model), row.model))


def context_window_for_model(model: str) -> int | None:
    """The context window recorded with the model's current price (None when unknown)."""
    price = price_for_model(model, timezone.now())
    return None if price is None else price.context_window


def step_cost(price: ModelPrice, usage: StepUsage) -> Decimal:
    """USD, exact: input_tokens include cached and cache-write tokens, so only the rest is
    billed at the input price; output tokens include reasoning tokens."""
    cached_price = (
        price.cached_input_per_million
        if price.cached_input_per_million is not None
        else price.input_per_million
    )
    write_price = (
        price.cache_write_per_million
        if price.cache_write_per_million is not None
        else price.input_per_million
    )
    tokens = usage.tokens
    uncached = max(tokens.input_tokens - tokens.cached_tokens - tokens.cache_write_tokens, 0)
    total = (
        Decimal(uncached) * price.input_per_million
        + Decimal(tokens.cached_tokens) * cached_price
        + Decimal(tokens.cache_write_tokens) * write_price
        + Decimal(tokens.output_tokens) * price.output_per_million
    )
    return total / MILLION


def price_step_from_table(usage: StepUsage) -> Decimal | None:
    """The `StepPricer` analytics_app registers with sessions_app."""
    price = price_for_model(usage.model, usage.at)
    return None if price is None else step_cost(price, usage)
