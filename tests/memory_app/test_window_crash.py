"""A real Celery worker killed with SIGKILL half-way through a compaction.

The worker is a subprocess (`celery -A config worker --pool solo`) on the test's own
PostgreSQL database and Valkey broker. The test holds, from a connection of its own, a row
lock on the last turn of the span to be compacted; the worker's compaction then blocks
inside its write transaction, after the summary row is inserted, while flagging the
span's turns `compacted` — a real wait PostgreSQL reports, not a hook in the code. The
test kills the worker there, releases its lock, then runs the task again. Outcome:
exactly one summary for the span, every turn still there, flags consistent with the
summary.
"""

from __future__ import annotations

import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest
from django.conf import settings as django_settings
from django.db import connection

from config.celery_app import app as celery_app
from memory_app.window.models import ContextSummary
from memory_app.window.tasks import compact_session
from sessions_app.models import ChatSession, ChatTurn, Tenant
from tests.live_processes import database_url, process_env, start_celery_worker
from tests.memory_app.window_helpers import new_session, record

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def _wait_for_blocked_worker(
    locker_pid: int, worker: subprocess.Popen[bytes], timeout: float
) -> int:
    """The backend pid of the worker's connection once it waits for the test's row lock."""
    deadline = time.monotonic() + timeout
    with connection.cursor() as cursor:
        while time.monotonic() < deadline:
            cursor.execute(
                "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
                "AND wait_event_type = 'Lock' AND %s = ANY(pg_blocking_pids(pid))",
                [locker_pid],
            )
            row = cursor.fetchone()
            if row is not None:
                return int(row[0])
            if worker.poll() is not None:
                raise AssertionError(f"the worker exited early with {worker.returncode}")
            time.sleep(0.1)
    raise AssertionError("the compaction never reached the locked turn")


def _twelve_turns_due_for_compaction(tenant: Tenant, settings: Any) -> ChatSession:
    settings.ENGRAM_COMPACT_MAX_TURNS = 1000  # record without compacting in this process
    session = new_session(tenant)
    for i in range(1, 13):
        record(tenant, session, f"turn {i}: part KL-{1000 + i} for ${i * 10}", f"noted {i}")
    settings.ENGRAM_COMPACT_MAX_TURNS = 10
    return session


@contextmanager
def _turn_locked(session: ChatSession, turn_number: int) -> Iterator[int]:
    """Hold a row lock on one turn from a connection of the test's own; yields that
    connection's backend pid."""
    locker = psycopg.connect(database_url())
    locker.execute(
        "SELECT 1 FROM chat_turn WHERE session_id = %s AND turn_number = %s FOR UPDATE",
        [session.pk, turn_number],
    )
    try:
        yield locker.info.backend_pid
    finally:
        locker.rollback()  # the worker's statement can finish; its transaction cannot
        locker.close()


@contextmanager
def _worker(queue: str, tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A real worker on `queue`, its log in tmp_path/worker.log; killed if still alive."""
    env = process_env(
        CELERY_BROKER_URL=django_settings.CELERY_BROKER_URL, ENGRAM_COMPACT_MAX_TURNS="10"
    )
    log = (tmp_path / "worker.log").open("wb")
    worker = start_celery_worker(queue=queue, env=env, log=log)
    try:
        yield worker
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
        log.close()


def _enqueue_compaction(session: ChatSession, queue: str) -> None:
    eager = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = False
    try:
        compact_session.apply_async(args=[str(session.pk)], queue=queue)
    finally:
        celery_app.conf.task_always_eager = eager


def _assert_inside_the_write_transaction(worker_pid: int) -> None:
    """The worker is inside the write transaction (summary inserted, uncommitted) and
    holds the session's advisory lock."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT query, xact_start IS NOT NULL FROM pg_stat_activity WHERE pid = %s",
            [worker_pid],
        )
        query, in_transaction = cursor.fetchone()
        assert in_transaction and query.startswith('UPDATE "chat_turn"'), query
        cursor.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = %s",
            [worker_pid],
        )
        assert cursor.fetchone()[0] >= 1


def _compact_again(session: ChatSession) -> dict[str, Any]:
    """Run the task again (as a redelivery would). Until PostgreSQL has noticed the dead
    connection, its advisory lock may still be held: the task then reports "busy"."""
    deadline = time.monotonic() + 20
    result = compact_session.apply(args=[str(session.pk)]).get()
    while result["status"] == "busy" and time.monotonic() < deadline:
        time.sleep(0.2)
        result = compact_session.apply(args=[str(session.pk)]).get()
    return result  # type: ignore[no-any-return]


def _assert_one_summary_and_every_turn(session: ChatSession) -> None:
    summaries = list(ContextSummary.objects.filter(session=session))
    assert [(s.first_turn, s.last_turn) for s in summaries] == [(1, 6)]
    turns = dict(ChatTurn.objects.filter(session=session).values_list("turn_number", "compacted"))
    assert sorted(turns) == list(range(1, 13)), "a turn was lost"
    assert [n for n, c in sorted(turns.items()) if c] == [1, 2, 3, 4, 5, 6]
    assert "KL-1001" in summaries[0].summary + str(summaries[0].milestones)
    assert ChatSession.objects.get(pk=session.pk).status == "compacted"


def test_worker_killed_mid_compaction_leaves_one_summary_and_every_turn(
    tenant: Tenant, settings: Any, tmp_path: Path
) -> None:
    session = _twelve_turns_due_for_compaction(tenant, settings)
    queue = f"window-crash-{uuid.uuid4().hex[:8]}"
    # The span will be turns 1-6: hold turn 6 so that flagging it waits, mid-transaction.
    with _turn_locked(session, 6) as locker_pid, _worker(queue, tmp_path) as worker:
        _enqueue_compaction(session, queue)
        worker_pid = _wait_for_blocked_worker(locker_pid, worker, timeout=45)
        _assert_inside_the_write_transaction(worker_pid)
        worker.send_signal(signal.SIGKILL)
        worker.wait(timeout=10)
    assert worker.returncode == -signal.SIGKILL
    worker_log = (tmp_path / "worker.log").read_text(errors="replace")
    assert "memory_app.compact_session" in worker_log  # registered in the real worker

    # Nothing of the half-done transaction survived.
    assert not ContextSummary.objects.filter(session=session).exists()
    assert not ChatTurn.objects.filter(session=session, compacted=True).exists()

    result = _compact_again(session)
    assert result["status"] == "compacted" and result["spans"] == [(1, 6)]
    again = compact_session.apply(args=[str(session.pk)], kwargs={"force": True}).get()
    assert again["status"] == "nothing_to_compact"
    _assert_one_summary_and_every_turn(session)
