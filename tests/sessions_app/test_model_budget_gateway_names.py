"""A model budget counts the model under every known gateway route: a step recorded as
`openai/gpt-4o-mini` or `openrouter/openai/gpt-4o-mini` is gpt-4o-mini's spend, as
pricing reads the name (`sessions_app.model_names`), in the spend, the turn's warnings
(single and batch), the check, the reservations of both paths and the budget's figures;
`/usage?group_by=model` keeps the names as recorded."""

from __future__ import annotations

import importlib
from typing import Any

import pytest
from django.apps import apps
from rest_framework.test import APIClient

from sessions_app.models import SpendBudget
from tests.sessions_app.helpers import assert_error, create_session, post_turn, turn_body
from tests.sessions_app.test_period_budgets import check, create_budget

pytestmark = pytest.mark.django_db
ROUTED = ["openai/gpt-4o-mini", "openrouter/openai/gpt-4o-mini", "OpenAI/GPT-4o-mini"]


def step(model: str, tokens: int = 1000) -> dict[str, Any]:
    return {"step_type": "response", "model": model, "input_tokens": tokens - 100,
            "output_tokens": 100}  # fmt: skip


def model_budget(api: APIClient, model: str = "gpt-4o-mini", **fields: Any) -> dict[str, Any]:
    return create_budget(api, scope="model", user_id="", model=model, **fields)


def test_steps_of_routed_names_are_spent_under_the_model_budget(api: APIClient) -> None:
    budget = model_budget(api, limit_tokens=3000)
    sid = create_session(api)["id"]
    answer = post_turn(api, sid, turn_body(steps=[*map(step, ROUTED), step("gpt-4o")]))
    assert answer.status_code == 201, answer.content
    warnings = answer.json()["warnings"]
    assert [w["code"] for w in warnings] == ["spend_budget_exceeded"], warnings
    assert budget["id"] in warnings[0]["message"] and "3000 of 3000" in warnings[0]["message"]
    current = api.get(f"/api/v1/budgets/{budget['id']}").json()["current"]
    assert current["spent_tokens"] == 3000
    # The check refuses the model under any route, and not another model.
    for model in [*ROUTED, "gpt-4o-mini"]:
        assert_error(check(api, sid, 10, model=model), 429, "budget_exceeded")
    assert check(api, sid, 10, model="gpt-4o").status_code == 200
    # Usage by model reports the names the steps were recorded under, each priced.
    rows = api.get("/api/v1/usage", {"group_by": "model"}).json()["rows"]
    by_model = {row["key"]: row for row in rows}
    assert set(by_model) == {*ROUTED, "gpt-4o"}
    assert all(row["unpriced_calls"] == 0 for row in rows)


def test_a_batch_warns_the_turns_whose_routed_model_is_under_the_budget(api: APIClient) -> None:
    model_budget(api, limit_tokens=500)
    sid = create_session(api)["id"]
    items = [
        {"session_id": sid, **turn_body(steps=[step(model)])}
        for model in ("openai/gpt-4o-mini", "gpt-4o", "openrouter/openai/gpt-4o-mini")
    ]
    results = api.post("/api/v1/turns/batch", {"turns": items}, format="json").json()["results"]
    warned = [[w["code"] for w in r["turn"]["warnings"]] for r in results]
    assert warned == [["spend_budget_exceeded"], [], ["spend_budget_exceeded"]]


@pytest.mark.parametrize("own_budget", [None, 10**6], ids=["period_only", "with_session_budget"])
def test_reservations_under_routed_names_hold_against_the_model_budget(
    api: APIClient, own_budget: int | None
) -> None:
    """Both reserving paths: the one-message one (no session budget) and the plain one."""
    budget = model_budget(api, limit_tokens=1000)
    sid = create_session(api, budget_tokens=own_budget)["id"]
    first = check(api, sid, 600, reserve=True, model="openai/gpt-4o-mini")
    assert first.status_code == 200, first.content
    assert first.json()["reservation"] is not None
    assert [b["id"] for b in first.json()["budgets"]] == [budget["id"]]
    held = api.get(f"/api/v1/budgets/{budget['id']}").json()["current"]
    assert held["reserved_tokens"] == 600
    refused = check(api, sid, 600, reserve=True, model="openrouter/openai/gpt-4o-mini")
    assert_error(refused, 429, "budget_exceeded")


def test_a_budget_given_a_routed_name_is_stored_as_the_providers_model(api: APIClient) -> None:
    made = model_budget(api, model="OpenAI/GPT-4o-mini", limit_tokens=10**6)
    assert made["model"] == "gpt-4o-mini"
    sid = create_session(api)["id"]
    assert post_turn(api, sid, turn_body(steps=[step("gpt-4o-mini")])).status_code == 201
    assert api.get(f"/api/v1/budgets/{made['id']}").json()["current"]["spent_tokens"] == 1000
    patched = api.patch(
        f"/api/v1/budgets/{made['id']}", {"model": "vertex_ai/gemini-1.5-pro"}, format="json"
    )
    assert patched.status_code == 200 and patched.json()["model"] == "gemini-1.5-pro"
    # An unknown prefix names a model of its own (a Hugging Face id), as in pricing.
    hugging = model_budget(api, model="meta-llama/Llama-3-8B", limit_tokens=1)
    assert hugging["model"] == "meta-llama/llama-3-8b"


def test_the_migration_keys_budgets_stored_under_a_routed_name(api: APIClient) -> None:
    made = model_budget(api, limit_tokens=1000)
    # A row as stored before budgets were keyed (the services no longer write one).
    SpendBudget.objects.filter(pk=made["id"]).update(model="openrouter/openai/gpt-4o-mini")
    migration = importlib.import_module("sessions_app.migrations.0004_spend_budget_model_keys")
    migration.key_budget_models(apps, None)
    assert SpendBudget.objects.get(pk=made["id"]).model == "gpt-4o-mini"


def test_a_models_dated_snapshots_are_spent_under_its_budget(api: APIClient) -> None:
    budget = model_budget(api, model="gpt-4o", limit_tokens=3000)
    sid = create_session(api)["id"]
    snapshots = ["gpt-4o-2024-08-06", "openai/gpt-4o-2024-11-20", "gpt-4o-mini-2024-07-18"]
    assert post_turn(api, sid, turn_body(steps=[*map(step, snapshots)])).status_code == 201
    # gpt-4o-mini's snapshot is another model's.
    assert api.get(f"/api/v1/budgets/{budget['id']}").json()["current"]["spent_tokens"] == 2000
    assert post_turn(api, sid, turn_body(steps=[step("gpt-4o-20241120")])).status_code == 201
    assert_error(check(api, sid, 10, model="gpt-4o-2024-08-06"), 429, "budget_exceeded")
    assert check(api, sid, 10, model="gpt-4o-mini-2024-07-18").status_code == 200
    # A budget given a snapshot's name is the model's budget; Vertex dates with "@".
    assert model_budget(api, model="gpt-4o-mini-2024-07-18", limit_tokens=1)["model"] == (
        "gpt-4o-mini"
    )
    sonnet = model_budget(api, model="claude-3-5-sonnet", limit_tokens=10**6)
    vertex = turn_body(steps=[step("vertex_ai/claude-3-5-sonnet@20240620")])
    assert post_turn(api, sid, vertex).status_code == 201
    assert api.get(f"/api/v1/budgets/{sonnet['id']}").json()["current"]["spent_tokens"] == 1000


def test_the_migration_keys_budgets_stored_under_a_snapshots_name(api: APIClient) -> None:
    made = model_budget(api, limit_tokens=1000)
    SpendBudget.objects.filter(pk=made["id"]).update(model="gpt-4o-mini-2024-07-18")
    migration = importlib.import_module("sessions_app.migrations.0004_spend_budget_model_keys")
    migration.key_budget_models(apps, None)
    assert SpendBudget.objects.get(pk=made["id"]).model == "gpt-4o-mini"
