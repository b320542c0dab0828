"""Seed 002: compaction can trigger at a share of the model's context window,
read from the context sizes kept with the prices; the absolute thresholds stay."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from django.test import override_settings
from rest_framework.test import APIClient

from analytics_app.pricing import price_table_clear
from analytics_app.services.prices import SINCE_ALWAYS, PriceEntry, prices_load
from memory_app.window.selectors import compaction_due
from sessions_app.hooks import model_context_window
from sessions_app.models import ChatSession
from tests.sessions_app.helpers import post_turn, turn_body

pytestmark = pytest.mark.django_db

WORDS = " ".join(f"word{i}" for i in range(150))  # a few hundred tokens of text


def tiny_model(window: int) -> None:
    prices_load(
        entries=[
            PriceEntry(
                model="tiny-local-7b",
                provider="ollama",
                pattern="",
                input_per_million=Decimal(0),
                cached_input_per_million=None,
                cache_write_per_million=None,
                output_per_million=Decimal(0),
                valid_from=SINCE_ALWAYS,
                source="genai-prices test",
                context_window=window,
            )
        ]
    )
    price_table_clear()  # prices_load clears it on commit; a test's transaction never commits


def session_with_turns(api: APIClient, turns: int, step_model: str, **fields: Any) -> str:
    response = api.post(
        "/api/v1/sessions", {"user_id": "u", "agent_id": "a", **fields}, format="json"
    )
    assert response.status_code == 201, response.content
    sid = response.json()["id"]
    for _ in range(turns):
        steps = [{"step_type": "response", "model": step_model, "input_tokens": 10,
                  "output_tokens": 5}]  # fmt: skip
        assert post_turn(api, sid, turn_body(steps, user_message=WORDS)).status_code == 201
    return str(sid)


def due(sid: str) -> str | None:
    session = ChatSession.objects.get(pk=sid)
    return compaction_due(session)


def test_the_price_table_knows_context_windows() -> None:
    assert model_context_window("claude-3-5-sonnet-latest") == 200_000
    assert (model_context_window("gemini-1.5-flash") or 0) >= 1_000_000
    assert model_context_window("no-such-model") is None


@override_settings(
    ENGRAM_COMPACT_MAX_TURNS=100,
    ENGRAM_COMPACT_MAX_TOKENS=100_000,
    ENGRAM_COMPACT_KEEP_LAST_TURNS=1,
)
def test_a_share_of_a_small_models_window_triggers_before_the_absolute_threshold(
    api: APIClient,
) -> None:
    tiny_model(window=1_500)
    # The session names its model; three long turns (~900 tokens) pass half of 1500.
    sid = session_with_turns(
        api, 3, "gpt-4o-mini", model="tiny-local-7b", compact_context_share=0.5
    )
    assert api.get(f"/api/v1/sessions/{sid}").json()["compact_context_share"] == 0.5
    assert due(sid) == "max_tokens"
    # Without a model on the session, its latest step's model counts; the settings' share.
    with override_settings(ENGRAM_COMPACT_CONTEXT_SHARE=0.5):
        assert due(session_with_turns(api, 3, "tiny-local-7b")) == "max_tokens"
    # A share of 0 turns it off; a large window leaves only the absolute threshold.
    with override_settings(ENGRAM_COMPACT_CONTEXT_SHARE=0):
        assert due(session_with_turns(api, 3, "tiny-local-7b")) is None
    assert due(session_with_turns(api, 3, "claude-3-5-sonnet-latest")) is None
    with override_settings(ENGRAM_COMPACT_MAX_TOKENS=500):
        assert due(session_with_turns(api, 3, "claude-3-5-sonnet-latest")) == "max_tokens"


def test_the_share_is_validated(api: APIClient) -> None:
    for bad in (0, 1.5, "x"):
        response = api.post(
            "/api/v1/sessions",
            {"user_id": "u", "agent_id": "a", "compact_context_share": bad},
            format="json",
        )
        assert response.status_code == 400
        assert "compact_context_share" in response.json()["error"]["fields"]
