"""Reconciliation: a provider's usage and cost exports against what Engram recorded, per
UTC day and model. The exports below are what the providers' admin APIs answer (their
field names), written out here so that no network is needed."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
from rest_framework.test import APIClient

from analytics_app.models import ProviderUsage
from analytics_app.pricing import price_table_clear
from analytics_app.services.prices import PriceEntry, prices_load
from sessions_app.models import Tenant
from sessions_app.services.sessions import session_create
from sessions_app.services.turn_recording import turn_record
from sessions_app.services.turn_totals import StepInput
from sessions_app.usage import TokenCounts, normalise_usage
from tests.sessions_app.helpers import assert_error

DAY1 = datetime(2026, 10, 5, tzinfo=UTC)
DAY2 = datetime(2026, 10, 6, tzinfo=UTC)
# Provider; USD per million: input, cache read, cache write, output (the providers' list prices).
PRICES = {
    "gpt-4o-mini": ("openai", "0.15", "0.075", None, "0.60"),
    "gpt-4o": ("openai", "2.50", "1.25", None, "10.00"),
    "claude-sonnet-4": ("anthropic", "3.00", "0.30", "3.75", "15.00"),
}


@pytest.fixture
def recorded(tenant: Tenant) -> None:
    """Engram's side: what the agents recorded on two days."""
    prices_load(
        entries=[
            PriceEntry(
                model=model,
                provider=p[0],
                pattern="",
                input_per_million=Decimal(p[1]),
                cached_input_per_million=Decimal(p[2]),
                cache_write_per_million=None if p[3] is None else Decimal(p[3]),
                output_per_million=Decimal(p[4]),
                valid_from=datetime(2026, 10, 1, tzinfo=UTC),
                source="reconciliation test",
            )
            for model, p in PRICES.items()
        ]
    )
    price_table_clear()
    session = session_create(tenant=tenant, user_id="u1", agent_id="a", ttl_seconds=10**7)

    def step(model: str, counts: TokenCounts) -> StepInput:
        return StepInput(step_type="chat", model=model, counts=counts)

    at1, at2 = DAY1.replace(hour=9), DAY2.replace(hour=23, minute=59)
    turn_record(tenant=tenant, session_id=session.pk, now=at1, steps=[
        step("gpt-4o-mini", TokenCounts(input_tokens=1000, cached_tokens=200, output_tokens=100)),
        step("gpt-4o-mini", TokenCounts(input_tokens=3000, output_tokens=500)),
        step("claude-sonnet-4", normalise_usage({
            "input_tokens": 50, "cache_creation_input_tokens": 2000,
            "cache_read_input_tokens": 10000, "output_tokens": 400})),
    ])  # fmt: skip
    turn_record(tenant=tenant, session_id=session.pk, now=at2, steps=[
        step("gpt-4o", TokenCounts(input_tokens=2000, output_tokens=1000)),
    ])  # fmt: skip


def _unix(day: datetime) -> int:
    return int(day.timestamp())


def openai_usage() -> dict[str, Any]:
    def result(model: str, tin: int, tout: int, cached: int, calls: int) -> dict[str, Any]:
        return {"object": "organization.usage.completions.result", "input_tokens": tin,
                "output_tokens": tout, "input_cached_tokens": cached, "input_audio_tokens": 0,
                "output_audio_tokens": 0, "num_model_requests": calls, "project_id": None,
                "user_id": None, "api_key_id": None, "model": model, "batch": None}  # fmt: skip

    return {"object": "page", "has_more": False, "next_page": None, "data": [
        {"object": "bucket", "start_time": _unix(DAY1), "end_time": _unix(DAY2),
         "results": [result("gpt-4o-mini-2024-07-18", 4000, 600, 200, 2)]},
        {"object": "bucket", "start_time": _unix(DAY2), "end_time": _unix(DAY2) + 86400,
         "results": [result("gpt-4o-2024-08-06", 2000, 1000, 0, 1)]},
    ]}  # fmt: skip


def openai_costs() -> dict[str, Any]:
    def result(line: str, usd: float) -> dict[str, Any]:
        return {"object": "organization.costs.result", "amount": {"value": usd, "currency": "usd"},
                "line_item": line, "project_id": None}  # fmt: skip

    return {"object": "page", "has_more": False, "next_page": None, "data": [
        {"object": "bucket", "start_time": _unix(DAY1), "end_time": _unix(DAY2), "results": [
            # 3800 x 0.15 + 200 x 0.075 = 585; 600 x 0.60 = 360 (micro-dollars)
            result("gpt-4o-mini-2024-07-18, input", 0.000585),
            result("gpt-4o-mini-2024-07-18, output", 0.00036)]},
        {"object": "bucket", "start_time": _unix(DAY2), "end_time": _unix(DAY2) + 86400,
         "results": [result("gpt-4o-2024-08-06, input", 0.005),
                     result("gpt-4o-2024-08-06, output", 0.01)]},
    ]}  # fmt: skip


def anthropic_usage() -> dict[str, Any]:
    return {"has_more": False, "next_page": None, "data": [
        {"starting_at": "2026-10-05T00:00:00Z", "ending_at": "2026-10-06T00:00:00Z", "results": [
            {"uncached_input_tokens": 50, "cache_creation": {"ephemeral_1h_input_tokens": 0,
             "ephemeral_5m_input_tokens": 2000}, "cache_read_input_tokens": 10000,
             "output_tokens": 400, "server_tool_use": {"web_search_requests": 0},
             "api_key_id": None, "workspace_id": None, "model": "claude-sonnet-4-20250514",
             "service_tier": "standard", "context_window": "0-200k"}]},
    ]}  # fmt: skip


def anthropic_costs() -> dict[str, Any]:
    def result(cents: str, token_type: str | None, cost_type: str = "tokens") -> dict[str, Any]:
        return {"currency": "USD", "amount": cents, "workspace_id": None,
                "description": "Claude Sonnet 4 Usage", "cost_type": cost_type,
                "context_window": "0-200k", "model": "claude-sonnet-4-20250514",
                "service_tier": "standard", "token_type": token_type}  # fmt: skip

    return {"has_more": False, "next_page": None, "data": [
        {"starting_at": "2026-10-05T00:00:00Z", "ending_at": "2026-10-06T00:00:00Z", "results": [
            result("0.015", "uncached_input_tokens"), result("0.3", "cache_read_input_tokens"),
            result("0.75", "cache_creation.ephemeral_5m_input_tokens"),
            result("0.6", "output_tokens"), result("1.0", None, cost_type="web_search")]},
    ]}  # fmt: skip


def imported(api: APIClient, export_format: str, export: dict[str, Any]) -> dict[str, Any]:
    response = api.post(
        "/api/v1/usage/imports", {"format": export_format, "export": export}, format="json"
    )
    assert response.status_code == 201, response.content
    return response.json()  # type: ignore[no-any-return]


def report(api: APIClient, provider: str) -> dict[str, Any]:
    response = api.get(
        "/api/v1/usage/reconciliation", {"provider": provider, "from": "2026-10-01",
                                         "to": "2026-10-31"}
    )  # fmt: skip
    assert response.status_code == 200, response.content
    return response.json()  # type: ignore[no-any-return]


DRIFTS = ("drift_input_tokens", "drift_output_tokens", "drift_cached_tokens", "drift_cost_usd")


def drifts(row: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(row[name] for name in DRIFTS)


ZERO = (0, 0, 0, "0.000000")


@pytest.mark.django_db
def test_openai_exports_that_agree_reconcile_with_zero_drift(
    api: APIClient, recorded: None
) -> None:
    assert imported(api, "openai_usage", openai_usage())["rows"] == 2
    assert imported(api, "openai_costs", openai_costs())["rows"] == 2
    body = report(api, "openai")
    assert [(r["day"], r["model"]) for r in body["rows"]] == [
        ("2026-10-05", "gpt-4o-mini"),
        ("2026-10-06", "gpt-4o"),
    ]
    assert [drifts(row) for row in body["rows"]] == [ZERO, ZERO]
    mini = body["rows"][0]
    assert (mini["engram_input_tokens"], mini["engram_cost_usd"]) == (4000, "0.000945")
    assert body["totals"]["drift_cost_usd"] == "0.000000"


@pytest.mark.django_db
def test_an_altered_token_count_or_price_shows_as_exact_drift(
    api: APIClient, recorded: None
) -> None:
    usage = openai_usage()
    usage["data"][0]["results"][0]["output_tokens"] = 650  # the provider counted 50 more
    costs = openai_costs()
    costs["data"][1]["results"][1]["amount"]["value"] = 0.0125  # billed at $12.50/M output
    imported(api, "openai_usage", usage)
    imported(api, "openai_costs", costs)
    mini, big = report(api, "openai")["rows"]
    assert drifts(mini) == (0, -50, 0, "0.000000")
    assert drifts(big) == (0, 0, 0, "-0.002500")
    # Importing the corrected files replaces those days: the drift is gone.
    imported(api, "openai_usage", openai_usage())
    imported(api, "openai_costs", openai_costs())
    assert [drifts(row) for row in report(api, "openai")["rows"]] == [ZERO, ZERO]


@pytest.mark.django_db
def test_anthropic_cache_reads_and_writes_reconcile(api: APIClient, recorded: None) -> None:
    imported(api, "anthropic_usage", anthropic_usage())
    imported(api, "anthropic_costs", anthropic_costs())
    (row,) = report(api, "anthropic")["rows"]
    assert row["model"] == "claude-sonnet-4"
    assert row["provider_input_tokens"] == 12050 and row["provider_cost_usd"] == "0.016650"
    assert drifts(row) == ZERO
    altered = anthropic_usage()
    altered["data"][0]["results"][0]["cache_read_input_tokens"] = 9000
    imported(api, "anthropic_usage", altered)
    (row,) = report(api, "anthropic")["rows"]
    assert drifts(row) == (1000, 0, 1000, "0.000000")


@pytest.mark.django_db
def test_a_model_only_one_side_knows_is_drift_too(api: APIClient, recorded: None) -> None:
    usage = openai_usage()
    extra = copy.deepcopy(usage["data"][0]["results"][0])
    extra.update(model="gpt-4.1-nano-2025-04-14", input_tokens=70, output_tokens=7,
                 input_cached_tokens=0)  # fmt: skip
    usage["data"][0]["results"].append(extra)
    imported(api, "openai_usage", usage)
    rows = {r["model"]: r for r in report(api, "openai")["rows"]}
    nano = rows["gpt-4.1-nano"]
    assert (nano["drift_input_tokens"], nano["drift_output_tokens"]) == (-70, -7)
    assert nano["drift_cost_usd"] is None  # no cost export imported yet


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("export_format", "mutate", "field"),
    [
        ("openai_usage", lambda e: e.update(data={}), "export.data"),
        ("openai_usage", lambda e: e["data"][1].pop("results"), "export.data.1.results"),
        ("openai_usage", lambda e: e["data"][1].update(start_time="yesterday"),
         "export.data.1.start_time"),
        ("openai_usage", lambda e: e["data"][1]["results"][0].update(input_tokens=-5),
         "export.data.1.results.0.input_tokens"),
        ("openai_usage", lambda e: e["data"][1]["results"][0].update(input_cached_tokens=9999),
         "export.data.1.results.0.input_cached_tokens"),
        ("openai_costs", lambda e: e["data"][1]["results"][0].update(line_item=None),
         "export.data.1.results.0.line_item"),
        ("openai_costs", lambda e: e["data"][1]["results"][0]["amount"].update(currency="eur"),
         "export.data.1.results.0.amount.currency"),
        ("anthropic_usage", lambda e: e["data"][0].update(starting_at=5),
         "export.data.0.starting_at"),
        ("anthropic_usage", lambda e: e["data"][0]["results"][0].pop("model"),
         "export.data.0.results.0.model"),
        ("anthropic_costs", lambda e: e["data"][0]["results"][0].update(amount="lots"),
         "export.data.0.results.0.amount"),
    ],
)  # fmt: skip
def test_an_export_of_the_wrong_shape_imports_nothing(
    api: APIClient, tenant: Tenant, export_format: str, mutate: Any, field: str
) -> None:
    builders = {"openai_usage": openai_usage, "openai_costs": openai_costs,
                "anthropic_usage": anthropic_usage, "anthropic_costs": anthropic_costs}  # fmt: skip
    export = builders[export_format]()
    mutate(export)
    response = api.post(
        "/api/v1/usage/imports", {"format": export_format, "export": export}, format="json"
    )
    error = assert_error(response, 400, "invalid")
    assert field in error["fields"], error
    assert not ProviderUsage.objects.exists()  # the good buckets were not imported either


@pytest.mark.django_db
def test_bad_import_and_report_requests_name_the_field(api: APIClient) -> None:
    bad = api.post("/api/v1/usage/imports", {"format": "csv", "export": {}}, format="json")
    assert "format" in assert_error(bad, 400, "invalid")["fields"]
    bad = api.get("/api/v1/usage/reconciliation", {"provider": "mistral"})
    assert "provider" in assert_error(bad, 400, "invalid")["fields"]
    bad = api.get(
        "/api/v1/usage/reconciliation",
        {"provider": "openai", "from": "2026-10-09", "to": "2026-10-01"},
    )
    assert "from" in assert_error(bad, 400, "invalid")["fields"]


@pytest.mark.django_db
def test_the_import_command_reads_a_file(tenant: Tenant, tmp_path: Any) -> None:
    from django.core.management import CommandError, call_command

    path = tmp_path / "openai-usage.json"
    path.write_text(json.dumps(openai_usage()))
    call_command(
        "import_provider_usage", str(path), tenant=tenant.name, export_format="openai_usage"
    )
    assert ProviderUsage.objects.count() == 2
    path.write_text(json.dumps({"data": [{"start_time": 1}]}))
    with pytest.raises(CommandError, match=r"export\.data\.0\.results"):
        call_command(
            "import_provider_usage", str(path), tenant=tenant.name, export_format="openai_usage"
        )
