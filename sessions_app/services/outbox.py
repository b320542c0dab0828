"""After-commit publishing that never waits on the broker.

A request that committed a turn must answer whatever the broker does: a plain publish to
a stalled Valkey (paused, half-open connection, failover) holds the response until the
TCP stack gives up. `task_publish` therefore publishes through its own small connection pool whose
sockets time out after ENGRAM_PUBLISH_TIMEOUT_SECONDS and which never retries; what it
could not publish is written to the `outbox_message` table, and the periodic
`sessions_app.outbox_drain` task publishes it later, oldest first, in bounded batches.

Why not write every message to the outbox in the turn's transaction: the receivers
decide *after commit* whether there is work (most turns have nothing to extract), and
the common case (broker up) then costs no extra row. The price: a message whose publish
failed and whose outbox insert also failed (database gone right after commit) is lost,
which the periodic scans (runaway, compaction on the next turn) already tolerate.

No double-send by the drain: each batch is claimed with `FOR UPDATE SKIP LOCKED` and
deleted in the transaction that published it, so two drains never send the same row. A
publish that timed out may still have reached the broker (the command was written, the
reply was late), so a message can run twice; every task enqueued this way is idempotent.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from celery import Task, current_app
from django.conf import settings
from django.db import transaction
from kombu import Connection

from sessions_app.models import OutboxMessage

logger = logging.getLogger(__name__)

_pool_lock = threading.Lock()
_pool: Any = None
_pool_key: tuple[str, float] | None = None
# After a failed publish, this process sends straight to the outbox until then
# (monotonic seconds): a turn that enqueues three tasks must not wait three timeouts,
# nor every request of a stalled minute one each.
_broker_down_until = 0.0


def _publish_pool() -> Any:
    """A kombu connection pool for after-commit publishes only: short socket timeouts
    and no retries, so a stalled broker costs a request at most the timeout. The
    worker's own connections keep Celery's defaults (long blocking reads are normal
    there). Built per process on first use (after a fork) and rebuilt if the settings
    change (tests)."""
    global _pool, _pool_key
    timeout = float(settings.ENGRAM_PUBLISH_TIMEOUT_SECONDS)
    key = (str(current_app.conf.broker_write_url or current_app.conf.broker_url), timeout)
    with _pool_lock:
        if _pool is None or _pool_key != key:
            options = {
                **settings.CELERY_BROKER_TRANSPORT_OPTIONS,
                "socket_timeout": timeout,
                "socket_connect_timeout": timeout,
                "max_retries": 0,
            }
            connection: Connection = current_app.connection_for_write(
                connect_timeout=timeout, transport_options=options
            )
            _pool = connection.Pool(limit=settings.ENGRAM_PUBLISH_POOL_SIZE)
            _pool_key = key
        return _pool


def _publish(task_name: str, args: Sequence[Any], kwargs: dict[str, Any]) -> None:
    """Publish once, within the timeout, or raise. Eager mode (tests without a worker)
    runs the task inline instead."""
    if current_app.conf.task_always_eager:
        current_app.tasks[task_name].apply_async(args=list(args), kwargs=kwargs)
        return
    timeout = float(settings.ENGRAM_PUBLISH_TIMEOUT_SECONDS)
    pool = _publish_pool()
    connection = pool.acquire(block=True, timeout=timeout)
    try:
        current_app.send_task(
            task_name, args=list(args), kwargs=kwargs, connection=connection, retry=False
        )
    except Exception:
        # The socket may be half-way through a command: never reuse it.
        connection.collect()
        raise
    finally:
        connection.release()


class BrokerBackingOff(Exception):
    """A recent publish failed: skip the broker for a few seconds."""


def task_publish(task: Task | str, *args: Any, **kwargs: Any) -> bool:
    """Enqueue `task(*args, **kwargs)` without ever blocking longer than the publish
    timeout and without raising for the broker: True when published, False when it was
    kept in the outbox (or, if even that failed, logged as lost). For use in after-commit
    hooks, where the request's write is already durable. In eager mode (tests) the task
    runs inline and its own errors propagate, as with `.delay`."""
    global _broker_down_until
    name = task if isinstance(task, str) else task.name
    if current_app.conf.task_always_eager:
        # Inline (tests without a worker): a failing task is the caller's error, as with
        # `.delay`, not a publish to keep for later.
        current_app.tasks[name].apply_async(args=list(args), kwargs=kwargs)
        return True
    try:
        if time.monotonic() < _broker_down_until:
            raise BrokerBackingOff("a publish failed moments ago")
        _publish(name, args, kwargs)
        return True
    except Exception as exc:  # the broker is down or stalled: keep the work for later
        if not isinstance(exc, BrokerBackingOff):
            _broker_down_until = time.monotonic() + settings.ENGRAM_PUBLISH_BACKOFF_SECONDS
            logger.warning("publish of %s failed (%s); kept in the outbox", name, exc)
        try:
            OutboxMessage.objects.create(
                task_name=name, args=list(args), kwargs=kwargs, last_error=repr(exc)[:500]
            )
        except Exception:
            logger.exception("could not keep %s%r in the outbox either; it is lost", name, args)
        return False


@dataclass(frozen=True)
class DrainResult:
    sent: int
    failed: bool  # the broker refused a publish: the rest waits for the next run
    remaining: int


def outbox_drain(*, batch_size: int | None = None, max_seconds: float | None = None) -> DrainResult:
    """Publish what the outbox holds, oldest first, one batch per transaction; stop at
    the first failure (the broker is still down: the next run retries), when empty, or
    after `max_seconds` so a run never overlaps the next one."""
    batch_size = batch_size or settings.ENGRAM_OUTBOX_BATCH_SIZE
    deadline = time.monotonic() + (max_seconds or settings.ENGRAM_OUTBOX_DRAIN_MAX_SECONDS)
    sent = 0
    failed = False
    while time.monotonic() < deadline and not failed:
        with transaction.atomic():
            batch = list(
                OutboxMessage.objects.select_for_update(skip_locked=True).order_by("pk")[
                    :batch_size
                ]
            )
            if not batch:
                break
            done: list[int] = []
            for message in batch:
                try:
                    _publish(message.task_name, message.args, message.kwargs)
                except Exception as exc:
                    OutboxMessage.objects.filter(pk=message.pk).update(
                        attempts=message.attempts + 1, last_error=repr(exc)[:500]
                    )
                    failed = True
                    break
                done.append(message.pk)
            OutboxMessage.objects.filter(pk__in=done).delete()
            sent += len(done)
    return DrainResult(sent=sent, failed=failed, remaining=OutboxMessage.objects.count())
