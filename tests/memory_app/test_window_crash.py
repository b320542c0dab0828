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

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import quote

import psycopg
import pytest
from django.conf import settings as django_settings
from django.db import connection

from config.celery_app import app as celery_app
from memory_app.window.models import ContextSummary
from memory_app.window.tasks import compact_session
from sessions_app.models import ChatSession, ChatTurn, Tenant
from tests.memory_app.window_helpers import new_session, record

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def _database_url() -> str:
    """The test database (test_…), as the worker must see it."""
    s = connection.settings_dict
    auth = quote(s["USER"] or "") + (f":{quote(s['PASSWORD'])}" if s["PASSWORD"] else "")
    return f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT']}/{s['NAME']}"


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


def test_worker_killed_mid_compaction_leaves_one_summary_and_every_turn(
    tenant: Tenant, settings: Any, tmp_path: Path
) -> None:
    settings.ENGRAM_COMPACT_MAX_TURNS = 1000  # record without compacting in this process
    session = new_session(tenant)
    for i in range(1, 13):
        record(tenant, session, f"turn {i}: part KL-{1000 + i} for ${i * 10}", f"noted {i}")
    settings.ENGRAM_COMPACT_MAX_TURNS = 10

    queue = f"window-crash-{uuid.uuid4().hex[:8]}"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.test",
        "DATABASE_URL": _database_url(),
        "REDIS_URL": django_settings.REDIS_URL,
        "CELERY_BROKER_URL": django_settings.CELERY_BROKER_URL,
        "ENGRAM_COMPACT_MAX_TURNS": "10",
        "ENGRAM_LLM_URL": "",
    }
    # The span will be turns 1-6: hold turn 6 so that flagging it waits, mid-transaction.
    locker = psycopg.connect(_database_url())
    locker.execute(
        "SELECT 1 FROM chat_turn WHERE session_id = %s AND turn_number = 6 FOR UPDATE",
        [session.pk],
    )
    locker_pid = locker.info.backend_pid
    log = (tmp_path / "worker.log").open("wb")
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool", "solo",
         "-l", "info", "-Q", queue, "-n", f"{queue}@%h",
         "--without-gossip", "--without-mingle", "--without-heartbeat"],
        cwd=str(django_settings.BASE_DIR), env=env, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        eager = celery_app.conf.task_always_eager
        celery_app.conf.task_always_eager = False
        try:
            compact_session.apply_async(args=[str(session.pk)], queue=queue)
        finally:
            celery_app.conf.task_always_eager = eager
        worker_pid = _wait_for_blocked_worker(locker_pid, worker, timeout=45)
        # The worker is inside the write transaction (summary inserted, uncommitted) and
        # holds the session's advisory lock.
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
        worker.send_signal(signal.SIGKILL)
        worker.wait(timeout=10)
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
        locker.rollback()  # the worker's statement can finish; its transaction cannot
        locker.close()
        log.close()
    assert worker.returncode == -signal.SIGKILL
    worker_log = (tmp_path / "worker.log").read_text(errors="replace")
    assert "memory_app.compact_session" in worker_log  # registered in the real worker

    # Nothing of the half-done transaction survived.
    assert not ContextSummary.objects.filter(session=session).exists()
    assert not ChatTurn.objects.filter(session=session, compacted=True).exists()

    # Run again (as a redelivery would). Until PostgreSQL has noticed the dead
    # connection, its advisory lock may still be held: the task then reports "busy".
    deadline = time.monotonic() + 20
    result = compact_session.apply(args=[str(session.pk)]).get()
    while result["status"] == "busy" and time.monotonic() < deadline:
        time.sleep(0.2)
        result = compact_session.apply(args=[str(session.pk)]).get()
    assert result["status"] == "compacted" and result["spans"] == [(1, 6)]
    again = compact_session.apply(args=[str(session.pk)], kwargs={"force": True}).get()
    assert again["status"] == "nothing_to_compact"

    summaries = list(ContextSummary.objects.filter(session=session))
    assert [(s.first_turn, s.last_turn) for s in summaries] == [(1, 6)]
    turns = dict(ChatTurn.objects.filter(session=session).values_list("turn_number", "compacted"))
    assert sorted(turns) == list(range(1, 13)), "a turn was lost"
    assert [n for n, c in sorted(turns.items()) if c] == [1, 2, 3, 4, 5, 6]
    assert "KL-1001" in summaries[0].summary + str(summaries[0].milestones)
    assert ChatSession.objects.get(pk=session.pk).status == "compacted"
