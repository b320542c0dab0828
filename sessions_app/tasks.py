"""Periodic housekeeping. Tasks are thin: each calls one service, is safe to run twice,
and never overlaps itself (the services batch, bound their time and lock)."""

from __future__ import annotations

from typing import Any

from celery import shared_task

from config.celery_app import TASK_DEFAULTS
from sessions_app.services.budgets import budget_reservations_purge
from sessions_app.services.idempotency import idempotency_purge
from sessions_app.services.lifecycle import sessions_housekeep
from sessions_app.services.outbox import outbox_drain
from sessions_app.services.step_partitions import step_partitions_maintain


@shared_task(name="sessions_app.expire_sessions", **TASK_DEFAULTS)
def expire_sessions() -> dict[str, Any]:
    """Expire sessions past their TTL, then archive or delete them after retention."""
    result = sessions_housekeep()
    return {
        "expired": result.expired,
        "archived": result.archived,
        "deleted": result.deleted,
        "skipped": result.skipped,
    }


@shared_task(name="sessions_app.purge_idempotency_records", **TASK_DEFAULTS)
def purge_idempotency_records() -> int:
    """Delete Idempotency-Key records older than ENGRAM_IDEMPOTENCY_TTL_SECONDS."""
    return idempotency_purge()


@shared_task(name="sessions_app.outbox_drain", **TASK_DEFAULTS)
def drain_outbox() -> dict[str, Any]:
    """Publish the tasks that could not be published when their write committed."""
    result = outbox_drain()
    return {"sent": result.sent, "failed": result.failed, "remaining": result.remaining}


@shared_task(name="sessions_app.purge_budget_reservations", **TASK_DEFAULTS)
def purge_budget_reservations() -> int:
    """Delete budget reservations whose lease ended."""
    return budget_reservations_purge()


@shared_task(name="sessions_app.step_partitions_maintain", **TASK_DEFAULTS)
def maintain_step_partitions() -> dict[str, Any]:
    """Make turn_step's monthly partitions ahead; drop the ones past retention."""
    result = step_partitions_maintain()
    return {
        "created": result.created,
        "moved_rows": result.moved_rows,
        "dropped": result.dropped,
        "kept": result.kept,
    }
