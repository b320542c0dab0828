"""PostgreSQL restarted (fast shutdown) under load: no 500, nothing lost or doubled, and a
task that meets the restart is retried until it runs.

Real parts: a PostgreSQL cluster of this module's own (restarting it disturbs no other
test), migrated and seeded by a Django process pointed at it; a real gunicorn (gthread,
Django's psycopg pool, as `make run` serves) and a real Celery worker on it. Six agents
record turns over HTTP, a new TCP connection per request, each turn with its own
Idempotency-Key, retrying a 503 (and a 409 `idempotency_in_flight`) with the same key
as the SDK does. In the middle, the cluster is stopped with `pg_ctl -m fast` (every
connection closed, the pool's idle ones included) and started again. A second restart
hits a turn held inside the COPY of its steps; a third meets a task in the worker.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
import pytest
import requests
from django.conf import settings as django_settings

from config.embedded import EmbeddedPostgres, free_port, port_is_open
from tests.sessions_app.helpers import SEED_STEPS

pytestmark = [pytest.mark.slow]

AGENTS = 6
# Turns each agent has acknowledged before the restart, and again after it.
TURNS_BEFORE = 3
TURNS_AFTER = 3
# A bound on the whole scenario; claims that a restart left in flight are taken over
# after STALE_IN_FLIGHT (2 minutes), which is the longest a retried key may wait.
SCENARIO_SECONDS = 300

SEED = """
import json
import django
from datetime import timedelta
django.setup()
from django.core.management import call_command
from django.utils import timezone
call_command("migrate", verbosity=0)
from sessions_app.models import ChatSession
from sessions_app.services.api_keys import api_key_create, tenant_get_or_create
from sessions_app.services.sessions import session_create
tenant = tenant_get_or_create(name="restart")
secret = api_key_create(tenant=tenant).secret
sessions = [
    str(session_create(tenant=tenant, user_id=f"u{n}", agent_id=f"agent-{n}").pk)
    for n in range(AGENTS + 1)
]
due = session_create(tenant=tenant, user_id="idle", agent_id="idle")
ChatSession.objects.filter(pk=due.pk).update(expires_at=timezone.now() - timedelta(hours=1))
print(json.dumps({"secret": secret, "sessions": sessions, "due": str(due.pk)}))
"""


@dataclass
class Cluster:
    postgres: EmbeddedPostgres
    secret: str
    sessions: list[str]
    due_session: str

    def env(self, **extra: str) -> dict[str, str]:
        return {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "config.settings.test",
            "DATABASE_URL": self.postgres.url,
            "REDIS_URL": django_settings.REDIS_URL,
            "ENGRAM_LLM_URL": "",
            **extra,
        }

    def query(self, sql: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
        with psycopg.connect(self.postgres.url, autocommit=True) as conn:
            return conn.execute(sql, params).fetchall()  # type: ignore[arg-type]

    def restart(self) -> None:
        """Fast shutdown (open transactions rolled back, every connection closed), then
        start again on the same port and data."""
        self.postgres.stop()
        assert not port_is_open(self.postgres.port)
        self.postgres.start()


def _wait(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=30)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root = tmp_path_factory.mktemp("restart-pg")
    postgres = EmbeddedPostgres(root / "pg", free_port())
    postgres.start()
    try:
        cluster = Cluster(postgres, "", [], "")
        seeded = subprocess.run(
            [sys.executable, "-c", SEED.replace("AGENTS", str(AGENTS))],
            cwd=str(django_settings.BASE_DIR),
            env=cluster.env(),
            capture_output=True,
            check=False,
            timeout=300,
        )
        assert seeded.returncode == 0, seeded.stderr.decode()[-4000:]
        data = json.loads(seeded.stdout.decode().strip().splitlines()[-1])
        cluster.secret, cluster.sessions = data["secret"], data["sessions"]
        cluster.due_session = data["due"]
        yield cluster
    finally:
        postgres.stop()


def turn_body(key: str) -> dict[str, Any]:
    return {"user_message": key, "assistant_response": f"ok {key}", "steps": SEED_STEPS}


@dataclass
class Agent:
    """One agent recording turns in its session until told to stop."""

    session_id: str
    url: str
    secret: str
    stop: threading.Event
    acknowledged: dict[str, str] = field(default_factory=dict)  # key -> turn id
    statuses: list[int] = field(default_factory=list)
    longest: float = 0.0  # seconds from a key's first attempt to its answer
    refused: list[str] = field(default_factory=list)  # what no retry may answer
    lock: threading.Lock = field(default_factory=threading.Lock)

    def count(self) -> int:
        with self.lock:
            return len(self.acknowledged)

    def _post(self, key: str, body: dict[str, Any]) -> requests.Response | None:
        try:
            # No Session: a new TCP connection per request, as many agent frameworks do.
            return requests.post(
                self.url,
                json=body,
                headers={"Authorization": f"Bearer {self.secret}", "Idempotency-Key": key},
                timeout=60,
            )
        except requests.RequestException:
            return None

    def record(self, key: str, deadline: float) -> None:
        body = turn_body(key)
        started = time.monotonic()
        while time.monotonic() < deadline:
            response = self._post(key, body)
            if response is None:
                time.sleep(0.2)
                continue
            with self.lock:
                self.statuses.append(response.status_code)
            if response.status_code in (200, 201):
                with self.lock:
                    self.acknowledged[key] = str(response.json()["turn"]["id"])
                    self.longest = max(self.longest, time.monotonic() - started)
                return
            code = (response.json().get("error") or {}).get("code")
            retryable = response.status_code == 503 or code == "idempotency_in_flight"
            if not retryable or "Retry-After" not in response.headers:
                with self.lock:
                    self.refused.append(f"{response.status_code} {response.text[:300]}")
                return
            # The header says seconds; a shorter pause keeps the test short, the
            # outcome is the same.
            time.sleep(min(1.0, float(response.headers["Retry-After"])))
        with self.lock:
            self.refused.append(f"{key}: no answer before the deadline")

    def run(self, deadline: float) -> None:
        n = 0
        while not self.stop.is_set() and time.monotonic() < deadline and not self.refused:
            self.record(f"{self.session_id[:8]}-{n}", deadline)
            n += 1


@dataclass
class Web:
    port: int
    log: Path

    def url(self, session_id: str) -> str:
        return f"http://127.0.0.1:{self.port}/api/v1/sessions/{session_id}/turns"


@pytest.fixture(scope="module")
def web(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Web]:
    """gunicorn as `make run` serves: gthread workers, Django's psycopg pool."""
    port = free_port()
    log = tmp_path_factory.mktemp("restart-web") / "gunicorn.log"
    env = cluster.env(
        DATABASE_POOL="true",
        # As many idle pooled connections as threads: the restart closes them all.
        DATABASE_POOL_MIN_SIZE=str(AGENTS),
        DATABASE_POOL_MAX_SIZE=str(AGENTS),
        # Tasks go to a queue of their own on the test Valkey; nothing consumes them here.
        CELERY_TASK_ALWAYS_EAGER="false",
        CELERY_BROKER_URL=django_settings.REDIS_URL.rsplit("/", 1)[0] + "/13",
    )
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "config.wsgi:application", "--bind",
         f"127.0.0.1:{port}", "--workers", "1", "--worker-class", "gthread",
         "--threads", str(AGENTS), "--timeout", "120"],
        cwd=str(django_settings.BASE_DIR), env=env,
        stdout=log.open("wb"), stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        _wait(lambda: port_is_open(port) or server.poll() is not None, 120, "gunicorn")
        assert server.poll() is None, log.read_text()[-4000:]
        yield Web(port, log)
    finally:
        _stop(server)


def test_restart_under_six_agents_loses_doubles_and_fails_nothing(
    cluster: Cluster, web: Web
) -> None:
    stop = threading.Event()
    deadline = time.monotonic() + SCENARIO_SECONDS
    agents = [
        Agent(session_id, web.url(session_id), cluster.secret, stop)
        for session_id in cluster.sessions[:AGENTS]
    ]
    threads = [threading.Thread(target=agent.run, args=(deadline,)) for agent in agents]

    def failed() -> bool:
        return any(agent.refused for agent in agents)

    postmaster_started = cluster.query("SELECT pg_postmaster_start_time()")[0][0]
    try:
        for thread in threads:
            thread.start()
        _wait(
            lambda: failed() or all(agent.count() >= TURNS_BEFORE for agent in agents),
            SCENARIO_SECONDS / 2,
            "turns before the restart",
        )
        down = time.monotonic()
        if not failed():
            cluster.restart()
        down = time.monotonic() - down
        marks = [agent.count() for agent in agents]
        _wait(
            lambda: (
                failed()
                or all(a.count() >= m + TURNS_AFTER for a, m in zip(agents, marks, strict=True))
            ),
            SCENARIO_SECONDS,
            "turns after the restart",
        )
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=SCENARIO_SECONDS)
    log = web.log.read_text()
    assert cluster.query("SELECT pg_postmaster_start_time()")[0][0] > postmaster_started

    statuses = [status for agent in agents for status in agent.statuses]
    print(  # the run's shape, for `pytest -s`
        f"acknowledged {sum(a.count() for a in agents)} turns;"
        f" answers {dict(sorted(Counter(statuses).items()))};"
        f" longest wait for one turn {max(a.longest for a in agents):.1f} s;"
        f" restart (stop, start) {down:.1f} s"
    )
    assert [agent.refused for agent in agents] == [[]] * AGENTS, log[-4000:]
    assert not [status for status in statuses if status >= 500 and status != 503], log[-4000:]
    assert "unhandled error" not in log

    for agent in agents:
        rows = cluster.query(
            "SELECT id::text, user_message, turn_number FROM chat_turn"
            " WHERE session_id = %s ORDER BY turn_number",
            [agent.session_id],
        )
        # Every acknowledged turn is stored once, under the id it was answered with;
        # nothing unacknowledged was stored (every key was retried until answered).
        stored = {message: turn_id for turn_id, message, _ in rows}
        assert len(rows) == len(stored) == len(agent.acknowledged)
        assert stored == agent.acknowledged
        assert [number for *_, number in rows] == list(range(1, len(rows) + 1))
        [(turn_count, last_number)] = cluster.query(
            "SELECT turn_count, last_turn_number FROM chat_session WHERE id = %s",
            [agent.session_id],
        )
        assert turn_count == last_number == len(rows)


def test_restart_during_a_turns_steps_copy_answers_503_and_its_retry_records_it_once(
    cluster: Cluster, web: Web
) -> None:
    """The restart hits a turn inside the COPY of its steps (held there by a SHARE lock on
    turn_step: reads pass, writes wait). That turn answers 503; its retry with the same
    Idempotency-Key records it once: the claim the failed attempt had taken was released
    on a new pooled connection once the database was back."""
    session_id = cluster.sessions[AGENTS]
    key = "copy-restart"
    body = turn_body(key)
    headers = {"Authorization": f"Bearer {cluster.secret}", "Idempotency-Key": key}
    out: dict[str, requests.Response] = {}

    def post() -> None:
        out["first"] = requests.post(web.url(session_id), json=body, headers=headers, timeout=120)

    client = threading.Thread(target=post)
    locker = psycopg.connect(cluster.postgres.url)
    try:
        locker.execute("LOCK TABLE turn_step IN SHARE MODE")
        client.start()
        _wait(
            lambda: bool(
                cluster.query(
                    "SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                    " AND query ILIKE 'COPY%%turn_step%%'"
                )
            ),
            60,
            "the turn's COPY waiting on the lock",
        )
        cluster.restart()
    finally:
        client.join(timeout=120)
        locker.close()
    first = out["first"]
    assert first.status_code == 503, first.text
    assert first.json()["error"]["code"] == "dependency_unavailable"
    assert int(first.headers["Retry-After"]) > 0
    assert cluster.query("SELECT count(*) FROM chat_turn WHERE session_id = %s", [session_id]) == [
        (0,)
    ]

    agent = Agent(session_id, web.url(session_id), cluster.secret, threading.Event())
    agent.record(key, time.monotonic() + SCENARIO_SECONDS)
    assert agent.refused == []
    rows = cluster.query(
        "SELECT id::text, turn_number FROM chat_turn WHERE session_id = %s", [session_id]
    )
    assert rows == [(agent.acknowledged[key], 1)]
    # Once more with the key: the stored answer, nothing new written.
    again = requests.post(web.url(session_id), json=body, headers=headers, timeout=60)
    assert again.status_code == 201 and str(again.json()["turn"]["id"]) == rows[0][0]
    assert cluster.query("SELECT count(*) FROM chat_turn WHERE session_id = %s", [session_id]) == [
        (1,)
    ]
    assert "unhandled error" not in web.log.read_text()


def test_task_meeting_a_restart_is_retried_with_backoff_until_it_runs(
    cluster: Cluster, tmp_path: Path
) -> None:
    """The worker starts with the database up; the housekeeping task is published while
    it is down, fails to connect, and is retried (not dropped) until it is back."""
    queue = f"restart-{uuid.uuid4().hex[:6]}"
    broker = django_settings.REDIS_URL.rsplit("/", 1)[0] + "/14"
    env = cluster.env(CELERY_TASK_ALWAYS_EAGER="false", CELERY_BROKER_URL=broker)
    log_path = tmp_path / "worker.log"
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool", "solo",
         "-l", "info", "-Q", queue, "-n", f"{queue}@%h",
         "--without-gossip", "--without-mingle", "--without-heartbeat"],
        cwd=str(django_settings.BASE_DIR), env=env,
        stdout=log_path.open("wb"), stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        _wait(lambda: "ready." in log_path.read_text(), 120, "the worker")
        cluster.postgres.stop()
        # Sent by a process with the worker's settings (broker, eager off).
        sent = subprocess.run(
            [sys.executable, "-c",
             "import django; django.setup();"
             "from sessions_app.tasks import expire_sessions;"
             f"expire_sessions.apply_async(queue={queue!r})"],
            cwd=str(django_settings.BASE_DIR), env=env, capture_output=True, check=False,
            timeout=120,
        )  # fmt: skip
        assert sent.returncode == 0, sent.stderr.decode()[-4000:]
        _wait(lambda: "Retry in" in log_path.read_text(), 120, "a retry")
        cluster.postgres.start()

        def expired() -> bool:
            rows = cluster.query(
                "SELECT status FROM chat_session WHERE id = %s", [cluster.due_session]
            )
            return rows[0][0] == "expired"

        _wait(expired, 120, "the retried task to expire the due session")
    finally:
        if not port_is_open(cluster.postgres.port):
            cluster.postgres.start()
        _stop(worker)
    log = log_path.read_text()
    retries = re.findall(r"expire_sessions\[[^\]]+\] retry: Retry in ([0-9.]+)s: (\w+)", log)
    assert retries, log[-4000:]
    # Each wait at least doubles (1 s, 2 s, …); the jitter only lengthens it.
    for attempt, (delay, error) in enumerate(retries):
        assert error == "OperationalError"
        assert 2**attempt <= float(delay) <= 1.5 * 2**attempt
    assert re.search(r"expire_sessions\[[^\]]+\] succeeded in .*'expired': 1", log), log[-4000:]
