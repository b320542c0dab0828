"""Pricing a step: find the model's price valid at the step's time, apply the formula.

Registered as sessions_app's step pricer in `AnalyticsAppConfig.ready()`, so sessions_app
prices steps without importing this app. A model without a price is not an error: the
step is stored with `cost_usd = null` and `price_missing = true`.
"""

from __future__ import annotations

import re
from datetime import datetime
from decimal import Decimal
from functools import lru_cache

from django.db.models import Q

from analytics_app.models import ModelPrice
from sessions_app.hooks import StepUsage

MILLION = Decimal(1_000_000)


@lru_cache(maxsize=2048)
def _compiled(pattern: str) -> re.Pattern[str] | None:
    try:
        return re.compile(pattern, re.IGNORECASE)
    except re.error:
        return None  # an operator's broken pattern must not break turn recording


def price_for_model(model: str, at: datetime) -> ModelPrice | None:
    """The price row for `model` valid at `at`: exact name or alias first, then the most
    specific pattern (longest canonical name); the latest `valid_from <= at` of that model."""
    name = model.strip().lower()
    if not name:
        return None
    valid = ModelPrice.objects.filter(valid_from__lte=at)
    exact = valid.filter(Q(model=name) | Q(aliases__contains=[name])).order_by("-valid_from")
    found = exact.first()
    if found is not None:
        return found
    latest_by_model: dict[str, ModelPrice] = {}
    for row in valid.exclude(pattern="").order_by("model", "-valid_from"):
        latest_by_model.setdefault(row.model, row)
    matches = [
        row
        for row in latest_by_model.values()
        if (compiled := _compiled(row.pattern)) is not None and compiled.search(name)
    ]
    if not matches:
        return None
    return max(matches, key=lambda row: (len(row.model), row.model))


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
    uncached = max(usage.input_tokens - usage.cached_tokens - usage.cache_write_tokens, 0)
    total = (
        Decimal(uncached) * price.input_per_million
        + Decimal(usage.cached_tokens) * cached_price
        + Decimal(usage.cache_write_tokens) * write_price
        + Decimal(usage.output_tokens) * price.output_per_million
    )
    return total / MILLION


def price_step_from_table(usage: StepUsage) -> Decimal | None:
    """The `StepPricer` analytics_app registers with sessions_app."""
    price = price_for_model(usage.model, usage.at)
    return None if price is None else step_cost(price, usage)
