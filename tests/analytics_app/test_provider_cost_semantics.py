"""Providers' token semantics and what they cost, case by case.

Each case is a provider's own usage record (or an OpenTelemetry span's `gen_ai.usage.*`
attributes) as it reaches Engram, the counts Engram must store (its convention: input
includes cached and cache-written tokens, output includes reasoning tokens; see
`sessions_app.usage`), and the cost to the micro-dollar from the price rows below, worked
out by hand: uncached input at the input price, cache reads at the cached price (the
input price when the row has none), cache writes at the cache-write price, output
(reasoning included, billed once) at the output price.

The rows carry the providers' published list prices per million tokens for the model
each name recalls, under names of their own so that the seeded table cannot interfere.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
from rest_framework.test import APIClient

from analytics_app.pricing import price_table_clear
from analytics_app.services.prices import PriceEntry, prices_load
from integrations.otlp_decode import parse_request, spans_of
from integrations.otlp_ingest import ingest_spans
from sessions_app.models import Tenant, TurnStep
from tests.sessions_app.helpers import create_session, post_turn, turn_body

PRICES = {
    # model: (input, cache read, cache write, output) USD per million tokens
    "case-gpt-4o": ("2.50", "1.25", None, "10.00"),
    "case-o3-mini": ("1.10", "0.55", None, "4.40"),
    "case-claude-sonnet-4": ("3.00", "0.30", "3.75", "15.00"),
    "case-gemini-2.5-flash": ("0.30", "0.075", None, "2.50"),
    "case-plain": ("1.00", None, None, "2.00"),  # no cache prices: cache billed as input
}
COUNTS = ("input_tokens", "output_tokens", "cached_tokens", "cache_write_tokens",
          "reasoning_tokens")  # fmt: skip


@pytest.fixture
def price_rows(db: None) -> None:
    prices_load(
        entries=[
            PriceEntry(
                model=model,
                provider="test",
                pattern="",
                input_per_million=Decimal(prices[0]),
                cached_input_per_million=None if prices[1] is None else Decimal(prices[1]),
                cache_write_per_million=None if prices[2] is None else Decimal(prices[2]),
                output_per_million=Decimal(prices[3]),
                valid_from=datetime(2000, 1, 1, tzinfo=UTC),
                source="provider semantics test",
            )
            for model, prices in PRICES.items()
        ]
    )
    price_table_clear()


# (case, model, usage object, stored counts (in, out, cached, cache write, reasoning), USD)
USAGE_CASES: list[tuple[str, str, dict[str, Any], tuple[int, ...], str]] = [
    (
        "openai chat: prompt_tokens include cached_tokens",
        "case-gpt-4o",
        {"prompt_tokens": 2006, "completion_tokens": 300, "total_tokens": 2306,
         "prompt_tokens_details": {"cached_tokens": 1920, "audio_tokens": 0},
         "completion_tokens_details": {"reasoning_tokens": 0}},
        (2006, 300, 1920, 0, 0),
        # 86 x 2.50 + 1920 x 1.25 + 300 x 10.00 = 5615 micro-dollars
        "0.005615",
    ),
    (
        "openai chat: completion_tokens include reasoning_tokens, billed once",
        "case-o3-mini",
        {"prompt_tokens": 1000, "completion_tokens": 500,
         "completion_tokens_details": {"reasoning_tokens": 384}},
        (1000, 500, 0, 0, 384),
        "0.003300",  # 1000 x 1.10 + 500 x 4.40
    ),
    (
        "openai responses: input_tokens include cached, output include reasoning",
        "case-gpt-4o",
        {"input_tokens": 5000, "input_tokens_details": {"cached_tokens": 4096},
         "output_tokens": 900, "output_tokens_details": {"reasoning_tokens": 700},
         "total_tokens": 5900},
        (5000, 900, 4096, 0, 700),
        "0.016380",  # 904 x 2.50 + 4096 x 1.25 + 900 x 10.00
    ),
    (
        "anthropic: cache creation and cache reads are beside input_tokens",
        "case-claude-sonnet-4",
        {"input_tokens": 50, "cache_creation_input_tokens": 2000,
         "cache_read_input_tokens": 10000, "output_tokens": 400},
        (12050, 400, 10000, 2000, 0),
        "0.016650",  # 50 x 3.00 + 10000 x 0.30 + 2000 x 3.75 + 400 x 15.00
    ),
    (
        "anthropic: zero cache fields still mark the shape",
        "case-claude-sonnet-4",
        {"input_tokens": 1200, "cache_creation_input_tokens": 0,
         "cache_read_input_tokens": 0, "output_tokens": 300},
        (1200, 300, 0, 0, 0),
        "0.008100",  # 1200 x 3.00 + 300 x 15.00
    ),
    (
        "gemini: promptTokenCount includes cachedContentTokenCount; thoughts beside output",
        "case-gemini-2.5-flash",
        {"promptTokenCount": 10000, "cachedContentTokenCount": 8000,
         "candidatesTokenCount": 500, "thoughtsTokenCount": 1500,
         "totalTokenCount": 12000},
        (10000, 2000, 8000, 0, 1500),
        "0.006200",  # 2000 x 0.30 + 8000 x 0.075 + 2000 x 2.50
    ),
    (
        "no cached price: cache reads billed at the input price",
        "case-plain",
        {"prompt_tokens": 1000, "completion_tokens": 100,
         "prompt_tokens_details": {"cached_tokens": 400}},
        (1000, 100, 400, 0, 0),
        "0.001200",  # 600 x 1.00 + 400 x 1.00 + 100 x 2.00
    ),
    (
        "a fraction of a micro-dollar is kept, not rounded away",
        "case-gpt-4o",
        {"prompt_tokens": 1, "completion_tokens": 1},
        (1, 1, 0, 0, 0),
        "0.0000125",  # 2.50 + 10.00 millionths of a dollar
    ),
]  # fmt: skip


def _stored(step: TurnStep) -> tuple[int, ...]:
    return tuple(getattr(step, name) for name in COUNTS)


@pytest.mark.parametrize(
    ("model", "usage", "counts", "usd"),
    [case[1:] for case in USAGE_CASES],
    ids=[case[0] for case in USAGE_CASES],
)
def test_a_provider_usage_object_is_counted_and_priced_by_its_own_semantics(
    api: APIClient, price_rows: None, model: str, usage: dict[str, Any], counts: tuple, usd: str
) -> None:
    sid = create_session(api)["id"]
    step = {"step_type": "response", "model": model, "usage": usage}
    response = post_turn(api, sid, turn_body(steps=[step]))
    assert response.status_code == 201, response.content
    stored = TurnStep.objects.get(session_id=sid)
    assert _stored(stored) == counts
    assert stored.cost_usd == Decimal(usd)
    assert not stored.price_missing


def _span(attributes: dict[str, Any], n: int) -> dict[str, Any]:
    attrs = [
        {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
        {"key": "gen_ai.conversation.id", "value": {"stringValue": f"conv-{n}"}},
    ]
    for key, value in attributes.items():
        kind = "stringValue" if isinstance(value, str) else "intValue"
        attrs.append({"key": key, "value": {kind: str(value)}})
    return {
        "traceId": f"{n + 1:032x}", "spanId": f"{n + 1:016x}", "name": "chat", "kind": 3,
        "startTimeUnixNano": "1700000000000000000", "endTimeUnixNano": "1700000000250000000",
        "attributes": attrs, "status": {},
    }  # fmt: skip


# (case, span attributes, stored counts, USD). OpenTelemetry's conventions count cache
# reads and writes inside gen_ai.usage.input_tokens, whoever the provider.
OTEL_CASES: list[tuple[str, dict[str, Any], tuple[int, ...], str]] = [
    (
        "current names: cache_read.input_tokens and reasoning.output_tokens",
        {"gen_ai.request.model": "case-gpt-4o", "gen_ai.usage.input_tokens": 2006,
         "gen_ai.usage.output_tokens": 300, "gen_ai.usage.cache_read.input_tokens": 1920,
         "gen_ai.usage.reasoning.output_tokens": 0},
        (2006, 300, 1920, 0, 0),
        "0.005615",  # as the OpenAI usage object above
    ),
    (
        "older names: prompt_tokens and completion_tokens",
        {"gen_ai.request.model": "case-o3-mini", "gen_ai.usage.prompt_tokens": 1000,
         "gen_ai.usage.completion_tokens": 500, "gen_ai.usage.reasoning_tokens": 384},
        (1000, 500, 0, 0, 384),
        "0.003300",
    ),
    (
        "anthropic through OTel: cache_read/cache_creation inside input_tokens",
        {"gen_ai.request.model": "case-claude", "gen_ai.response.model": "case-claude-sonnet-4",
         "gen_ai.usage.input_tokens": 12050, "gen_ai.usage.output_tokens": 400,
         "gen_ai.usage.cache_read_input_tokens": 10000,
         "gen_ai.usage.cache_creation_input_tokens": 2000},
        (12050, 400, 10000, 2000, 0),
        "0.016650",  # the same call as Anthropic's own usage object above: the same cost
    ),
    (
        "cached_tokens variant",
        {"gen_ai.request.model": "case-gemini-2.5-flash", "gen_ai.usage.input_tokens": 10000,
         "gen_ai.usage.output_tokens": 2000, "gen_ai.usage.cached_tokens": 8000},
        (10000, 2000, 8000, 0, 0),
        "0.006200",
    ),
]  # fmt: skip


@pytest.mark.parametrize(
    ("attributes", "counts", "usd"),
    [case[1:] for case in OTEL_CASES],
    ids=[case[0] for case in OTEL_CASES],
)
def test_an_otel_genai_span_is_counted_and_priced_by_the_conventions(
    tenant: Tenant, price_rows: None, attributes: dict[str, Any], counts: tuple, usd: str
) -> None:
    resource = {"attributes": [{"key": "service.name", "value": {"stringValue": "agent"}}]}
    body = {"resourceSpans": [{"resource": resource, "scopeSpans": [
        {"scope": {"name": "t"}, "spans": [_span(attributes, 7)]}]}]}  # fmt: skip
    spans = spans_of(parse_request(json.dumps(body).encode(), "application/json"))
    report = ingest_spans(tenant=tenant, spans=spans)
    assert report.turns_recorded == 1, report.as_dict()
    stored = TurnStep.objects.get()
    assert _stored(stored) == counts
    assert stored.cost_usd == Decimal(usd)
