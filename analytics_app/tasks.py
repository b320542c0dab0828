"""Celery tasks of analytics_app. Each takes ids (or nothing), calls one service, is safe
to run twice, and logs what it did. Periodic ones hold a Valkey lock so that two copies
never run at once; their schedule is declared in `config/schedules.py`."""

from __future__ import annotations

import logging
import random
from uuid import UUID

from celery import Task, shared_task
from django.conf import settings

from analytics_app.locks import single_run
from analytics_app.models import BudgetAlert
from analytics_app.services.alerts import AlertDeliveryFailed, alert_deliver, alert_mark_failed
from analytics_app.services.rollups import rollups_fill
from analytics_app.services.runaway import runaway_check_session, runaway_scan
from config.celery_app import TASK_DEFAULTS

logger = logging.getLogger(__name__)


@shared_task(name="analytics_app.rollups_fill", **TASK_DEFAULTS)
def rollups_fill_task() -> str:
    # The lock outlives the fill's own time limit, so a second copy waits for the next beat.
    ttl = int(settings.ENGRAM_ROLLUP_MAX_SECONDS) + 60
    with single_run("rollups_fill", ttl_seconds=ttl) as acquired:
        if not acquired:
            logger.info("rollups fill skipped: another copy is running")
            return "skipped"
        reports = rollups_fill()
    return ", ".join(f"{r.name}: {r.steps} step(s)" for r in reports)


@shared_task(name="analytics_app.runaway_scan", **TASK_DEFAULTS)
def runaway_scan_task() -> str:
    ttl = int(settings.ENGRAM_RUNAWAY_SCAN_MAX_SECONDS) + 60
    with single_run("runaway_scan", ttl_seconds=ttl) as acquired:
        if not acquired:
            logger.info("runaway scan skipped: another copy is running")
            return "skipped"
        report = runaway_scan()
    return f"checked {report.checked}, flagged {len(report.flagged)}"


@shared_task(name="analytics_app.runaway_check_session", **TASK_DEFAULTS)
def runaway_check_session_task(session_id: str) -> str | None:
    return runaway_check_session(session_id=UUID(session_id))


@shared_task(bind=True, name="analytics_app.budget_alert_deliver", **TASK_DEFAULTS)
def budget_alert_deliver(self: Task, alert_id: int) -> str:
    """A budget threshold alert, delivered and retried as the runaway alerts are."""
    try:
        return alert_deliver(alert_id=alert_id, model=BudgetAlert)
    except AlertDeliveryFailed as exc:
        if self.request.retries >= self.max_retries:
            alert_mark_failed(alert_id=alert_id, model=BudgetAlert)
            raise
        countdown = 10 * 2**self.request.retries + random.uniform(0, 5)
        raise self.retry(exc=exc, countdown=countdown) from exc


@shared_task(bind=True, name="analytics_app.runaway_alert_deliver", **TASK_DEFAULTS)
def runaway_alert_deliver(self: Task, alert_id: int) -> str:
    """Retries a failed delivery with exponential backoff and jitter (10 s, 20 s, 40 s…);
    when the retries are spent the alert is marked failed for a manual resend."""
    try:
        return alert_deliver(alert_id=alert_id)
    except AlertDeliveryFailed as exc:
        if self.request.retries >= self.max_retries:
            alert_mark_failed(alert_id=alert_id)
            raise
        countdown = 10 * 2**self.request.retries + random.uniform(0, 5)
        raise self.retry(exc=exc, countdown=countdown) from exc
