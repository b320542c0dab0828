"""Runaway detection: the "$2,100 night" must be caught by one scan, alerted once, blocked."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from django.test import override_settings
from rest_framework.test import APIClient

from analytics_app.locks import single_run
from analytics_app.models import AlertStatus, RunawayAlert
from analytics_app.services.alerts import alert_requeue_stuck
from analytics_app.services.runaway import runaway_check_session, runaway_scan
from analytics_app.tasks import runaway_alert_deliver, runaway_scan_task
from sessions_app.hooks import turn_recorded
from sessions_app.models import ChatSession, Tenant
from sessions_app.services.runaway import session_clear_runaway
from tests.analytics_app.factories import Step, make_session, record_turn, set_price
from tests.analytics_app.webhook import WebhookReceiver, webhook_receiver

SECRET = "test-webhook-secret"
NIGHT = datetime(2026, 3, 14, 23, 0, tzinfo=UTC)
# The failing call the loop retried all night: ~7,300 tokens a try, every 5 seconds,
# which is 42M tokens over 8 hours.
FAILING = Step(
    step_type="tool_call",
    model="claude-sonnet-4",
    input_tokens=7000,
    output_tokens=300,  # $0.0255 at the loaded claude-sonnet-4 price
    success=False,
    error="ValidationError: tool output does not match the schema",
)


@pytest.fixture
def webhook() -> Iterator[WebhookReceiver]:
    with (
        webhook_receiver() as receiver,
        override_settings(
            ENGRAM_ALERT_WEBHOOK_URL=receiver.url, ENGRAM_ALERT_WEBHOOK_SECRET=SECRET
        ),
    ):
        yield receiver


def replay_retry_loop(session: ChatSession, start: datetime, minutes: int) -> datetime:
    at = start
    for _ in range(minutes * 12):
        record_turn(session, [Step(step_type="intent"), FAILING], at=at, user_message="retry")
        at += timedelta(seconds=5)
    return at


def verify(received, secret: str = SECRET) -> dict:
    expected = "sha256=" + hmac.new(secret.encode(), received.body, hashlib.sha256).hexdigest()
    assert hmac.compare_digest(received.headers["X-Engram-Signature"], expected)
    return received.json


@pytest.mark.django_db(transaction=True)
@override_settings(ENGRAM_RUNAWAY_AUTO_BLOCK=True)
def test_the_2100_dollar_night_is_flagged_by_one_scan_alerted_once_and_blocked(
    tenant: Tenant, webhook: WebhookReceiver, api: APIClient
) -> None:
    looping = make_session(tenant, user_id="night-owl", agent_id="shop")
    healthy = make_session(tenant, user_id="day-user", agent_id="shop")
    for minute in range(20):
        record_turn(
            healthy, [Step(), Step(step_type="response")], at=NIGHT + timedelta(minutes=minute)
        )
    now = replay_retry_loop(looping, NIGHT, minutes=20)

    report = runaway_scan(now=now)

    assert [(sid, reason) for sid, reason in report.flagged] == [(looping.pk, "retry_loop")]
    looping.refresh_from_db()
    healthy.refresh_from_db()
    assert looping.runaway_at == now and looping.runaway_reason == "retry_loop"
    assert looping.runaway_detail["error"] == FAILING.error
    assert looping.runaway_detail["failures"] >= 20
    assert looping.runaway_blocked is True
    assert healthy.runaway_at is None and not healthy.runaway_blocked
    check = "/api/v1/sessions/{}/budget/check"
    blocked = api.post(check.format(looping.pk), {"estimated_tokens": 10}, format="json")
    assert blocked.status_code == 429, blocked.content
    assert blocked.json()["error"]["code"] == "budget_exceeded"
    # An operator unblocks it, not time: no Retry-After, and the message says so.
    assert "Retry-After" not in blocked
    assert "does not reset by itself" in blocked.json()["error"]["message"]
    allowed = api.post(check.format(healthy.pk), {"estimated_tokens": 10}, format="json")
    assert allowed.status_code == 200, allowed.content

    # The loop goes on all night; the scan runs every minute.
    for _ in range(3):
        now = replay_retry_loop(looping, now, minutes=1)
        assert runaway_scan(now=now).flagged == []
        runaway_check_session(session_id=looping.pk, now=now)

    assert len(webhook.requests) == 1
    alert = verify(webhook.requests[0])
    assert alert["session_id"] == str(looping.pk)
    assert alert["reason"] == "retry_loop" and alert["blocked"] is True
    assert webhook.requests[0].headers["X-Engram-Alert-Id"] == str(alert["alert_id"])
    stored = RunawayAlert.objects.get()
    assert stored.status == AlertStatus.DELIVERED and stored.attempts == 1


@pytest.mark.django_db(transaction=True)
def test_without_auto_block_the_session_is_flagged_but_not_blocked(
    tenant: Tenant, webhook: WebhookReceiver
) -> None:
    session = make_session(tenant)
    now = replay_retry_loop(session, NIGHT, minutes=3)
    runaway_scan(now=now)
    session.refresh_from_db()
    assert session.runaway_reason == "retry_loop" and session.runaway_blocked is False


@pytest.mark.django_db(transaction=True)
def test_a_failed_delivery_stays_pending_then_arrives_once_signed(
    tenant: Tenant, webhook: WebhookReceiver
) -> None:
    webhook.statuses = [500]
    session = make_session(tenant)
    now = replay_retry_loop(session, NIGHT, minutes=3)
    runaway_scan(now=now)
    stored = RunawayAlert.objects.get()
    assert len(webhook.requests) == 1  # answered 500
    assert stored.status == AlertStatus.PENDING and stored.attempts == 1
    assert "500" in stored.last_error

    # The task's retry, as a worker runs it after the backoff; then a stray duplicate.
    runaway_alert_deliver.apply(args=[stored.pk], retries=1)
    runaway_alert_deliver.apply(args=[stored.pk], retries=2)
    assert alert_requeue_stuck(older_than=timedelta(0)) == 0  # nothing pending any more

    assert len(webhook.requests) == 2
    assert {r.headers["X-Engram-Alert-Id"] for r in webhook.requests} == {str(stored.pk)}
    assert verify(webhook.requests[-1])["reason"] == "retry_loop"
    stored.refresh_from_db()
    assert stored.status == AlertStatus.DELIVERED and stored.attempts == 2


@pytest.mark.django_db(transaction=True)
def test_a_wrong_secret_does_not_verify(tenant: Tenant, webhook: WebhookReceiver) -> None:
    session = make_session(tenant)
    runaway_scan(now=replay_retry_loop(session, NIGHT, minutes=3))
    with pytest.raises(AssertionError):
        verify(webhook.requests[0], secret="someone-else")


@pytest.mark.django_db(transaction=True)
def test_a_lost_delivery_task_is_requeued_by_the_scan(tenant: Tenant) -> None:
    session = make_session(tenant)
    runaway_scan(now=replay_retry_loop(session, NIGHT, minutes=3))  # no webhook configured
    assert RunawayAlert.objects.get().status == AlertStatus.NOT_CONFIGURED
    with (
        webhook_receiver() as receiver,
        override_settings(
            ENGRAM_ALERT_WEBHOOK_URL=receiver.url, ENGRAM_ALERT_WEBHOOK_SECRET=SECRET
        ),
    ):
        RunawayAlert.objects.update(status=AlertStatus.PENDING)  # as if the enqueue was lost
        assert alert_requeue_stuck(older_than=timedelta(0)) == 1
        assert len(receiver.requests) == 1
        verify(receiver.requests[0])


@pytest.mark.django_db(transaction=True)
def test_the_per_turn_hook_flags_a_context_that_grows_every_turn(tenant: Tenant) -> None:
    session = make_session(tenant)
    turn = None
    for n in range(1, 11):  # never compacted: every turn re-sends the whole history
        at = NIGHT + timedelta(minutes=3 * n)
        turn = record_turn(session, [Step(step_type="response", input_tokens=6000 * n)], at=at)
    # What turn_record does after its commit; the receiver runs the check.
    turn_recorded.send(
        sender=ChatSession, turn_id=turn.pk, session_id=session.pk, tenant_id=tenant.pk
    )
    session.refresh_from_db()
    assert session.runaway_reason == "context_growth"
    assert session.runaway_detail["input_tokens"][-1] == 60_000


@pytest.mark.django_db
def test_a_growing_context_that_is_still_small_is_not_runaway(tenant: Tenant) -> None:
    session = make_session(tenant)
    for n in range(1, 11):
        record_turn(session, [Step(input_tokens=500 * n)], at=NIGHT + timedelta(minutes=n))
    assert runaway_check_session(session_id=session.pk, now=NIGHT + timedelta(minutes=11)) is None


@pytest.mark.django_db
@override_settings(ENGRAM_RUNAWAY_MAX_TOKENS_PER_WINDOW=100_000)
def test_token_velocity_over_the_window_is_runaway(tenant: Tenant) -> None:
    session = make_session(tenant)
    for n in range(12):
        record_turn(
            session,
            [Step(input_tokens=9000, output_tokens=500)],
            at=NIGHT + timedelta(seconds=30 * n),
        )
    now = NIGHT + timedelta(minutes=6)
    assert runaway_check_session(session_id=session.pk, now=now) == "token_velocity"
    # The same spend spread over hours is not.
    calm = make_session(tenant)
    for n in range(12):
        record_turn(
            calm, [Step(input_tokens=9000, output_tokens=500)], at=NIGHT + timedelta(minutes=20 * n)
        )
    assert runaway_check_session(session_id=calm.pk, now=NIGHT + timedelta(hours=4)) is None


@pytest.mark.django_db
@override_settings(ENGRAM_RUNAWAY_MAX_USD_PER_WINDOW=1.0)
def test_cost_velocity_over_the_window_is_runaway(tenant: Tenant) -> None:
    set_price("o1", input_per_million="2000", output_per_million="0")  # $0.30 a 150-token call
    session = make_session(tenant)
    for n in range(5):
        record_turn(session, [Step(model="o1")], at=NIGHT + timedelta(seconds=n))
    assert runaway_check_session(session_id=session.pk, now=NIGHT + timedelta(minutes=1)) == (
        "cost_velocity"
    )


@pytest.mark.django_db
def test_a_session_past_its_budget_is_runaway(tenant: Tenant) -> None:
    session = make_session(tenant, budget_tokens=1000)
    record_turn(session, [Step(input_tokens=900, output_tokens=200)], at=NIGHT)
    assert runaway_check_session(session_id=session.pk, now=NIGHT) == "budget_exceeded"
    session.refresh_from_db()
    assert session.runaway_detail["budget_tokens"] == 1000


@pytest.mark.django_db(transaction=True)
def test_clearing_the_flag_ends_the_episode_and_a_relapse_alerts_again(
    tenant: Tenant, webhook: WebhookReceiver
) -> None:
    session = make_session(tenant)
    now = replay_retry_loop(session, NIGHT, minutes=3)
    runaway_scan(now=now)
    session.refresh_from_db()
    session_clear_runaway(session=session)
    assert runaway_scan(now=now + timedelta(hours=1)).flagged == []  # quiet for an hour
    now = replay_retry_loop(session, now + timedelta(hours=1), minutes=3)
    runaway_scan(now=now)
    runaway_scan(now=now)
    episodes = list(RunawayAlert.objects.order_by("episode").values_list("episode", flat=True))
    assert len(episodes) == 2 and episodes[0] < episodes[1]
    assert len(webhook.requests) == 2
    assert len({verify(r)["alert_id"] for r in webhook.requests}) == 2


@pytest.mark.django_db
def test_the_scan_does_not_run_two_copies_at_once(tenant: Tenant) -> None:
    session = make_session(tenant)
    replay_retry_loop(session, NIGHT, minutes=3)
    with single_run("runaway_scan", ttl_seconds=60) as held:
        assert held
        assert runaway_scan_task.delay().get() == "skipped"
    assert runaway_scan_task.delay().get().startswith("checked")
