"""Rollups must equal a direct aggregation of turn_step, however the fill was interrupted."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.db.models import Count, Q, Sum
from django.db.models.functions import Coalesce, Trunc
from django.utils import timezone

from analytics_app.models import RollupFillState, SpendRollup, UserSpendRollup
from analytics_app.services.rollups import RollupFiller, rollups_fill
from sessions_app.models import TurnStep
from sessions_app.services.api_keys import tenant_get_or_create
from tests.analytics_app.factories import Step, make_session, record_turn, set_price

pytestmark = pytest.mark.django_db

START = datetime(2026, 3, 14, 18, 0, tzinfo=UTC)
COUNTERS = [
    "input_tokens",
    "output_tokens",
    "cached_tokens",
    "cost_usd",
    "calls",
    "errors",
    "unpriced_calls",
    "zero_cost_calls",
    "negative_cost_calls",
]


def seed_random_spend(seed: int, turns: int = 120) -> None:
    """Turns over three days, several tenants, users, agents and models, with anomalies:
    unknown models (no price), zero cost with tokens, negative cost, failures."""
    rng = random.Random(seed)
    set_price("local-llama", input_per_million="0", output_per_million="0")  # free, with tokens
    tenants = [tenant_get_or_create(name=f"t{seed}-{i}") for i in range(3)]
    sessions = [
        make_session(rng.choice(tenants), user_id=f"user{rng.randint(1, 4)}", agent_id=agent)
        for agent in ("shop", "support", "shop", "search", "support")
    ]
    for _ in range(turns):
        steps = []
        for _ in range(rng.randint(1, 4)):
            input_tokens = rng.randint(0, 5000)
            steps.append(
                Step(
                    step_type=rng.choice(["intent", "filter", "search", "response"]),
                    model=rng.choice(
                        ["gpt-4o-mini", "gemini-1.5-pro", "local-llama", "mystery-model", ""]
                    ),
                    input_tokens=input_tokens,
                    output_tokens=rng.randint(0, 800),
                    # Cached tokens are part of the input (the service refuses more).
                    cached_tokens=rng.randint(0, min(100, input_tokens)),
                    success=rng.random() > 0.2,
                    error=None,
                )
            )
        at = START + timedelta(seconds=rng.randint(0, 3 * 24 * 3600))
        record_turn(rng.choice(sessions), steps, at=at)
    # No price is negative (a check constraint on model_price), so turn_record never
    # writes a negative cost; the column allows one (a provider credit imported, a row
    # fixed by hand), and the rollups must count it rather than net it away. Set on a
    # random fifth of the priced steps, directly.
    priced = list(TurnStep.objects.filter(cost_usd__gt=0).values_list("pk", flat=True))
    negative = rng.sample(priced, k=max(1, len(priced) // 5))
    TurnStep.objects.filter(pk__in=negative).update(cost_usd=Decimal("-0.0001"))


def direct(unit: str, keys: list[str]) -> dict[tuple, dict[str, object]]:
    rows = (
        TurnStep.objects.annotate(bucket=Trunc("created_at", unit, tzinfo=UTC))
        .values(*keys)
        .annotate(
            # Prefixed: an annotation named like a field would shadow it in the filters.
            x_input_tokens=Sum("input_tokens"),
            x_output_tokens=Sum("output_tokens"),
            x_cached_tokens=Sum("cached_tokens"),
            x_cost_usd=Coalesce(Sum("cost_usd"), Decimal(0)),
            x_calls=Count("id"),
            x_errors=Count("id", filter=Q(success=False)),
            x_unpriced_calls=Count("id", filter=Q(cost_usd__isnull=True) | Q(price_missing=True)),
            x_zero_cost_calls=Count(
                "id", filter=Q(cost_usd=0) & (Q(input_tokens__gt=0) | Q(output_tokens__gt=0))
            ),
            x_negative_cost_calls=Count("id", filter=Q(cost_usd__lt=0)),
        )
    )
    return {tuple(r[k] for k in keys): {c: r[f"x_{c}"] for c in COUNTERS} for r in rows}


def rolled(queryset, keys: list[str]) -> dict[tuple, dict[str, object]]:
    return {tuple(r[k] for k in keys): {c: r[c] for c in COUNTERS} for r in queryset.values()}


SPEND_KEYS = ["tenant_id", "bucket", "model", "agent_id", "step_type"]


def assert_rollups_match_direct() -> None:
    for unit in ("hour", "day"):
        expected = direct(unit, SPEND_KEYS)
        got = rolled(
            SpendRollup.objects.filter(granularity=unit).extra(select={"bucket": "bucket_start"}),
            SPEND_KEYS,
        )
        assert got == expected, unit
    expected_users = direct("day", ["tenant_id", "bucket", "user_id"])
    got_users = rolled(
        UserSpendRollup.objects.extra(select={"bucket": "bucket_start"}),
        ["tenant_id", "bucket", "user_id"],
    )
    assert got_users == expected_users


@pytest.mark.parametrize("seed", [7, 42, 2100])
def test_rollups_equal_direct_aggregation(seed: int) -> None:
    seed_random_spend(seed)
    reports = rollups_fill(batch_size=37)
    assert all(r.caught_up for r in reports)
    assert_rollups_match_direct()
    # Anomalies were seeded, so they must be counted, not dropped.
    totals = SpendRollup.objects.filter(granularity="day").aggregate(
        unpriced=Sum("unpriced_calls"), zero=Sum("zero_cost_calls"), neg=Sum("negative_cost_calls")
    )
    assert totals["unpriced"] > 0 and totals["zero"] > 0 and totals["neg"] > 0


def test_fill_stopped_half_way_resumes_without_double_counting() -> None:
    seed_random_spend(11)
    steps = TurnStep.objects.count()
    first = rollups_fill(batch_size=25, max_batches=3)
    assert not any(r.caught_up for r in first)
    counted = SpendRollup.objects.filter(granularity="hour").aggregate(n=Sum("calls"))["n"]
    assert counted == 75 < steps
    rollups_fill(batch_size=25)
    assert_rollups_match_direct()
    # And once more: nothing new, nothing added.
    again = rollups_fill(batch_size=25)
    assert all(r.steps == 0 for r in again)
    assert_rollups_match_direct()


class CrashAfterUpsert(RollupFiller):
    """Dies between the upsert of its third batch and the marker advance."""

    def advance(self, state: RollupFillState, hi: int, newest: datetime) -> None:
        if self.report.batches == 2:
            raise RuntimeError("worker killed")
        super().advance(state, hi, newest)


def test_crash_between_upsert_and_marker_counts_nothing_twice() -> None:
    seed_random_spend(5)
    with pytest.raises(RuntimeError, match="worker killed"):
        rollups_fill(batch_size=20, filler_class=CrashAfterUpsert)
    marker = RollupFillState.objects.get(name="spend:hour")
    assert marker.last_step_id > 0  # two batches did commit
    rollups_fill(batch_size=20)
    assert_rollups_match_direct()


def test_steps_still_settling_wait_and_are_never_skipped(tenant) -> None:
    """Ids are handed out before commit, so a fill must not move its marker past a step
    that may still be in flight, even when a higher id is already old enough."""
    session = make_session(tenant)
    recent = record_turn(session, [Step()])  # created now: inside the settle window
    record_turn(session, [Step()], at=START)  # higher id, old timestamp
    now = timezone.now()
    rollups_fill(now=now)
    assert not SpendRollup.objects.exists()
    rollups_fill(now=now + timedelta(minutes=5))
    assert SpendRollup.objects.filter(granularity="day").aggregate(n=Sum("calls"))["n"] == 2
    assert RollupFillState.objects.get(name="spend:day").last_step_id >= recent.steps.get().pk
    assert_rollups_match_direct()
