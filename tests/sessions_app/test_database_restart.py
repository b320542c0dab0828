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
import re
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

import psycopg
import pytest
import requests
from django.conf import settings as django_settings

from config.embedded import EmbeddedPostgres, free_port, port_is_open
from tests.live_processes import start_celery_worker, stop_process, wait_until
from tests.sessions_app.restart_helpers import AGENTS, SEED, Agent, Cluster, Web, turn_body

pytestmark = [pytest.mark.slow]

# Turns each agent has acknowledged before the restart, and again after it.
TURNS_BEFORE = 3
TURNS_AFTER = 3
# A bound on the whole scenario; claims that a restart left in flight are taken over
# after STALE_IN_FLIGHT (2 minutes), which is the longest a retried key may wait.
SCENARIO_SECONDS = 300


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
        wait_until(lambda: port_is_open(port) or server.poll() is not None, 120, "gunicorn")
        assert server.poll() is None, log.read_text()[-4000:]
        yield Web(port, log)
    finally:
        stop_process(server, timeout=30)


def _postmaster_started(cluster: Cluster) -> datetime:
    return cluster.query("SELECT pg_postmaster_start_time()")[0][0]


def _agents_across_a_restart(cluster: Cluster, web: Web) -> tuple[list[Agent], float]:
    """Six agents record turns; once each has TURNS_BEFORE, the cluster restarts; they go
    on until each has TURNS_AFTER more (or one is refused). Returns the agents and how
    long the restart took."""
    stop = threading.Event()
    deadline = time.monotonic() + SCENARIO_SECONDS
    agents = [
        Agent(session_id, web.url(session_id), cluster.secret, stop)
        for session_id in cluster.sessions[:AGENTS]
    ]
    threads = [threading.Thread(target=agent.run, args=(deadline,)) for agent in agents]

    def failed() -> bool:
        return any(agent.refused for agent in agents)

    try:
        for thread in threads:
            thread.start()
        wait_until(
            lambda: failed() or all(agent.count() >= TURNS_BEFORE for agent in agents),
            SCENARIO_SECONDS / 2,
            "turns before the restart",
        )
        down = time.monotonic()
        if not failed():
            cluster.restart()
        down = time.monotonic() - down
        marks = [agent.count() for agent in agents]
        wait_until(
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
    return agents, down


def _assert_stored_once(cluster: Cluster, agent: Agent) -> None:
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


def test_restart_under_six_agents_loses_doubles_and_fails_nothing(
    cluster: Cluster, web: Web
) -> None:
    postmaster_started = _postmaster_started(cluster)
    agents, down = _agents_across_a_restart(cluster, web)
    log = web.log.read_text()
    assert _postmaster_started(cluster) > postmaster_started

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
        _assert_stored_once(cluster, agent)


def _turns_in(cluster: Cluster, session_id: str) -> list[tuple[object, ...]]:
    return cluster.query("SELECT count(*) FROM chat_turn WHERE session_id = %s", [session_id])


def _post_through_a_restart_mid_copy(
    cluster: Cluster, url: str, body: dict[str, object], headers: dict[str, str]
) -> requests.Response:
    """Post the turn while turn_step is SHARE-locked; once its COPY waits on the lock,
    restart the cluster. Returns the turn's answer."""
    out: dict[str, requests.Response] = {}

    def post() -> None:
        out["first"] = requests.post(url, json=body, headers=headers, timeout=120)

    client = threading.Thread(target=post)
    locker = psycopg.connect(cluster.postgres.url)
    try:
        locker.execute("LOCK TABLE turn_step IN SHARE MODE")
        client.start()
        wait_until(
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
    return out["first"]


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
    first = _post_through_a_restart_mid_copy(cluster, web.url(session_id), body, headers)
    assert first.status_code == 503, first.text
    assert first.json()["error"]["code"] == "dependency_unavailable"
    assert int(first.headers["Retry-After"]) > 0
    assert _turns_in(cluster, session_id) == [(0,)]

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
    assert _turns_in(cluster, session_id) == [(1,)]
    assert "unhandled error" not in web.log.read_text()


@contextmanager
def _worker(cluster: Cluster, queue: str, env: dict[str, str], log_path: Path) -> Iterator[None]:
    """A real worker on `queue`; on the way out the cluster is started again if it is
    down, then the worker is stopped."""
    worker = start_celery_worker(queue=queue, env=env, log=log_path.open("wb"))
    try:
        yield
    finally:
        if not port_is_open(cluster.postgres.port):
            cluster.postgres.start()
        stop_process(worker, timeout=30)


def _send_expire_sessions(env: dict[str, str], queue: str) -> None:
    """Publish the housekeeping task from a process with the worker's settings (broker,
    eager off)."""
    sent = subprocess.run(
        [sys.executable, "-c",
         "import django; django.setup();"
         "from sessions_app.tasks import expire_sessions;"
         f"expire_sessions.apply_async(queue={queue!r})"],
        cwd=str(django_settings.BASE_DIR), env=env, capture_output=True, check=False,
        timeout=120,
    )  # fmt: skip
    assert sent.returncode == 0, sent.stderr.decode()[-4000:]


def _due_session_expired(cluster: Cluster) -> bool:
    rows = cluster.query("SELECT status FROM chat_session WHERE id = %s", [cluster.due_session])
    return bool(rows[0][0] == "expired")


def test_task_meeting_a_restart_is_retried_with_backoff_until_it_runs(
    cluster: Cluster, tmp_path: Path
) -> None:
    """The worker starts with the database up; the housekeeping task is published while
    it is down, fails to connect, and is retried (not dropped) until it is back."""
    queue = f"restart-{uuid.uuid4().hex[:6]}"
    broker = django_settings.REDIS_URL.rsplit("/", 1)[0] + "/14"
    env = cluster.env(CELERY_TASK_ALWAYS_EAGER="false", CELERY_BROKER_URL=broker)
    log_path = tmp_path / "worker.log"
    with _worker(cluster, queue, env, log_path):
        wait_until(lambda: "ready." in log_path.read_text(), 120, "the worker")
        cluster.postgres.stop()
        _send_expire_sessions(env, queue)
        wait_until(lambda: "Retry in" in log_path.read_text(), 120, "a retry")
        cluster.postgres.start()
        wait_until(
            lambda: _due_session_expired(cluster), 120, "the retried task to expire the due session"
        )
    log = log_path.read_text()
    retries = re.findall(r"expire_sessions\[[^\]]+\] retry: Retry in ([0-9.]+)s: (\w+)", log)
    assert retries, log[-4000:]
    # Each wait at least doubles (1 s, 2 s, …); the jitter only lengthens it.
    for attempt, (delay, error) in enumerate(retries):
        assert error == "OperationalError"
        assert 2**attempt <= float(delay) <= 1.5 * 2**attempt
    assert re.search(r"expire_sessions\[[^\]]+\] succeeded in .*'expired': 1", log), log[-4000:]
