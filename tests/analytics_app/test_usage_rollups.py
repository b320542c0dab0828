"""usage_from_rollups answers what a direct aggregation of turn_step answers."""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from analytics_app.selectors.usage_rollups import UnsupportedGrouping, usage_from_rollups
from analytics_app.services.rollups import rollups_fill
from sessions_app.models import Tenant, TurnStep
from tests.analytics_app.test_rollups import START, seed_random_spend

pytestmark = pytest.mark.django_db


def direct(tenant: Tenant, group_by: str, start: datetime, end: datetime) -> dict:
    column = {"agent": "agent_id", "user": "user_id"}.get(group_by, group_by)
    totals: dict = defaultdict(lambda: [0, 0, Decimal(0), 0])
    steps = TurnStep.objects.filter(tenant=tenant, created_at__gte=start, created_at__lt=end)
    for step in steps:
        key = step.created_at.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
        key = key if group_by == "day" else getattr(step, column)
        row = totals[key]
        row[0] += step.input_tokens
        row[1] += step.output_tokens
        row[2] += step.cost_usd or 0
        row[3] += 1
    return dict(totals)


@pytest.mark.parametrize("group_by", ["day", "model", "agent", "step_type", "user"])
def test_usage_from_rollups_equals_direct_aggregation(group_by: str) -> None:
    seed_random_spend(99, turns=150)
    rollups_fill(batch_size=50)
    tenant = Tenant.objects.get(name="t99-0")
    # Hour-aligned bounds inside days, so both the hourly edges and whole days are read;
    # `user` rolls up by day, so it is asked for whole days.
    if group_by == "user":
        start, end = START.replace(hour=0), START.replace(hour=0) + timedelta(days=2)
    else:
        start, end = START + timedelta(hours=3), START + timedelta(days=2, hours=5)
    rows = usage_from_rollups(tenant, group_by, start, end)
    got = {
        r[group_by]: [r["input_tokens"], r["output_tokens"], r["cost_usd"], r["calls"]]
        for r in rows
    }
    assert got == direct(tenant, group_by, start, end)
    assert got  # the range holds data


def test_session_grouping_stays_on_direct_aggregation(tenant: Tenant) -> None:
    with pytest.raises(UnsupportedGrouping):
        usage_from_rollups(tenant, "session", START, START + timedelta(days=1))
