"""Session lifecycle: opened → active (first turn) → compacted / expired → archived.

A session expires `ttl_seconds` after its last write; every write moves `expires_at`
forward. A write to a session that is expired (by status, or because `expires_at` passed
before the periodic task noticed) answers 410 `session_expired`. The periodic task marks
such sessions expired, then, `ENGRAM_SESSION_RETENTION_DAYS` after expiry, archives them
(turns kept for audit) or deletes them, as `ENGRAM_SESSION_RETENTION` says.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from sessions_app.errors import NotFound
from sessions_app.hooks import announce_sessions_ended, turns_withdrawn
from sessions_app.locks import advisory_lock
from sessions_app.models import ChatSession, ChatTurn, SessionStatus
from sessions_app.selectors.session_status import LIVE_STATUSES
from sessions_app.selectors.sessions import session_ensure_writable

# Any two-int key unique to this job; pg_try_advisory_lock keeps two beats from overlapping.


def session_touch(*, session: ChatSession, now: datetime | None = None) -> list[str]:
    """Move last activity and expiry forward on the instance; returns the changed fields
    for the caller's `save(update_fields=…)`."""
    now = now or timezone.now()
    session.last_active_at = now
    session.expires_at = now + timedelta(seconds=session.ttl_seconds)
    return ["last_active_at", "expires_at"]


@dataclass(frozen=True)
class HousekeepingResult:
    expired: int
    archived: int
    deleted: int
    skipped: bool = False  # another run held the lock


def sessions_expire_due(
    *, now: datetime | None = None, batch_size: int = 500, max_seconds: float = 60.0
) -> int:
    """Mark live sessions past their expiry as expired, a batch per transaction."""
    now = now or timezone.now()
    started = time.monotonic()
    total = 0
    while time.monotonic() - started < max_seconds:
        with transaction.atomic():
            ids = list(
                ChatSession.objects.select_for_update(skip_locked=True)
                .filter(status__in=LIVE_STATUSES, expires_at__lte=now)
                .values_list("pk", flat=True)[:batch_size]
            )
            if not ids:
                break
            expired = ChatSession.objects.filter(pk__in=ids)
            by_tenant: dict[int, list[Any]] = {}
            for pk, tenant_id in expired.values_list("pk", "tenant_id"):
                by_tenant.setdefault(tenant_id, []).append(pk)
            total += expired.update(status=SessionStatus.EXPIRED, updated_at=now)
            for tenant_id, session_ids in by_tenant.items():
                announce_sessions_ended(
                    tenant_id=tenant_id, session_ids=session_ids, reason="expired"
                )
    return total


def sessions_apply_retention(
    *,
    now: datetime | None = None,
    mode: str | None = None,
    retention_days: int | None = None,
    batch_size: int = 200,
    max_seconds: float = 60.0,
) -> tuple[int, int]:
    """Archive or delete sessions expired more than `retention_days` ago.
    Returns (archived, deleted)."""
    now = now or timezone.now()
    mode = mode or settings.ENGRAM_SESSION_RETENTION
    days = settings.ENGRAM_SESSION_RETENTION_DAYS if retention_days is None else retention_days
    cutoff = now - timedelta(days=days)
    started = time.monotonic()
    archived = deleted = 0
    while time.monotonic() - started < max_seconds:
        with transaction.atomic():
            ids = list(
                ChatSession.objects.select_for_update(skip_locked=True)
                .filter(status=SessionStatus.EXPIRED, expires_at__lte=cutoff)
                .values_list("pk", flat=True)[:batch_size]
            )
            if not ids:
                break
            if mode == "delete":
                by_tenant: dict[int, list[Any]] = {}
                for pk, tenant_id in ChatSession.objects.filter(pk__in=ids).values_list(
                    "pk", "tenant_id"
                ):
                    by_tenant.setdefault(tenant_id, []).append(pk)
                ChatSession.objects.filter(pk__in=ids).delete()
                for tenant_id, session_ids in by_tenant.items():
                    turns_withdrawn.send(
                        sender=ChatSession,
                        tenant_id=tenant_id,
                        session_ids=session_ids,
                        turn_numbers=None,
                    )
                deleted += len(ids)
            else:
                archived += ChatSession.objects.filter(pk__in=ids).update(
                    status=SessionStatus.ARCHIVED, updated_at=now
                )
    return archived, deleted


def sessions_housekeep(*, now: datetime | None = None) -> HousekeepingResult:
    """The periodic job: expire, then archive/delete. Never two runs at once."""
    with advisory_lock("housekeeping") as acquired:
        if not acquired:
            return HousekeepingResult(expired=0, archived=0, deleted=0, skipped=True)
        expired = sessions_expire_due(now=now)
        archived, deleted = sessions_apply_retention(now=now)
    return HousekeepingResult(expired=expired, archived=archived, deleted=deleted)


def session_lock_for_write(*, session: ChatSession, now: datetime | None = None) -> ChatSession:
    """The session row again, locked (SELECT … FOR UPDATE) until the caller's transaction
    ends, checked writable, and its expiry moved forward: every write is activity.
    Services that change the cart, results or focus call it first, so concurrent writers
    to one session queue up instead of racing on positions. Must run inside
    `transaction.atomic`."""
    try:
        locked = ChatSession.objects.select_for_update().get(pk=session.pk)
    except ChatSession.DoesNotExist as exc:
        raise NotFound("Session not found.") from exc
    session_ensure_writable(session=locked, now=now)
    locked.save(update_fields=session_touch(session=locked, now=now))
    return locked


def turns_mark_compacted(*, session_id: Any, turn_numbers: Sequence[int]) -> int:
    """Flag turns as summarised (the window's compaction). They are kept whole: the turn
    log is the audit trail; only the context stops quoting them verbatim."""
    return ChatTurn.objects.filter(
        session_id=session_id, turn_number__in=list(turn_numbers), compacted=False
    ).update(compacted=True)


def session_mark_compacted(*, session_id: Any) -> None:
    """A live session whose older turns were summarised shows it in its status."""
    ChatSession.objects.filter(
        pk=session_id, status__in=[SessionStatus.OPENED, SessionStatus.ACTIVE]
    ).update(status=SessionStatus.COMPACTED)
