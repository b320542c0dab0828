"""A gunicorn worker killed with SIGKILL in the middle of a batch.

The test starts a real gunicorn (`config.wsgi`, one sync worker) on its own PostgreSQL
database and posts a 300-turn batch over HTTP. To stop the worker at a known point
without a hook in the code, the test holds a row lock on the batch's idempotency
claims as soon as they are committed: the batch then writes its turns, steps and
session totals and waits on that lock for its last statement, inside its transaction.
The test checks that the worker's database session is exactly there (waiting on a lock,
with writes of its own), kills the worker, releases the lock, and finds every turn either
fully recorded or absent (here: absent), totals equal to what is stored, and a retry
of the same batch recording every turn exactly once."""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.db import connection, connections
from django.utils import timezone

from config.embedded import free_port, port_is_open
from sessions_app.models import ChatTurn, IdempotencyRecord, TurnStep
from sessions_app.services.api_keys import api_key_create, tenant_get_or_create
from sessions_app.services.idempotency import STALE_IN_FLIGHT
from sessions_app.services.sessions import session_create
from tests.live_processes import process_env, wait_until
from tests.sessions_app.helpers import SEED_STEPS
from tests.sessions_app.test_turn_batches import assert_totals_match_turns

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]
TURNS = 300
STEPS = SEED_STEPS * 3  # 9 steps a turn: a batch that takes a moment to write
KEYS = [f"crash-{n}" for n in range(TURNS)]


def _children(pid: int) -> list[int]:
    text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    return [int(child) for child in text.split()]


def _post(port: int, secret: str, body: dict[str, Any], out: dict[str, Any]) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    try:
        conn.request(
            "POST",
            "/api/v1/turns/batch",
            body=json.dumps(body).encode(),
            headers={"Authorization": f"Bearer {secret}", "Content-Type": "application/json"},
        )
        response = conn.getresponse()
        out["status"] = response.status
        out["body"] = json.loads(response.read())
    except (OSError, http.client.HTTPException) as exc:
        out["error"] = exc
    finally:
        conn.close()


def _wait(condition: Callable[[], bool], timeout: float, what: str) -> None:
    wait_until(condition, timeout, what, interval=0.005)


def _start_gunicorn(tmp_path: Path) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    env = process_env(CELERY_BROKER_URL=django_settings.CELERY_BROKER_URL)
    log = (tmp_path / "gunicorn.log").open("wb")
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "config.wsgi:application", "--bind",
         f"127.0.0.1:{port}", "--workers", "1", "--worker-class", "sync", "--timeout", "600"],
        cwd=str(django_settings.BASE_DIR), env=env, stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip
    _wait(lambda: port_is_open(port) or server.poll() is not None, 60, "gunicorn")
    assert server.poll() is None, (tmp_path / "gunicorn.log").read_text()
    return server, port


def _stop_gunicorn(server: subprocess.Popen[bytes]) -> None:
    """Stop the server and its workers. Shutting down is cleanup, not what is tested: a
    worker still booting on a loaded machine can outlast a graceful stop, so it is killed
    after a grace period rather than failing the test."""
    os.killpg(server.pid, signal.SIGTERM)
    try:
        server.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait(timeout=30)


def _batch(sessions: list[str]) -> dict[str, Any]:
    """TURNS turns spread over the sessions, each with its own idempotency key."""
    return {
        "turns": [
            {"session_id": sessions[n % 3], "idempotency_key": KEYS[n],
             "user_message": f"turn {n}", "steps": STEPS}
            for n in range(TURNS)
        ]
    }  # fmt: skip


@contextmanager
def _claims_locked() -> Iterator[None]:
    """Row locks on the batch's claims, from a connection of the test's own."""
    blocker = connections.create_connection("default")
    try:
        with blocker.cursor() as cursor:
            cursor.execute("BEGIN")
            cursor.execute(
                "SELECT id FROM idempotency_record WHERE key = ANY(%s) FOR UPDATE", [KEYS]
            )
        yield
    finally:
        with blocker.cursor() as cursor:
            cursor.execute("ROLLBACK")
        blocker.close()


def _worker_blocked_after_writing() -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = "
            "current_database() AND wait_event_type = 'Lock' AND backend_xid "
            "IS NOT NULL AND pid <> pg_backend_pid() "
            "AND query LIKE '%%UPDATE idempotency_record AS r%%'"
        )
        return bool(cursor.fetchone()[0])


def _no_batch_backend() -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND backend_xid IS NOT NULL AND pid <> pg_backend_pid()"
        )
        return not cursor.fetchone()[0]


def _post_and_kill_the_worker_mid_batch(
    tmp_path: Path, secret: str, body: dict[str, Any]
) -> dict[str, Any]:
    """What the client got (status and body, or the error) when the worker serving its
    batch was killed while waiting on the batch's last statement."""
    server, port = _start_gunicorn(tmp_path)
    out: dict[str, Any] = {}
    try:
        _wait(lambda: bool(_children(server.pid)), 60, "the gunicorn worker")
        [worker] = _children(server.pid)
        client = threading.Thread(target=_post, args=(port, secret, body, out))
        client.start()
        # The claims commit first (their own transaction); lock them at once, so that
        # the batch's transaction blocks on its last statement, which completes them.
        _wait(lambda: IdempotencyRecord.objects.filter(key="crash-0").exists(), 60, "claims")
        with _claims_locked():
            _wait(_worker_blocked_after_writing, 90, "the batch to wait on its last statement")
            os.kill(worker, signal.SIGKILL)
            client.join(timeout=30)
    finally:
        _stop_gunicorn(server)
    return out


def _assert_nothing_recorded(sessions: list[str]) -> None:
    # PostgreSQL rolls the dead connection's transaction back once it notices the EOF.
    _wait(
        lambda: (
            not IdempotencyRecord.objects.filter(status="completed", key__in=KEYS).exists()
            and _no_batch_backend()
        ),
        30,
        "the dead transaction to end",
    )
    assert ChatTurn.objects.filter(session_id__in=sessions).count() == 0
    assert TurnStep.objects.filter(session_id__in=sessions).count() == 0
    for session_id in sessions:
        assert assert_totals_match_turns(session_id).turn_count == 0


def _retry_once_stale(tmp_path: Path, secret: str, body: dict[str, Any]) -> dict[str, Any]:
    """The claims stay in flight until they are stale (as for a crashed single turn);
    then the same batch is posted again to a new server."""
    assert IdempotencyRecord.objects.filter(key__in=KEYS, status="in_flight").count() == TURNS
    IdempotencyRecord.objects.filter(key__in=KEYS).update(
        created_at=timezone.now() - STALE_IN_FLIGHT * 2
    )
    server, port = _start_gunicorn(tmp_path)
    retry: dict[str, Any] = {}
    try:
        _post(port, secret, body, retry)
    finally:
        _stop_gunicorn(server)
    return retry


def test_sigkill_mid_batch_leaves_every_turn_recorded_or_absent(tmp_path: Path) -> None:
    tenant = tenant_get_or_create(name="crash")
    secret = api_key_create(tenant=tenant).secret
    sessions = [str(session_create(tenant=tenant, user_id="u", agent_id="a").pk) for _ in range(3)]
    body = _batch(sessions)

    out = _post_and_kill_the_worker_mid_batch(tmp_path, secret, body)
    assert "status" not in out, out  # the client never got an answer
    assert "error" in out
    _assert_nothing_recorded(sessions)

    # A retry of the same batch records every turn once.
    retry = _retry_once_stale(tmp_path, secret, body)
    assert retry.get("status") == 200, retry
    assert [r["status"] for r in retry["body"]["results"]] == [201] * TURNS
    assert not any(r["replayed"] for r in retry["body"]["results"])
    for session_id in sessions:
        assert assert_totals_match_turns(session_id).turn_count == TURNS // 3
    assert TurnStep.objects.filter(session_id__in=sessions).count() == TURNS * len(STEPS)
