"""GET /usage: grouped sums equal what the test computes from the steps it recorded."""

from __future__ import annotations

from collections import defaultdict
from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from sessions_app.models import TurnStep
from tests.sessions_app.helpers import assert_error, create_session, post_turn, turn_body

pytestmark = pytest.mark.django_db
MICRO = Decimal("0.000001")


def record_mix(api: APIClient) -> list[dict]:
    """Two users, two agents, four models (one unpriced), one failed step."""
    plan = [
        ("alice", "shop", [("intent", "gemini-1.5-flash", 150, 20),
                           ("answer", "gpt-4o", 900, 300)]),
        ("alice", "support", [("intent", "gpt-4o-mini", 400, 10)]),
        ("bob", "shop", [("answer", "gemini-1.5-pro", 800, 200), ("tool", "mystery-llm", 5, 5)]),
    ]  # fmt: skip
    recorded = []
    for user_id, agent_id, steps in plan:
        sid = create_session(api, user_id=user_id, agent_id=agent_id)["id"]
        body = [
            {"step_type": kind, "model": model, "input_tokens": tin, "output_tokens": tout,
             "success": model != "gpt-4o-mini"}
            for kind, model, tin, tout in steps
        ]  # fmt: skip
        for _ in range(2):
            assert post_turn(api, sid, turn_body(body)).status_code == 201
        for step in body:
            recorded += [{**step, "user": user_id, "agent": agent_id}] * 2
    return recorded


@pytest.mark.parametrize(
    ("group_by", "key"),
    [("model", "model"), ("agent", "agent"), ("user", "user"), ("step_type", "step_type")],
)
def test_usage_grouped_equals_sums_of_recorded_steps(api: APIClient, group_by, key) -> None:
    recorded = record_mix(api)
    expected: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for step in recorded:
        group = expected[step[key]]
        group["input_tokens"] += step["input_tokens"]
        group["output_tokens"] += step["output_tokens"]
        group["calls"] += 1
        group["errors"] += 0 if step["success"] else 1
    response = api.get("/api/v1/usage", {"group_by": group_by})
    assert response.status_code == 200, response.content
    body = response.json()
    got = {row["key"]: row for row in body["rows"]}
    assert set(got) == set(expected)
    for name, sums in expected.items():
        for field, value in sums.items():
            assert got[name][field] == value, (name, field)
    # Cost per group equals the stored step costs; money is a decimal string.
    for name, row in got.items():
        stored = [
            s.cost_usd or Decimal(0)
            for s in TurnStep.objects.all()
            if {"model": s.model, "agent": s.agent_id, "user": s.user_id,
                "step_type": s.step_type}[key] == name
        ]  # fmt: skip
        assert isinstance(row["cost_usd"], str)
        assert Decimal(row["cost_usd"]) == sum(stored, Decimal(0)).quantize(MICRO)
    assert body["totals"]["calls"] == len(recorded)
    assert body["totals"]["unpriced_calls"] == 2  # mystery-llm, twice
    assert body["truncated"] is False


def test_usage_by_day_and_window(api: APIClient) -> None:
    recorded = record_mix(api)
    today = timezone.now().date()
    body = api.get("/api/v1/usage", {"group_by": "day", "from": str(today), "to": str(today)})
    rows = body.json()["rows"]
    assert [row["key"] for row in rows] == [str(today)]
    assert rows[0]["input_tokens"] == sum(step["input_tokens"] for step in recorded)
    yesterday = today - timedelta(days=1)
    empty = api.get("/api/v1/usage", {"group_by": "day", "from": str(yesterday - timedelta(1)),
                                      "to": str(yesterday)}).json()  # fmt: skip
    assert empty["rows"] == [] and empty["totals"]["calls"] == 0


def test_usage_is_scoped_to_the_tenant(api: APIClient, other_api: APIClient) -> None:
    record_mix(other_api)
    body = api.get("/api/v1/usage", {"group_by": "model"}).json()
    assert body["rows"] == [] and body["totals"]["input_tokens"] == 0


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({}, "group_by"),
        ({"group_by": "planet"}, "group_by"),
        ({"group_by": "day", "from": "yesterday"}, "from"),
        ({"group_by": "day", "to": "2025-02-30"}, "to"),
        ({"group_by": "day", "from": "2025-03-01", "to": "2025-02-01"}, "from"),
        ({"group_by": "day", "from": "2023-01-01", "to": "2025-01-01"}, "from"),
        ({"group_by": "model", "user_id": ""}, "user_id"),
        ({"group_by": "model", "agent_id": "a" * 256}, "agent_id"),
        ({"group_by": "model", "session_id": "not-a-uuid"}, "session_id"),
        ({"group_by": "model", "planet": "mars"}, "planet"),
    ],
)
def test_bad_usage_queries_are_400(api: APIClient, params, field) -> None:
    error = assert_error(api.get("/api/v1/usage", params), 400, "invalid")
    assert field in error["fields"]


@pytest.mark.parametrize("group_by", ["day", "model", "agent", "user", "step_type"])
def test_usage_is_exact_across_a_partial_rollup_fill(api: APIClient, group_by: str) -> None:
    """/usage reads the rollups for what they counted and the steps since their marker
    directly: before, during (a fill stopped after one batch) and after a fill, the
    answer is the same and equals a direct aggregation."""
    from analytics_app.services.rollups import rollups_fill

    record_mix(api)

    def report() -> dict:
        response = api.get("/api/v1/usage", {"group_by": group_by})
        assert response.status_code == 200, response.content
        return {row["key"]: (row["calls"], row["input_tokens"], row["cost_usd"])
                for row in response.json()["rows"]}  # fmt: skip

    before = report()
    settle = timezone.now() + timedelta(minutes=5)  # treat every step as settled
    rollups_fill(now=settle, batch_size=2, max_batches=1)
    from analytics_app.models import RollupFillState

    markers = dict(RollupFillState.objects.values_list("name", "last_step_id"))
    ids = sorted(TurnStep.objects.values_list("id", flat=True))
    assert markers and all(ids[0] <= last < ids[-1] for last in markers.values())
    partial = report()
    rollups_fill(now=settle)
    record_mix(api)  # a tail recorded after the fill
    after = report()
    assert before == partial
    direct: dict = defaultdict(lambda: [0, 0])
    for step in TurnStep.objects.all():
        key = {
            "day": step.created_at.date().isoformat(),
            "model": step.model,
            "agent": step.agent_id,
            "user": step.user_id,
            "step_type": step.step_type,
        }[group_by]
        direct[key][0] += 1
        direct[key][1] += step.input_tokens
    assert {key: value[:2] for key, value in after.items()} == {
        key: tuple(value) for key, value in direct.items()
    }


FILTERED = [
    ("model", {"user_id": "alice"}),
    ("day", {"user_id": "alice"}),
    ("user", {"user_id": "alice"}),
    ("model", {"agent_id": "shop"}),
    ("step_type", {"agent_id": "shop"}),
    ("user", {"agent_id": "shop"}),
    ("agent", {"user_id": "alice", "agent_id": "shop"}),
    ("model", {"session_id": None}),
    ("session", {"user_id": "bob"}),
]


@pytest.mark.parametrize(("group_by", "filters"), FILTERED)
def test_usage_filters_keep_only_those_steps_across_the_rollups(
    api: APIClient, group_by: str, filters: dict
) -> None:
    """Filtered answers equal a direct aggregation of the matching steps, whether the
    rollups key the filter (agent_id by model, user_id by user) or not, with steps both
    counted by a fill and recorded after it."""
    from analytics_app.services.rollups import rollups_fill

    record_mix(api)
    rollups_fill(now=timezone.now() + timedelta(minutes=5))
    record_mix(api)  # a tail the fill has not counted
    if "session_id" in filters:
        filters = {"session_id": str(TurnStep.objects.filter(user_id="bob").first().session_id)}
    response = api.get("/api/v1/usage", {"group_by": group_by, **filters})
    assert response.status_code == 200, response.content
    got = {row["key"]: (row["calls"], row["input_tokens"]) for row in response.json()["rows"]}
    matching = TurnStep.objects.filter(**filters)
    assert 0 < matching.count() < TurnStep.objects.count()
    expected: dict = defaultdict(lambda: (0, 0))
    for step in matching:
        key = {
            "day": step.created_at.date().isoformat(),
            "model": step.model,
            "agent": step.agent_id,
            "user": step.user_id,
            "step_type": step.step_type,
            "session": str(step.session_id),
        }[group_by]
        calls, tokens = expected[key]
        expected[key] = (calls + 1, tokens + step.input_tokens)
    assert got == dict(expected)
