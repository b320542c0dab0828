"""Helpers shared by the turn tests: HTTP calls and the seed-000 example."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from rest_framework.test import APIClient

from analytics_app.models import ModelPrice

SEED_STEPS = [
    {"step_type": "intent", "model": "gemini-1.5-flash", "input_tokens": 150,
     "output_tokens": 20, "cached_tokens": 0, "duration_ms": 180, "success": True,
     "error": None},
    {"step_type": "filter", "model": "gemini-1.5-flash", "input_tokens": 300,
     "output_tokens": 50, "cached_tokens": 0, "duration_ms": 220, "success": True,
     "error": None},
    {"step_type": "response", "model": "gemini-1.5-pro", "input_tokens": 800,
     "output_tokens": 200, "cached_tokens": 0, "duration_ms": 450, "success": True,
     "error": None},
]  # fmt: skip


def assert_error(response: Any, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.content
    body = response.json()
    assert set(body) == {"error"}
    assert body["error"]["code"] == code, body
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    assert isinstance(body["error"]["fields"], dict)
    return body["error"]  # type: ignore[no-any-return]


def create_session(api: APIClient, **fields: Any) -> dict[str, Any]:
    body = {"user_id": "u1", "agent_id": "shop-assistant", **fields}
    response = api.post("/api/v1/sessions", body, format="json")
    assert response.status_code == 201, response.content
    return response.json()  # type: ignore[no-any-return]


def turn_body(steps: list[dict[str, Any]] | None = None, **fields: Any) -> dict[str, Any]:
    return {
        "user_message": "Tell me about the first one",
        "assistant_response": "The Dell XPS 15 has…",
        "intent_data": {"intent": "product_detail"},
        "steps": SEED_STEPS if steps is None else steps,
        **fields,
    }


def post_turn(
    api: APIClient, session_id: str, body: dict[str, Any] | None = None, key: str | None = None
) -> Any:
    headers = {"HTTP_IDEMPOTENCY_KEY": key} if key else {}
    return api.post(
        f"/api/v1/sessions/{session_id}/turns", body or turn_body(), format="json", **headers
    )


def expected_cost(steps: list[dict]) -> Decimal:
    """From the price rows, not a magic number: the formula in analytics_app.pricing."""
    total = Decimal(0)
    for step in steps:
        price = ModelPrice.objects.filter(model=step["model"]).order_by("-valid_from").first()
        assert price is not None, f"no seeded price for {step['model']}"
        cached = step.get("cached_tokens", 0)
        total += (
            Decimal(step["input_tokens"] - cached) * price.input_per_million
            + Decimal(cached) * (price.cached_input_per_million or price.input_per_million)
            + Decimal(step["output_tokens"]) * price.output_per_million
        ) / Decimal(1_000_000)
    return total
