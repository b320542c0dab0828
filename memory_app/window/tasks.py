"""Celery tasks of the short-term window. Imported by `MemoryAppConfig.ready()`, so every
process that sets Django up (web, worker, beat) registers them; Celery's autodiscovery
only looks for `tasks.py`."""

from __future__ import annotations

from typing import Any

from celery import shared_task

from config.celery_app import TASK_DEFAULTS
from memory_app.services.compaction import session_compact
from memory_app.window.pending import compaction_pending_clear
from sessions_app.errors import NotFound


@shared_task(name="memory_app.compact_session", **TASK_DEFAULTS)
def compact_session(session_id: str, force: bool = False) -> dict[str, Any]:
    """Compact one session's older span if due. Safe to run twice or after a crash."""
    compaction_pending_clear(session_id)  # turns from now on may queue the next one
    try:
        result = session_compact(session_id=session_id, force=force)
    except NotFound:
        return {"session_id": session_id, "status": "gone"}  # deleted since it was enqueued
    return {
        "session_id": str(result.session_id),
        "status": result.status,
        "reason": result.reason,
        "spans": result.spans,
        "turns_compacted": result.turns_compacted,
        "condensed": len(result.condensed_ids),
    }
