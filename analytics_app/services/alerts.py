"""Runaway alerts: one per episode, delivered to a webhook with an HMAC-SHA256 signature.
Budget threshold alerts (`BudgetAlert`) are delivered by the same code.

Delivery is at-least-once: a worker that dies between the receiver's 2xx and our commit
sends the alert again on retry. Every delivery carries `X-Engram-Alert-Id`, so the
receiver drops a repeat. On our side the alert row is locked while it is being sent
(SELECT … FOR UPDATE SKIP LOCKED), so two workers never send it at the same moment.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import urllib.error
import urllib.request
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from analytics_app.models import AlertStatus, BudgetAlert, RunawayAlert
from sessions_app.services.outbox import task_publish

if TYPE_CHECKING:
    from sessions_app.models import ChatSession

logger = logging.getLogger(__name__)

SIGNATURE_HEADER = "X-Engram-Signature"
ALERT_ID_HEADER = "X-Engram-Alert-Id"
# Longer than the delivery task's whole retry schedule (10 + 20 + 40 s plus jitter).
STUCK_AFTER = timedelta(minutes=10)


class AlertDeliveryFailed(Exception):
    """The webhook did not answer 2xx; the task retries with backoff."""


def alert_signature(body: bytes, secret: str) -> str:
    """`sha256=<hex>` of the raw body, as GitHub and Stripe style receivers expect."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def _payload(session: ChatSession, episode: datetime, reason: str, detail: dict[str, Any]) -> dict:
    return {
        "event": "session.runaway",
        "session_id": str(session.pk),
        "tenant": session.tenant.name,
        "user_id": session.user_id,
        "agent_id": session.agent_id,
        "reason": reason,
        "detail": detail,
        "flagged_at": episode.isoformat(),
        "blocked": session.runaway_blocked,
        "totals": {
            "turns": session.turn_count,
            "input_tokens": session.total_input_tokens,
            "output_tokens": session.total_output_tokens,
            "cost_usd": str(session.total_cost_usd),
        },
    }


def alert_open(
    *, session: ChatSession, episode: datetime, reason: str, detail: dict[str, Any]
) -> RunawayAlert | None:
    """Records the episode's alert and, after commit, enqueues its delivery. None if the
    episode already has one: the unique (session, episode) constraint decides."""
    from analytics_app.tasks import runaway_alert_deliver

    with transaction.atomic():
        alert, created = RunawayAlert.objects.get_or_create(
            session=session,
            episode=episode,
            defaults={
                "tenant_id": session.tenant_id,
                "reason": reason,
                "payload": _payload(session, episode, reason, detail),
            },
        )
        if not created:
            return None
        # robust: a broker that is down must not undo the flag; the scan re-enqueues
        # alerts left pending (`alert_requeue_stuck`).
        transaction.on_commit(lambda: task_publish(runaway_alert_deliver, alert.pk), robust=True)
    return alert


AlertModel = type[RunawayAlert] | type[BudgetAlert]


def alert_deliver(*, alert_id: int, model: AlertModel = RunawayAlert) -> str:
    """Sends a pending alert (of `model`) once; answers its status. Raises
    AlertDeliveryFailed after recording the failed attempt, so that the task retries."""
    error = ""
    with transaction.atomic():
        alert = model.objects.select_for_update(skip_locked=True).filter(pk=alert_id).first()
        if alert is None:
            return "busy"  # gone, or another worker holds it right now
        if alert.status != AlertStatus.PENDING:
            return alert.status
        url = settings.ENGRAM_ALERT_WEBHOOK_URL
        if not url:
            alert.status = AlertStatus.NOT_CONFIGURED
            alert.save(update_fields=["status"])
            return alert.status
        alert.payload = {**alert.payload, "alert_id": alert.pk}
        body = json.dumps(alert.payload, sort_keys=True, separators=(",", ":")).encode()
        alert.attempts += 1
        try:
            webhook_post(url, body, alert.pk)
        except (OSError, urllib.error.URLError, ValueError) as exc:
            error = f"{type(exc).__name__}: {exc}"
            alert.last_error = error[:2000]
            alert.save(update_fields=["attempts", "last_error", "payload"])
        else:
            alert.status = AlertStatus.DELIVERED
            alert.delivered_at = timezone.now()
            alert.save(update_fields=["attempts", "status", "delivered_at", "payload"])
            logger.info("%s %s delivered", model.__name__, alert.pk)
            return alert.status
    logger.warning("%s %s not delivered: %s", model.__name__, alert_id, error)
    raise AlertDeliveryFailed(error)


def webhook_post(url: str, body: bytes, alert_id: int) -> None:
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"webhook URL must be http(s): {url!r}")
    request = urllib.request.Request(  # noqa: S310 - scheme checked above
        url,
        data=body,
        method="POST",
        headers={
            "Content-Type": "application/json",
            "User-Agent": "Engram-Alerts/1",
            SIGNATURE_HEADER: alert_signature(body, settings.ENGRAM_ALERT_WEBHOOK_SECRET),
            ALERT_ID_HEADER: str(alert_id),
        },
    )
    timeout = settings.ENGRAM_ALERT_WEBHOOK_TIMEOUT_SECONDS
    with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 - checked
        if not 200 <= response.status < 300:
            raise OSError(f"webhook answered {response.status}")


@transaction.atomic
def alert_mark_failed(*, alert_id: int, model: AlertModel = RunawayAlert) -> None:
    """Retries are spent: the alert stays visible in the admin for a manual resend."""
    model.objects.filter(pk=alert_id, status=AlertStatus.PENDING).update(status=AlertStatus.FAILED)


def alert_requeue_stuck(*, older_than: timedelta = STUCK_AFTER) -> int:
    """Enqueues again the pending alerts whose delivery task was lost (broker down at
    enqueue, queue flushed). Older than every retry's backoff, so a retry in progress is
    not doubled; a doubled one would find the alert delivered or locked anyway."""
    from analytics_app.tasks import runaway_alert_deliver

    stuck = list(
        RunawayAlert.objects.filter(
            status=AlertStatus.PENDING, created_at__lt=timezone.now() - older_than
        ).values_list("pk", flat=True)[:100]
    )
    for alert_id in stuck:
        runaway_alert_deliver.delay(alert_id)
    return len(stuck)


@transaction.atomic
def alert_resend(*, alert: RunawayAlert) -> None:
    """An operator's resend of an alert whose retries were spent (admin action)."""
    from analytics_app.tasks import runaway_alert_deliver

    if alert.status in (AlertStatus.FAILED, AlertStatus.NOT_CONFIGURED):
        alert.status = AlertStatus.PENDING
        alert.save(update_fields=["status"])
        transaction.on_commit(lambda: task_publish(runaway_alert_deliver, alert.pk))
