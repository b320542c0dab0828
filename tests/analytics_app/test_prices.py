"""Model prices: seeded offline from genai-prices, matched by name/alias/pattern, valid
by date, and the cost formula with cached and cache-write tokens."""

from __future__ import annotations

import socket
import threading
from datetime import UTC, datetime
from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import call_command

from analytics_app.models import ModelPrice
from analytics_app.pricing import price_for_model, price_step_from_table
from analytics_app.services.prices import genai_price_entries, snapshot_entries
from sessions_app.hooks import StepUsage, price_step
from sessions_app.usage import TokenCounts

pytestmark = pytest.mark.django_db
AT = datetime(2026, 1, 15, tzinfo=UTC)


def usage(model: str, **counts: int) -> StepUsage:
    values = {"input_tokens": 0, "output_tokens": 0, "cached_tokens": 0,
              "cache_write_tokens": 0, "reasoning_tokens": 0, **counts}  # fmt: skip
    return StepUsage(model=model, tokens=TokenCounts(**values), at=AT)


def test_fresh_database_has_prices_for_seed_000_models_and_common_ones() -> None:
    for model in ("gemini-1.5-flash", "gemini-1.5-pro", "gpt-4o", "gpt-4o-mini"):
        assert ModelPrice.objects.filter(model=model).exists(), model
    flash = price_for_model("gemini-1.5-flash", AT)
    assert flash is not None and flash.input_per_million == Decimal("0.075")
    assert flash.output_per_million == Decimal("0.3")


def test_genai_prices_loads_without_network_or_threads(monkeypatch) -> None:
    """Offline safety: importing and reading the bundled data opens no socket and
    starts no updater thread."""

    def no_network(*args, **kwargs):
        raise AssertionError("genai-prices tried to reach the network")

    monkeypatch.setattr(socket, "create_connection", no_network)
    monkeypatch.setattr(socket.socket, "connect", no_network)
    threads = threading.active_count()
    entries = genai_price_entries()
    assert threading.active_count() == threads
    assert len(entries) > 100
    out = StringIO()
    call_command("load_prices", stdout=out)
    assert "refreshed" in out.getvalue()


def test_snapshot_covers_seed_models_with_source() -> None:
    models = {entry.model: entry for entry in snapshot_entries()}
    assert {"gemini-1.5-flash", "gemini-1.5-pro"} <= set(models)
    assert all("checked" in entry.source for entry in models.values())


def test_load_prices_keeps_operator_edits() -> None:
    ModelPrice.objects.filter(model="gpt-4o").update(
        input_per_million=Decimal("1"), source="admin: negotiated rate"
    )
    call_command("load_prices", stdout=StringIO())
    assert ModelPrice.objects.get(model="gpt-4o").input_per_million == Decimal("1")


def test_dated_snapshots_match_by_pattern_and_most_specific_wins() -> None:
    mini = price_for_model("gpt-4o-mini-2024-07-18", AT)
    assert mini is not None and mini.model == "gpt-4o-mini"
    assert price_for_model("GPT-4o", AT).model == "gpt-4o"
    assert price_for_model("totally-unknown-model", AT) is None


def test_latest_valid_from_not_after_the_step_applies() -> None:
    ModelPrice.objects.create(
        model="acme-1", input_per_million=Decimal("1"), output_per_million=Decimal("2"),
        valid_from=datetime(2025, 1, 1, tzinfo=UTC), source="test",
    )  # fmt: skip
    ModelPrice.objects.create(
        model="acme-1", input_per_million=Decimal("3"), output_per_million=Decimal("4"),
        valid_from=datetime(2026, 1, 1, tzinfo=UTC), source="test",
    )  # fmt: skip
    assert price_for_model("acme-1", datetime(2025, 6, 1, tzinfo=UTC)).input_per_million == 1
    assert price_for_model("acme-1", datetime(2026, 6, 1, tzinfo=UTC)).input_per_million == 3
    assert price_for_model("acme-1", datetime(2024, 6, 1, tzinfo=UTC)) is None


def test_cost_formula_bills_cached_and_cache_write_tokens_at_their_prices() -> None:
    """(input - cached - cache_write) x input + cached x cached + write x write + output x
    output, per million."""
    ModelPrice.objects.create(
        model="acme-cache", input_per_million=Decimal("3"), output_per_million=Decimal("15"),
        cached_input_per_million=Decimal("0.3"), cache_write_per_million=Decimal("3.75"),
        valid_from=datetime(2025, 1, 1, tzinfo=UTC), source="test",
    )  # fmt: skip
    cost = price_step(usage("acme-cache", input_tokens=12_050, cached_tokens=10_000,
                            cache_write_tokens=2_000, output_tokens=400))  # fmt: skip
    expected = (50 * 3 + 10_000 * Decimal("0.3") + 2_000 * Decimal("3.75") + 400 * 15) / Decimal(
        1_000_000
    )
    assert cost == expected == Decimal("0.01665")
    assert price_step_from_table(usage("no-such-model", input_tokens=5)) is None


def test_gateway_prefixed_names_are_priced_as_the_providers_model() -> None:
    mini = price_for_model("gpt-4o-mini", AT)
    assert mini is not None
    assert price_for_model("openai/gpt-4o-mini", AT) == mini
    assert price_for_model("OpenRouter/OpenAI/GPT-4o-mini-2024-07-18", AT) == mini
    sonnet = price_for_model("claude-3-5-sonnet-20241022", AT)
    assert sonnet is not None
    assert price_for_model("anthropic/claude-3-5-sonnet-20241022", AT) == sonnet
    # An unknown organisation is a model name of its own, not a route to strip.
    assert price_for_model("acme-lab/gpt-4o-mini", AT) is None
    assert price_step(usage("openai/gpt-4o-mini", input_tokens=1000)) == price_step(
        usage("gpt-4o-mini", input_tokens=1000)
    )


def test_a_price_row_naming_the_prefixed_model_wins_over_the_stripped_name() -> None:
    ModelPrice.objects.create(
        model="openai/gpt-4o-mini", input_per_million=Decimal("9"),
        output_per_million=Decimal("9"), valid_from=datetime(2000, 1, 1, tzinfo=UTC),
        source="test",
    )  # fmt: skip
    assert price_for_model("openai/gpt-4o-mini", AT).input_per_million == Decimal("9")
    assert price_for_model("gpt-4o-mini", AT).input_per_million != Decimal("9")
