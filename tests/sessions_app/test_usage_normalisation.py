"""Provider usage objects normalise to Engram's counts (input includes cached; output
includes reasoning), as each provider's documentation defines its fields. Each test
names the rule it checks."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from sessions_app.models import TurnStep
from sessions_app.usage import TokenCounts, UsageError, normalise_usage, step_token_counts
from tests.sessions_app.helpers import create_session, turn_body


def test_openai_chat_prompt_tokens_already_include_cached_tokens() -> None:
    """OpenAI Chat Completions: prompt_tokens includes prompt_tokens_details.cached_tokens;
    completion_tokens includes completion_tokens_details.reasoning_tokens."""
    usage = {
        "prompt_tokens": 2006,
        "completion_tokens": 300,
        "total_tokens": 2306,
        "prompt_tokens_details": {"cached_tokens": 1920, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 128, "audio_tokens": 0},
    }
    assert normalise_usage(usage) == TokenCounts(
        input_tokens=2006, output_tokens=300, cached_tokens=1920, reasoning_tokens=128
    )


def test_openai_responses_input_tokens_include_cached_tokens() -> None:
    """OpenAI Responses API: input_tokens includes input_tokens_details.cached_tokens."""
    usage = {
        "input_tokens": 5000,
        "input_tokens_details": {"cached_tokens": 4096},
        "output_tokens": 900,
        "output_tokens_details": {"reasoning_tokens": 700},
        "total_tokens": 5900,
    }
    assert normalise_usage(usage) == TokenCounts(
        input_tokens=5000, output_tokens=900, cached_tokens=4096, reasoning_tokens=700
    )


def test_anthropic_cache_reads_and_writes_are_added_to_input_tokens() -> None:
    """Anthropic: input_tokens excludes cache_read_input_tokens and
    cache_creation_input_tokens, so total input = input + cache_read + cache_creation."""
    usage = {
        "input_tokens": 50,
        "cache_read_input_tokens": 10_000,
        "cache_creation_input_tokens": 2_000,
        "output_tokens": 400,
    }
    assert normalise_usage(usage) == TokenCounts(
        input_tokens=12_050, output_tokens=400, cached_tokens=10_000, cache_write_tokens=2_000
    )


def test_anthropic_null_cache_fields_count_as_zero() -> None:
    """Anthropic sends null cache fields when caching is off: they add nothing."""
    usage = {"input_tokens": 20, "output_tokens": 5, "cache_read_input_tokens": None,
             "cache_creation_input_tokens": None}  # fmt: skip
    assert normalise_usage(usage) == TokenCounts(input_tokens=20, output_tokens=5)


def test_gemini_thoughts_are_added_to_output_and_cached_is_inside_prompt() -> None:
    """Gemini usageMetadata: promptTokenCount includes cachedContentTokenCount;
    thoughtsTokenCount is reported beside candidatesTokenCount, so output = both."""
    usage = {
        "promptTokenCount": 1000,
        "cachedContentTokenCount": 600,
        "candidatesTokenCount": 50,
        "thoughtsTokenCount": 200,
        "totalTokenCount": 1250,
    }
    assert normalise_usage(usage) == TokenCounts(
        input_tokens=1000, output_tokens=250, cached_tokens=600, reasoning_tokens=200
    )


def test_inconsistent_provider_counts_are_rejected_with_the_path() -> None:
    """OpenAI rule: cached_tokens is part of prompt_tokens, so it cannot exceed it."""
    with pytest.raises(UsageError) as raised:
        normalise_usage({"prompt_tokens": 10, "completion_tokens": 1,
                         "prompt_tokens_details": {"cached_tokens": 11}})  # fmt: skip
    assert raised.value.field == "usage.cached_tokens"


def test_explicit_counts_equal_to_usage_are_accepted_others_rejected() -> None:
    """Contract: usage wins; explicit counts beside it must match, never double count."""
    usage = {"input_tokens": 10, "output_tokens": 2, "cache_read_input_tokens": 90}
    assert step_token_counts(explicit={"input_tokens": 100}, usage=usage).input_tokens == 100
    with pytest.raises(UsageError) as raised:
        step_token_counts(explicit={"input_tokens": 10}, usage=usage)  # Anthropic's raw 10
    assert raised.value.field == "input_tokens"


@pytest.mark.django_db
def test_usage_objects_through_http_are_stored_normalised_and_raw(api: APIClient) -> None:
    """OpenAI and Anthropic steps in one turn: counts normalised, raw object kept."""
    sid = create_session(api)["id"]
    openai_usage = {"prompt_tokens": 1200, "completion_tokens": 80,
                    "prompt_tokens_details": {"cached_tokens": 1024},
                    "completion_tokens_details": {"reasoning_tokens": 0}}  # fmt: skip
    anthropic_usage = {"input_tokens": 30, "output_tokens": 60,
                       "cache_read_input_tokens": 3000,
                       "cache_creation_input_tokens": 500}  # fmt: skip
    steps = [
        {"step_type": "intent", "model": "gpt-4o-mini", "usage": openai_usage},
        {"step_type": "answer", "model": "claude-sonnet-4-5", "usage": anthropic_usage},
    ]
    response = api.post(f"/api/v1/sessions/{sid}/turns", turn_body(steps), format="json")
    assert response.status_code == 201, response.content
    turn = response.json()["turn"]
    assert (turn["input_tokens"], turn["cached_tokens"]) == (1200 + 3530, 1024 + 3000)
    assert turn["output_tokens"] == 140
    rows = list(TurnStep.objects.filter(session_id=sid).order_by("step_order"))
    assert (rows[1].input_tokens, rows[1].cached_tokens, rows[1].cache_write_tokens) == (
        3530,
        3000,
        500,
    )
    assert rows[0].usage_raw == openai_usage
    assert all(row.cost_usd is not None for row in rows)
