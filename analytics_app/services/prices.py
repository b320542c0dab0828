"""Seeding and refreshing the `model_price` table from maintained, offline price data.

Source: the `genai-prices` package (pydantic/genai-prices). Its bundled data module
(`genai_prices.data`) is plain Python; the package only goes to the network when
`genai_prices.UpdatePrices` is started, which Engram never does. So loading prices works
offline and is reproducible for a pinned version. Prices a release lacks for models we
rely on come from `analytics_app/data/prices_snapshot.json` (committed, with its source).

What is imported: first-party providers only (a step names a model, not a provider, so
the first provider in `PROVIDERS` that prices a model wins); text-token prices only (the
base tier of tiered prices; start-date variants become rows with that `valid_from`;
time-of-day discounts are ignored). Rows an operator entered or edited (any `source`
not written by this loader) are never overwritten.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from importlib.metadata import version
from pathlib import Path
from typing import Any

from django.db import connection, transaction

from analytics_app.models import ModelPrice
from analytics_app.pricing import price_table_clear

PROVIDERS = ["openai", "anthropic", "google", "mistral", "deepseek", "x-ai", "cohere"]
SNAPSHOT_PATH = Path(__file__).resolve().parents[1] / "data" / "prices_snapshot.json"
# Prices with no start date are valid "since always": the earliest step we could price.
SINCE_ALWAYS = datetime(2000, 1, 1, tzinfo=UTC)
LOADER_SOURCES = ("genai-prices", "engram snapshot")


@dataclass(frozen=True)
class PriceEntry:
    model: str
    provider: str
    pattern: str
    input_per_million: Decimal
    cached_input_per_million: Decimal | None
    cache_write_per_million: Decimal | None
    output_per_million: Decimal
    valid_from: datetime
    source: str
    aliases: list[str] = field(default_factory=list)
    context_window: int | None = None


@dataclass(frozen=True)
class PricesLoadResult:
    created: int
    updated: int
    kept: int


def clause_to_regex(clause: Any) -> str:
    """genai-prices' match clauses as one regular expression for `re.search`."""
    kind = type(clause).__name__
    if kind == "ClauseEquals":
        return f"^{re.escape(clause.equals.lower())}$"
    if kind == "ClauseStartsWith":
        return f"^{re.escape(clause.starts_with.lower())}"
    if kind == "ClauseEndsWith":
        return f"{re.escape(clause.ends_with.lower())}$"
    if kind == "ClauseContains":
        return re.escape(clause.contains.lower())
    if kind == "ClauseRegex":
        return f"(?:{clause.regex})"
    if kind == "ClauseOr":
        return "(?:" + "|".join(clause_to_regex(part) for part in clause.or_) + ")"
    if kind == "ClauseAnd":
        return "^" + "".join(f"(?=.*?(?:{clause_to_regex(part)}))" for part in clause.and_)
    raise ValueError(f"unknown genai-prices clause {kind}")


def _base(value: Any) -> Decimal | None:
    """A flat price, or the base tier of a tiered one."""
    if value is None:
        return None
    return Decimal(str(getattr(value, "base", value)))


def genai_price_entries(providers: list[str] | None = None) -> list[PriceEntry]:
    from genai_prices.data import providers as bundled  # offline: plain Python data

    source = f"genai-prices {version('genai-prices')}"
    wanted = providers or PROVIDERS
    by_id = {provider.id: provider for provider in bundled}
    seen: set[str] = set()
    entries: list[PriceEntry] = []
    for provider_id in wanted:
        provider = by_id.get(provider_id)
        if provider is None:
            continue
        for info in provider.models:
            name = info.id.lower()
            if name in seen:
                continue
            variants = info.prices if isinstance(info.prices, list) else [info.prices]
            for variant in variants:
                constraint = getattr(variant, "constraint", None)
                prices = getattr(variant, "prices", variant)
                if constraint is not None and not hasattr(constraint, "start_date"):
                    continue  # time-of-day discounts: not modelled
                input_price = _base(getattr(prices, "input_mtok", None))
                output_price = _base(getattr(prices, "output_mtok", None))
                if input_price is None or output_price is None:
                    continue  # not priced per text token (images, audio, OCR pages)
                valid_from = (
                    datetime.combine(constraint.start_date, datetime.min.time(), tzinfo=UTC)
                    if constraint is not None
                    else SINCE_ALWAYS
                )
                entries.append(
                    PriceEntry(
                        model=name,
                        provider=provider_id,
                        pattern=clause_to_regex(info.match),
                        input_per_million=input_price,
                        cached_input_per_million=_base(getattr(prices, "cache_read_mtok", None)),
                        cache_write_per_million=_base(getattr(prices, "cache_write_mtok", None)),
                        output_per_million=output_price,
                        valid_from=valid_from,
                        source=source,
                        context_window=getattr(info, "context_window", None),
                    )
                )
            seen.add(name)
    return entries


def snapshot_entries(path: Path = SNAPSHOT_PATH) -> list[PriceEntry]:
    raw = json.loads(path.read_text())
    entries = []
    for item in raw["prices"]:
        entries.append(
            PriceEntry(
                model=item["model"].lower(),
                provider=item.get("provider", ""),
                pattern=item.get("pattern", ""),
                aliases=item.get("aliases", []),
                input_per_million=Decimal(item["input_per_million"]),
                cached_input_per_million=_optional_decimal(item.get("cached_input_per_million")),
                cache_write_per_million=_optional_decimal(item.get("cache_write_per_million")),
                output_per_million=Decimal(item["output_per_million"]),
                valid_from=datetime.fromisoformat(item["valid_from"]),
                source=item["source"],
                context_window=item.get("context_window"),
            )
        )
    return entries


def _optional_decimal(value: str | None) -> Decimal | None:
    return None if value is None else Decimal(value)


def default_price_entries() -> list[PriceEntry]:
    """genai-prices, plus the committed snapshot for models genai-prices does not price."""
    entries = genai_price_entries()
    priced = {entry.model for entry in entries}
    entries += [entry for entry in snapshot_entries() if entry.model not in priced]
    return entries


@transaction.atomic
def prices_load(*, entries: list[PriceEntry] | None = None) -> PricesLoadResult:
    """Insert missing prices, refresh the loader's own rows, keep operators' rows."""
    entries = default_price_entries() if entries is None else entries
    existing = {
        (row.model, row.valid_from): row
        for row in ModelPrice.objects.filter(model__in={entry.model for entry in entries})
    }
    to_create: list[ModelPrice] = []
    created = updated = kept = 0
    fields = [
        "provider",
        "pattern",
        "aliases",
        "input_per_million",
        "cached_input_per_million",
        "cache_write_per_million",
        "output_per_million",
        "source",
        "context_window",
    ]
    for entry in entries:
        values = {name: getattr(entry, name) for name in fields}
        row = existing.get((entry.model, entry.valid_from))
        if row is None:
            to_create.append(ModelPrice(model=entry.model, valid_from=entry.valid_from, **values))
            created += 1
        elif row.source.startswith(LOADER_SOURCES):
            for name, value in values.items():
                setattr(row, name, value)
            row.save(update_fields=[*fields, "updated_at"])
            updated += 1
        else:
            kept += 1
    ModelPrice.objects.bulk_create(to_create, ignore_conflicts=True)
    transaction.on_commit(price_table_clear)  # bulk_create sends no post_save
    return PricesLoadResult(created=created, updated=updated, kept=kept)


def prices_seed_if_empty(**kwargs: Any) -> None:
    """post_migrate receiver: a database without prices gets the default ones."""
    using = kwargs.get("using", "default")
    if (
        using != "default"
        or ModelPrice._meta.db_table not in connection.introspection.table_names()
    ):
        return
    if not ModelPrice.objects.exists():
        prices_load()
