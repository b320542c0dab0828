"""Erasing a user takes the spend budgets keyed by their id, with their spend and the
alerts sent about them; budgets of other users and of the whole tenant stay."""

from __future__ import annotations

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from analytics_app.models import BudgetAlert
from sessions_app.models import BudgetSpend, Tenant
from tests.sessions_app.helpers import create_session, post_turn, turn_body
from tests.sessions_app.test_period_budgets import STEP, create_budget

pytestmark = pytest.mark.django_db


def _alert(tenant: Tenant, budget: dict) -> None:
    BudgetAlert.objects.create(
        tenant=tenant, budget_id=budget["id"], period_start=timezone.now(), threshold=80,
        payload={"event": "budget.threshold", "budget": {"id": budget["id"],
                 "user_id": budget["user_id"]}},
    )  # fmt: skip


def test_erasing_a_user_deletes_their_budgets_and_counts_them(
    api: APIClient, tenant: Tenant
) -> None:
    alice = create_budget(api, user_id="alice")
    alice_shop = create_budget(api, scope="user_agent", user_id="alice", agent_id="shop")
    bob = create_budget(api, user_id="bob")
    everyone = create_budget(api, scope="tenant", user_id="")
    post_turn(api, create_session(api, user_id="alice")["id"], turn_body(steps=[STEP]))
    assert BudgetSpend.objects.filter(budget_id=alice["id"]).exists()
    _alert(tenant, alice)
    _alert(tenant, bob)

    response = api.delete("/api/v1/users/alice")
    assert response.status_code == 200, response.content
    deleted = response.json()["deleted"]
    assert deleted["budgets"] == 2 and deleted["budget_alerts"] == 1

    listed = {b["id"] for b in api.get("/api/v1/budgets").json()["results"]}
    assert listed == {bob["id"], everyone["id"]}
    assert not BudgetSpend.objects.filter(budget_id__in=[alice["id"], alice_shop["id"]])
    assert BudgetSpend.objects.filter(budget_id=everyone["id"]).exists()
    alerts = [str(pk) for pk in BudgetAlert.objects.values_list("budget_id", flat=True)]
    assert alerts == [bob["id"]]
