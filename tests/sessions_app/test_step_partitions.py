"""turn_step partitioned by month: steps recorded through the API and back-dated over
three months land in their month's partition (via DEFAULT, moved by the beat's
service), retention drops the oldest month whole, and what remains still adds up:

- `/usage` over the months still held equals a direct aggregation of the steps left,
  for every grouping (`session` included: it reads the raw steps);
- the rollups' totals for the months still held equal that same aggregation;
- the rollups keep the dropped month's history (that is what they are for): its
  rollup totals, and `/usage` over it, equal what the raw steps said before the drop,
  while `group_by=session` (raw steps only) has nothing left for it.

Also: retention waits for the rollups, user erasure and the admin reach every
partition, and the migrated table is partitioned by month with its own sequence.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import Sum
from django.test import Client, override_settings
from django.utils import timezone
from rest_framework.test import APIClient

from analytics_app.models import Granularity, SpendRollup, UserSpendRollup
from analytics_app.services.rollups import rollups_fill
from sessions_app.models import ChatTurn, Tenant, TurnStep
from sessions_app.selectors.step_partitions import DEFAULT_PARTITION, step_partitions
from sessions_app.services.erasure import user_erase
from sessions_app.services.step_partitions import (
    month_after,
    month_start,
    partition_name,
    step_partitions_drop_expired,
    step_partitions_ensure,
)
from tests.sessions_app.helpers import create_session, post_turn, turn_body

pytestmark = pytest.mark.django_db

COUNTERS = ("calls", "input_tokens", "output_tokens", "cost_usd")
GROUPINGS = {
    "day": None,
    "model": "model",
    "agent": "agent_id",
    "user": "user_id",
    "step_type": "step_type",
    "session": "session_id",
}


def month_back(month: datetime, count: int) -> datetime:
    for _ in range(count):
        month = (month - timedelta(days=1)).replace(day=1)
    return month


def backdate(turn_ids: list[int], at: datetime) -> None:
    """Move recorded turns and their steps to `at` (the service stamps now). Updating
    the partition key moves each step row into the partition of its new month."""
    ChatTurn.objects.filter(id__in=turn_ids).update(created_at=at)
    TurnStep.objects.filter(turn_id__in=turn_ids).update(created_at=at)


def record(api: APIClient, session_id: str, steps: list[tuple[str, str, int, int]]) -> int:
    body = turn_body(
        [
            {"step_type": kind, "model": model, "input_tokens": tin, "output_tokens": tout}
            for kind, model, tin, tout in steps
        ]
    )
    response = post_turn(api, session_id, body)
    assert response.status_code == 201, response.content
    number = response.json()["turn"]["turn_number"]
    return ChatTurn.objects.get(session_id=session_id, turn_number=number).pk


def record_three_months(api: APIClient, now: datetime) -> dict[str, datetime]:
    """Turns of two users and two agents in each of three months: the oldest two
    back-dated to the 10th, the current one as recorded."""
    current = month_start(now)
    months = {"old": month_back(current, 2), "middle": month_back(current, 1), "current": current}
    alice = create_session(api, user_id="alice", agent_id="shop")["id"]
    bob = create_session(api, user_id="bob", agent_id="support")["id"]
    plans = {
        "old": [(alice, [("intent", "gpt-4o-mini", 300, 40), ("answer", "gpt-4o", 900, 120)]),
                (bob, [("answer", "gemini-1.5-pro", 700, 90)])],
        "middle": [(alice, [("answer", "gpt-4o", 500, 60)]),
                   (bob, [("intent", "gemini-1.5-flash", 200, 20), ("tool", "mystery-llm", 5, 5)])],
        "current": [(alice, [("intent", "gpt-4o-mini", 100, 10)]),
                    (bob, [("answer", "gemini-1.5-pro", 400, 50)])],
    }  # fmt: skip
    for name, plan in plans.items():
        turn_ids = [record(api, sid, steps) for sid, steps in plan for _ in range(2)]
        if name != "current":
            backdate(turn_ids, months[name].replace(day=10, hour=12))
    return months


def direct(tenant: Tenant, group_by: str, start: datetime, end: datetime) -> dict[str, tuple]:
    """Sums straight from the steps, in Python: what the partitions hold."""
    sums: dict[str, list] = defaultdict(lambda: [0, 0, 0, Decimal(0)])
    for step in TurnStep.objects.filter(tenant=tenant, created_at__gte=start, created_at__lt=end):
        column = GROUPINGS[group_by]
        key = (
            str(step.created_at.astimezone(UTC).date())
            if column is None
            else str(getattr(step, column))
        )
        row = sums[key]
        row[0] += 1
        row[1] += step.input_tokens
        row[2] += step.output_tokens
        row[3] += step.cost_usd or 0
    return {key: tuple(row) for key, row in sums.items()}


def usage(api: APIClient, group_by: str, start: datetime, end: datetime) -> dict[str, tuple]:
    """GET /usage over [start, end) (whole UTC days)."""
    last_day = (end - timedelta(days=1)).date()
    response = api.get(
        "/api/v1/usage", {"group_by": group_by, "from": str(start.date()), "to": str(last_day)}
    )
    assert response.status_code == 200, response.content
    return {
        row["key"]: (row["calls"], row["input_tokens"], row["output_tokens"],
                     Decimal(str(row["cost_usd"])))
        for row in response.json()["rows"]
    }  # fmt: skip


def rollup_totals(tenant: Tenant, start: datetime, end: datetime) -> dict[str, tuple]:
    """Totals of each rollup table over [start, end)."""
    sums = {"calls": Sum("calls"), "input_tokens": Sum("input_tokens"),
            "output_tokens": Sum("output_tokens"), "cost_usd": Sum("cost_usd")}  # fmt: skip
    window = {"tenant": tenant, "bucket_start__gte": start, "bucket_start__lt": end}
    tables = {
        "spend:hour": SpendRollup.objects.filter(granularity=Granularity.HOUR, **window),
        "spend:day": SpendRollup.objects.filter(granularity=Granularity.DAY, **window),
        "user:day": UserSpendRollup.objects.filter(**window),
    }
    out = {}
    for name, rows in tables.items():
        got = rows.aggregate(**sums)
        out[name] = tuple(got[c] or 0 for c in COUNTERS)
    return out


def totals(rows: dict[str, tuple]) -> tuple:
    return tuple(sum(row[i] for row in rows.values()) for i in range(4))


def test_retention_drops_the_oldest_month_and_the_rest_still_agrees(
    api: APIClient, tenant: Tenant
) -> None:
    now = timezone.now()
    months = record_three_months(api, now)
    old, middle, current = months["old"], months["middle"], months["current"]

    made = step_partitions_ensure(now=now)
    by_name = {p.name: p for p in step_partitions()}
    assert {partition_name(old), partition_name(middle)} <= set(by_name)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {DEFAULT_PARTITION}")  # noqa: S608
        assert cursor.fetchone()[0] == 0  # the back-dated steps left DEFAULT
        for month, expected in ((old, 6), (middle, 6), (current, 4)):
            cursor.execute(f"SELECT count(*) FROM {partition_name(month)}")  # noqa: S608
            assert cursor.fetchone()[0] == expected, month
    assert made.moved_rows in (0, 12)  # 12 when those months had no partition yet

    rollups_fill(now=now + timedelta(minutes=5))  # every step settled
    end = month_after(current)
    before_old = direct(tenant, "model", old, middle)
    assert sum(row[0] for row in before_old.values()) == 6

    days = (now - middle).days  # the old month ended before the cutoff; the middle did not
    report = step_partitions_drop_expired(now=now, retention_days=days)
    assert partition_name(old) in report.dropped
    assert partition_name(middle) not in report.dropped and not report.kept
    remaining = {p.name for p in step_partitions()}
    assert partition_name(old) not in remaining
    assert {partition_name(middle), partition_name(current), DEFAULT_PARTITION} <= remaining
    assert not TurnStep.objects.filter(created_at__lt=middle).exists()
    assert TurnStep.objects.count() == 10

    # What remains: /usage and every rollup table equal a direct aggregation.
    remaining_direct = direct(tenant, "model", middle, end)
    for group_by in GROUPINGS:
        assert usage(api, group_by, middle, end) == direct(tenant, group_by, middle, end), group_by
    for name, got in rollup_totals(tenant, middle, end).items():
        assert got == totals(remaining_direct), name

    # The dropped month: the rollups (and /usage, which reads them) kept its history;
    # the raw steps, and so group_by=session, are gone.
    for name, got in rollup_totals(tenant, old, middle).items():
        assert got == totals(before_old), name
    assert usage(api, "model", old, middle) == before_old
    assert usage(api, "session", old, middle) == {}
    # The turns stay (sessions' audit log); their steps went with the month.
    assert ChatTurn.objects.filter(created_at__lt=middle).count() == 4


def test_retention_waits_until_the_rollups_counted_the_month(
    api: APIClient, tenant: Tenant
) -> None:
    now = timezone.now()
    months = record_three_months(api, now)
    step_partitions_ensure(now=now)
    days = (now - months["middle"]).days
    oldest = partition_name(months["old"])

    kept = step_partitions_drop_expired(now=now, retention_days=days)
    assert kept.kept == [oldest] and not kept.dropped
    assert TurnStep.objects.filter(created_at__lt=months["middle"]).count() == 6

    rollups_fill(now=now + timedelta(minutes=5))
    assert step_partitions_drop_expired(now=now, retention_days=days).dropped == [oldest]
    assert step_partitions_drop_expired(now=now, retention_days=0).dropped == []  # 0: keep all


def test_a_month_without_partition_waits_in_default_then_moves(api: APIClient) -> None:
    sid = create_session(api)["id"]
    turn_ids = [record(api, sid, [("intent", "gpt-4o-mini", 10, 1)] * 3) for _ in range(2)]
    long_ago = datetime(2001, 3, 15, 8, tzinfo=UTC)
    backdate(turn_ids, long_ago)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT count(*) FROM {DEFAULT_PARTITION} WHERE created_at < '2002-01-01'"  # noqa: S608
        )
        assert cursor.fetchone()[0] == 6
    ids = set(TurnStep.objects.filter(turn_id__in=turn_ids).values_list("id", flat=True))

    report = step_partitions_ensure(ahead=0)
    assert "turn_step_p2001_03" in report.created and report.moved_rows == 6
    with connection.cursor() as cursor:
        cursor.execute("SELECT id FROM turn_step_p2001_03")
        assert {row[0] for row in cursor.fetchall()} == ids
        cursor.execute(f"SELECT count(*) FROM {DEFAULT_PARTITION}")  # noqa: S608
        assert cursor.fetchone()[0] == 0
        # The attached partition carries the parent's indexes and foreign keys.
        cursor.execute("SELECT count(*) FROM pg_indexes WHERE tablename = 'turn_step_p2001_03'")
        assert cursor.fetchone()[0] == 5  # primary key + four
        cursor.execute(
            "SELECT count(*) FROM pg_constraint WHERE conrelid = 'turn_step_p2001_03'::regclass"
            " AND contype = 'f'"
        )
        assert cursor.fetchone()[0] == 3
    # A second run has nothing to make.
    assert step_partitions_ensure(ahead=0).created == []
    # Reads across partitions are unchanged: the session's turns still list their steps.
    turns = api.get(f"/api/v1/sessions/{sid}/turns").json()
    listed = turns["results"] if isinstance(turns, dict) else turns
    assert sorted(len(turn["steps"]) for turn in listed) == [3, 3]


def test_user_erasure_and_admin_reach_every_partition(api: APIClient, tenant: Tenant) -> None:
    now = timezone.now()
    record_three_months(api, now)
    step_partitions_ensure(now=now)
    alice_steps = TurnStep.objects.filter(user_id="alice")
    assert len({month_start(s.created_at) for s in alice_steps}) == 3
    old_step = alice_steps.order_by("created_at").first()
    assert old_step is not None

    user = get_user_model().objects.create_superuser("root", "", "pw-root-123")
    client = Client()
    client.force_login(user)
    for url in (
        "/admin/sessions_app/turnstep/",
        f"/admin/sessions_app/turnstep/{old_step.pk}/change/",
        f"/admin/sessions_app/chatturn/{old_step.turn_id}/change/",
    ):
        assert client.get(url).status_code == 200, url

    erased = user_erase(tenant=tenant, user_id="alice")
    assert erased.anonymised["steps"] == 8 and "steps" not in erased.deleted
    assert not TurnStep.objects.filter(user_id="alice").exists()
    assert TurnStep.objects.filter(user_id="bob").count() == 8


def _catalog(query: str, params: list[Any] | None = None) -> Any:
    with connection.cursor() as cursor:
        cursor.execute(query, params)
        return cursor.fetchone()


def test_the_migrated_step_table_is_partitioned_by_month(api: APIClient) -> None:
    """The migrations create `turn_step` partitioned on created_at with a DEFAULT
    partition and this month's; ids come from one sequence, so they keep growing."""
    assert _catalog(
        "SELECT relkind, pg_get_partkeydef(oid) FROM pg_class WHERE relname = 'turn_step'"
    ) == ("p", "RANGE (created_at)")
    assert _catalog(
        "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conname = 'turn_step_pkey'"
    ) == ("PRIMARY KEY (id, created_at)",)
    names = {p.name for p in step_partitions()}
    assert {"turn_step_default", partition_name(month_start(timezone.now()))} <= names
    sid = create_session(api)["id"]
    first = record(api, sid, [("intent", "gpt-4o-mini", 10, 1)])
    backdate([first], datetime(2003, 7, 4, tzinfo=UTC))
    second = record(api, sid, [("intent", "gpt-4o-mini", 11, 1)])
    assert _catalog("SELECT count(*) FROM turn_step_default WHERE turn_id = %s", [first]) == (1,)
    ids = [TurnStep.objects.get(turn_id=turn).id for turn in (first, second)]
    assert ids[1] > ids[0]


@override_settings(ENGRAM_STEP_PARTITIONS_AHEAD=5, ENGRAM_STEP_RETENTION_DAYS=0)
def test_the_beat_task_makes_months_ahead_and_keeps_everything_by_default() -> None:
    from sessions_app.tasks import maintain_step_partitions

    result = maintain_step_partitions.apply().get()
    names = {p.name for p in step_partitions()}
    month = month_start(timezone.now())
    for _ in range(6):  # this month and five ahead
        assert partition_name(month) in names
        month = month_after(month)
    assert partition_name(month) not in names
    assert result["dropped"] == [] and result["kept"] == []
    assert maintain_step_partitions.apply().get()["created"] == []  # nothing left to make
