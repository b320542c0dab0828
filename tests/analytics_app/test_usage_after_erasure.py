"""After a user's erasure their spend stays counted: `/usage` answers the same totals
whatever the grouping, the erased spend grouped by user or session under the key null,
and nothing left names the user or holds what was said."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from analytics_app.models import UserSpendRollup
from analytics_app.services.rollups import rollups_fill
from sessions_app.models import TurnStep
from tests.analytics_app.test_usage_api import record_mix
from tests.sessions_app.helpers import create_session, post_turn, turn_body

pytestmark = pytest.mark.django_db
GROUPINGS = ("model", "day", "agent", "step_type", "user", "session")
SUMMED = ("input_tokens", "output_tokens", "total_tokens", "cost_usd", "calls", "errors")


def _usage(api: APIClient, group_by: str) -> dict[str, Any]:
    response = api.get("/api/v1/usage", {"group_by": group_by})
    assert response.status_code == 200, response.content
    return response.json()  # type: ignore[no-any-return]


def _totals(api: APIClient, group_by: str) -> dict[str, Any]:
    return {name: _usage(api, group_by)["totals"][name] for name in SUMMED}


def _alice_with_counted_and_uncounted_spend(api: APIClient) -> None:
    """record_mix's turns are counted by the rollups; alice's last turn, with a failure
    message and a captured answer, is recorded after the fill (the rollups' live tail)."""
    record_mix(api)
    rollups_fill(now=timezone.now() + timedelta(minutes=5))
    session = create_session(api, user_id="alice", agent_id="shop")["id"]
    step = {"step_type": "tool", "model": "gpt-4o", "input_tokens": 70, "output_tokens": 7,
            "success": False, "error": "alice@example.com: mailbox full",
            "tool_output": "alice lives at 5 Main St"}  # fmt: skip
    assert post_turn(api, session, turn_body([step])).status_code == 201


def test_usage_totals_agree_whatever_the_grouping_after_an_erasure(api: APIClient) -> None:
    _alice_with_counted_and_uncounted_spend(api)
    before = _totals(api, "model")
    alice = next(r for r in _usage(api, "user")["rows"] if r["key"] == "alice")
    assert api.delete("/api/v1/users/alice").status_code == 200

    for group_by in GROUPINGS:
        assert _totals(api, group_by) == before, group_by
    by_user = {row["key"]: row for row in _usage(api, "user")["rows"]}
    assert set(by_user) == {"bob", None}
    assert {name: by_user[None][name] for name in SUMMED} == {n: alice[n] for n in SUMMED}
    by_session = _usage(api, "session")["rows"]
    assert [row["key"] for row in by_session].count(None) == 1
    # Counted later by the rollups, the uncounted steps land in the same groups.
    rollups_fill(now=timezone.now() + timedelta(minutes=5))
    for group_by in GROUPINGS:
        assert _totals(api, group_by) == before, group_by
    assert {row["key"] for row in _usage(api, "user")["rows"]} == {"bob", None}


def test_the_spend_kept_after_an_erasure_names_no_one_and_holds_no_content(
    api: APIClient,
) -> None:
    _alice_with_counted_and_uncounted_spend(api)
    assert api.delete("/api/v1/users/alice").status_code == 200
    rollups_fill(now=timezone.now() + timedelta(minutes=5))

    assert not TurnStep.objects.filter(user_id="alice").exists()
    assert not UserSpendRollup.objects.filter(user_id="alice").exists()
    kept = TurnStep.objects.filter(user_id="")
    assert kept.count() == 7  # alice's six steps of record_mix and the late one
    assert set(kept.values_list("session_id", "turn_id")) == {(None, None)}
    for step in kept:
        assert (step.error, step.usage_raw, step.prompt, step.completion, step.tool_output) == (
            None, None, None, "", "",
        )  # fmt: skip
    for group_by in ("user", "session"):
        assert "alice" not in str(_usage(api, group_by))
