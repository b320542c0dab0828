"""Providers' usage and cost exports, read into one shape: per UTC day and model, the
tokens by Engram's convention (input includes cache reads and writes) and the USD.

Formats (the JSON the providers' admin APIs answer, saved to a file):

- `openai_usage`: `GET /v1/organization/usage/completions?group_by=model` — a page of
  buckets (`start_time`, Unix seconds) whose `results` carry `model`, `input_tokens`
  (cached ones included), `input_cached_tokens`, `output_tokens`, `num_model_requests`.
- `openai_costs`: `GET /v1/organization/costs?group_by=line_item` — buckets whose
  `results` carry `amount.value` (USD) and `line_item` ("<model>, input" …).
- `anthropic_usage`: `GET /v1/organizations/usage_report/messages?group_by[]=model` —
  buckets (`starting_at`, RFC 3339) whose `results` carry `uncached_input_tokens`,
  `cache_creation.ephemeral_5m_input_tokens` / `ephemeral_1h_input_tokens`,
  `cache_read_input_tokens`, `output_tokens`, `model`. Engram's input is their sum.
- `anthropic_costs`: `GET /v1/organizations/cost_report?group_by[]=description` —
  buckets whose `results` carry `amount` (a decimal string in cents), `currency`,
  `cost_type` (only `tokens` is model usage) and `model`.

Every problem is reported with the path of the value at fault (`export.data.0.results.2.
input_tokens`), and nothing is returned for a file with any problem.

Model names are compared without a trailing release date (`gpt-4o-mini-2024-07-18` and
`gpt-4o-mini`, `claude-sonnet-4-20250514` and `claude-sonnet-4`), lower case.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from sessions_app.model_names import model_key

FORMATS = ("openai_usage", "openai_costs", "anthropic_usage", "anthropic_costs")
PROVIDER_OF = {
    "openai_usage": "openai",
    "openai_costs": "openai",
    "anthropic_usage": "anthropic",
    "anthropic_costs": "anthropic",
}
MAX_BUCKETS = 10_000


class ExportError(ValueError):
    def __init__(self, errors: dict[str, list[str]]) -> None:
        super().__init__("; ".join(f"{k}: {v[0]}" for k, v in errors.items()))
        self.errors = errors


@dataclass
class ProviderDay:
    """One (day, model) of a provider's export; None: the file does not say."""

    day: date
    model: str
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int | None = None
    cache_write_tokens: int | None = None
    requests: int | None = None
    cost_usd: Decimal | None = None


@dataclass
class _Reader:
    errors: dict[str, list[str]] = field(default_factory=dict)

    def fail(self, path: str, message: str) -> None:
        self.errors.setdefault(path, []).append(message)

    def obj(self, value: Any, path: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            self.fail(path, "Must be an object.")
            return {}
        return value

    def items(self, value: Any, path: str) -> list[Any]:
        if not isinstance(value, list):
            self.fail(path, "Must be a list.")
            return []
        return value

    def count(self, row: dict[str, Any], name: str, path: str, required: bool = True) -> int:
        value = row.get(name)
        if value is None and not required:
            return 0
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            self.fail(f"{path}.{name}", "Must be an integer, zero or more.")
            return 0
        return value

    def text(self, row: dict[str, Any], name: str, path: str) -> str:
        value = row.get(name)
        if not isinstance(value, str) or not value.strip():
            self.fail(f"{path}.{name}", "Must be a non-blank string.")
            return ""
        return value

    def money(self, value: Any, path: str) -> Decimal:
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            self.fail(path, "Must be a number.")
            return Decimal(0)
        try:
            amount = Decimal(str(value))
        except InvalidOperation:
            amount = Decimal("NaN")
        if not amount.is_finite():
            self.fail(path, "Must be a finite number.")
            return Decimal(0)
        return amount

    def day(self, bucket: dict[str, Any], path: str, *, unix: bool) -> date | None:
        name = "start_time" if unix else "starting_at"
        value = bucket.get(name)
        try:
            if unix:
                if isinstance(value, bool) or not isinstance(value, int):
                    raise TypeError
                return datetime.fromtimestamp(value, tz=UTC).date()
            if not isinstance(value, str):
                raise TypeError
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
            return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).astimezone(UTC).date()
        except (TypeError, ValueError, OverflowError, OSError):
            kind = "Unix seconds" if unix else "an RFC 3339 date-time"
            self.fail(f"{path}.{name}", f"Must be {kind}.")
            return None


def _buckets(reader: _Reader, document: Any, *, unix: bool) -> list[tuple[date, str, list]]:
    """(day, path, results) of each bucket of the page."""
    page = reader.obj(document, "export")
    data = reader.items(page.get("data"), "export.data")
    if len(data) > MAX_BUCKETS:
        reader.fail("export.data", f"At most {MAX_BUCKETS} buckets per file.")
        return []
    found = []
    for index, raw in enumerate(data):
        path = f"export.data.{index}"
        bucket = reader.obj(raw, path)
        day = reader.day(bucket, path, unix=unix)
        results = reader.items(bucket.get("results"), f"{path}.results")
        if day is not None:
            found.append((day, path, results))
    return found


def _row(rows: dict[tuple[date, str], ProviderDay], day: date, model: str) -> ProviderDay:
    key = (day, model_key(model))
    if key not in rows:
        rows[key] = ProviderDay(day=day, model=key[1])
    return rows[key]


def _add(row: ProviderDay, name: str, value: Any) -> None:
    setattr(row, name, (getattr(row, name) or 0) + value)


def _openai_usage(reader: _Reader, document: Any, rows: dict) -> None:
    for day, path, results in _buckets(reader, document, unix=True):
        for index, raw in enumerate(results):
            where = f"{path}.results.{index}"
            result = reader.obj(raw, where)
            model = reader.text(result, "model", where)
            counts = {
                "input_tokens": reader.count(result, "input_tokens", where),
                "output_tokens": reader.count(result, "output_tokens", where),
                "cached_tokens": reader.count(result, "input_cached_tokens", where, False),
                "requests": reader.count(result, "num_model_requests", where, False),
            }
            if counts["cached_tokens"] > counts["input_tokens"]:
                reader.fail(
                    f"{where}.input_cached_tokens", "Exceeds input_tokens, which include it."
                )
            if model:
                row = _row(rows, day, model)
                for name, value in counts.items():
                    _add(row, name, value)
                _add(row, "cache_write_tokens", 0)


def _openai_costs(reader: _Reader, document: Any, rows: dict) -> None:
    for day, path, results in _buckets(reader, document, unix=True):
        for index, raw in enumerate(results):
            where = f"{path}.results.{index}"
            result = reader.obj(raw, where)
            line = result.get("line_item")
            if not isinstance(line, str) or not line.split(",")[0].strip():
                reader.fail(f"{where}.line_item", "Needed to tell the model: export with "
                            "group_by=line_item.")  # fmt: skip
                continue
            amount = reader.obj(result.get("amount"), f"{where}.amount")
            if str(amount.get("currency", "")).lower() != "usd":
                reader.fail(f"{where}.amount.currency", "Only usd is reconciled.")
                continue
            value = reader.money(amount.get("value"), f"{where}.amount.value")
            _add(_row(rows, day, line.split(",")[0]), "cost_usd", value)


def _anthropic_usage(reader: _Reader, document: Any, rows: dict) -> None:
    for day, path, results in _buckets(reader, document, unix=False):
        for index, raw in enumerate(results):
            where = f"{path}.results.{index}"
            result = reader.obj(raw, where)
            model = reader.text(result, "model", where)
            creation = result.get("cache_creation") or {}
            creation = reader.obj(creation, f"{where}.cache_creation")
            at = f"{where}.cache_creation"
            writes = reader.count(creation, "ephemeral_5m_input_tokens", at, False)
            writes += reader.count(creation, "ephemeral_1h_input_tokens", at, False)
            reads = reader.count(result, "cache_read_input_tokens", where, False)
            uncached = reader.count(result, "uncached_input_tokens", where)
            output = reader.count(result, "output_tokens", where)
            if model:
                row = _row(rows, day, model)
                _add(row, "input_tokens", uncached + reads + writes)
                _add(row, "output_tokens", output)
                _add(row, "cached_tokens", reads)
                _add(row, "cache_write_tokens", writes)


def _anthropic_costs(reader: _Reader, document: Any, rows: dict) -> None:
    for day, path, results in _buckets(reader, document, unix=False):
        for index, raw in enumerate(results):
            where = f"{path}.results.{index}"
            result = reader.obj(raw, where)
            if result.get("cost_type", "tokens") != "tokens":
                continue  # web search, code execution: not a model's tokens
            if str(result.get("currency", "")).upper() != "USD":
                reader.fail(f"{where}.currency", "Only USD is reconciled.")
                continue
            model = reader.text(result, "model", where)
            cents = reader.money(result.get("amount"), f"{where}.amount")
            if model:
                _add(_row(rows, day, model), "cost_usd", cents / 100)


READERS = {
    "openai_usage": _openai_usage,
    "openai_costs": _openai_costs,
    "anthropic_usage": _anthropic_usage,
    "anthropic_costs": _anthropic_costs,
}


def provider_export_read(*, export_format: str, document: Any) -> list[ProviderDay]:
    """The export's days and models; ExportError naming every value at fault."""
    if export_format not in READERS:
        raise ExportError({"format": [f"Unknown format; one of {', '.join(FORMATS)}."]})
    reader = _Reader()
    rows: dict[tuple[date, str], ProviderDay] = defaultdict()
    READERS[export_format](reader, document, rows)
    if reader.errors:
        raise ExportError(reader.errors)
    return sorted(rows.values(), key=lambda row: (row.day, row.model))
