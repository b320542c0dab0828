"""A refused budget check says, in amounts a person reads, what the estimate would do:
the estimate (and how it was priced when the agent sent none), the spend it would
reach, the budget it would pass."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from tests.sessions_app.helpers import assert_error, create_session, post_turn, turn_body
from tests.sessions_app.test_period_budgets import STEP, check, create_budget

pytestmark = pytest.mark.django_db
# gpt-4o-mini: 900 input tokens at $0.15/M and 100 output at $0.60/M cost $0.000195.


def test_a_usd_period_budget_names_the_priced_estimate_in_readable_amounts(
    api: APIClient,
) -> None:
    budget = create_budget(api, scope="tenant", user_id="", limit_tokens=None, limit_usd="0.001")
    sid = create_session(api)["id"]
    post_turn(api, sid, turn_body(steps=[STEP]))
    refused = check(api, sid, 2000, model="gpt-4o-mini")  # priced as output: $0.0012
    error = assert_error(refused, 429, "budget_exceeded")
    assert error["message"] == (
        f"The tenant budget {budget['id']} (day): estimated 0.0012 USD (2000 tokens priced "
        "as output) would bring spend to 0.001395 USD, over the 0.001 USD budget "
        "(0.000195 USD spent)."
    )
    assert error["budget_id"] == budget["id"] and error["retry_after"] >= 1
    post_turn(api, sid, turn_body(steps=[STEP] * 5))
    spent = assert_error(check(api, sid, 1, model="gpt-4o-mini"), 429, "budget_exceeded")
    assert "is spent: 0.00117 of 0.001 USD." in spent["message"]


def test_a_usd_session_budget_names_the_estimate_and_what_others_hold(api: APIClient) -> None:
    sid = create_session(api, budget_usd="0.001")["id"]
    post_turn(api, sid, turn_body(steps=[STEP]))
    held = check(api, sid, 1, estimated_cost_usd="0.0005", reserve=True)
    assert held.status_code == 200, held.content
    refused = check(api, sid, 1, estimated_cost_usd="0.0004")
    error = assert_error(refused, 429, "budget_exceeded")
    assert error["message"].startswith(
        "The session's estimated 0.0004 USD would bring spend to 0.001095 USD, over the "
        "0.001 USD budget (0.000195 USD spent, 0.0005 USD reserved by 1 pending step(s))."
    )
    assert error["reserved_tokens"] == 1
