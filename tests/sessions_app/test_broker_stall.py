"""A stalled broker never holds a turn's response, and the work catches up exactly once.

Real parts: the test gets its own Valkey (so pausing it disturbs no other test), a real
Celery worker subprocess consuming from it, and turns posted over HTTP to the live
server. While the Valkey process is stopped (SIGSTOP), every turn POST answers 201 and
the process is still stopped when the answers are in: the after-commit publishes gave up
after ENGRAM_PUBLISH_TIMEOUT_SECONDS and kept their tasks in the outbox. After SIGCONT,
the outbox drain (run by the worker) publishes them, and the worker extracts each
preference once and compacts the span once.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
import requests
from django.conf import settings as django_settings
from django.db import connection

from config.celery_app import app as celery_app
from config.embedded import EmbeddedValkey, free_port
from memory_app.models import Memory, MemorySource, MemoryType
from memory_app.tasks import extract_memories_from_turn
from memory_app.window.models import ContextSummary
from memory_app.window.tasks import compact_session
from sessions_app.models import OutboxMessage
from sessions_app.services import outbox
from sessions_app.services.api_keys import IssuedKey
from sessions_app.services.outbox import _publish

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

FOODS = ["mangoes", "olives", "lentils", "walnuts", "figs", "leeks", "plums"]


def _database_url() -> str:
    s = connection.settings_dict
    auth = quote(s["USER"] or "") + (f":{quote(s['PASSWORD'])}" if s["PASSWORD"] else "")
    return f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT']}/{s['NAME']}"


def facts(session_id: str) -> Any:
    """The memories extracted from the session's turns (not its compaction episodes)."""
    return Memory.objects.filter(session_id=session_id).exclude(type=MemoryType.EPISODIC)


def span_episodes(session_id: str) -> Any:
    """The episodic memories of the session's compacted spans (not its turns' own)."""
    return Memory.objects.filter(
        session_id=session_id, type=MemoryType.EPISODIC, source=MemorySource.SYSTEM_GENERATED
    )


def _process_state(pid: int) -> str:
    """The kernel's one-letter state: T means stopped."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def _wait_until(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    raise AssertionError(f"never happened: {what}")


@pytest.fixture
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    """A Valkey of our own, as the broker of this process and of the worker (its files in
    a directory pytest owns and prunes, not one left in /tmp by every run)."""
    valkey = EmbeddedValkey(tmp_path_factory.mktemp("stall-valkey"), free_port(), False)
    url = valkey.start()
    pid = valkey._server._process.pid  # type: ignore[attr-defined]
    # The raw values: reading `broker_write_url` falls back to `broker_url`, and restoring
    # that fallback as an explicit value would pin later tests to this URL.
    old = (celery_app.conf.get("broker_url"), celery_app.conf.get("broker_write_url"))
    celery_app.conf.broker_url = url
    celery_app.conf.broker_write_url = url
    celery_app.conf.task_always_eager = False
    outbox._broker_down_until = 0.0
    try:
        yield url, pid
    finally:
        os.kill(pid, signal.SIGCONT)
        celery_app.conf.task_always_eager = True
        celery_app.conf.broker_url, celery_app.conf.broker_write_url = old
        outbox._broker_down_until = 0.0
        valkey.stop()


def test_turns_answer_while_valkey_is_paused_and_work_runs_once_after(
    live_server: Any,
    issued_key: IssuedKey,
    broker: tuple[str, int],
    settings: Any,
    tmp_path: Path,
) -> None:
    broker_url, valkey_pid = broker
    settings.ENGRAM_COMPACT_MAX_TURNS = 5
    settings.ENGRAM_COMPACT_KEEP_LAST_TURNS = 2
    settings.ENGRAM_PUBLISH_TIMEOUT_SECONDS = 0.5
    settings.ENGRAM_LLM_URL = ""
    http = requests.Session()
    http.headers["Authorization"] = f"Bearer {issued_key.secret}"
    api = f"{live_server.url}/api/v1"

    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.test",
        "DATABASE_URL": _database_url(),
        "REDIS_URL": django_settings.REDIS_URL,
        "CELERY_BROKER_URL": broker_url,
        "ENGRAM_COMPACT_MAX_TURNS": "5",
        "ENGRAM_COMPACT_KEEP_LAST_TURNS": "2",
        "ENGRAM_LLM_URL": "",
        # The worker publishes what it enqueues (the drain, span extraction) as in
        # production, instead of running it inline.
        "CELERY_TASK_ALWAYS_EAGER": "false",
    }
    queue_name = "celery"
    log_path = tmp_path / "worker.log"
    log = log_path.open("wb")
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool", "solo",
         "-l", "info", "-Q", queue_name, "-n", f"stall-{uuid.uuid4().hex[:6]}@%h",
         "--without-gossip", "--without-mingle", "--without-heartbeat"],
        cwd=str(django_settings.BASE_DIR), env=env, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        session = http.post(f"{api}/sessions", json={"user_id": "u1", "agent_id": "shop"})
        assert session.status_code == 201, session.text
        sid = session.json()["id"]

        def post(i: int) -> requests.Response:
            body = {
                "user_message": f"I love {FOODS[i]}.",
                "assistant_response": f"Noted: {FOODS[i]}.",
                "steps": [{"step_type": "response", "model": "gpt-4o-mini",
                           "input_tokens": 500, "output_tokens": 50}],
            }  # fmt: skip
            return http.post(f"{api}/sessions/{sid}/turns", json=body, timeout=60)

        # Broker up: the first turn's extraction runs in the worker.
        assert post(0).status_code == 201
        _wait_until(lambda: facts(sid).count() == 1, 180, "first extraction")

        os.kill(valkey_pid, signal.SIGSTOP)
        # Signal delivery is asynchronous: wait until the kernel shows it stopped.
        _wait_until(lambda: _process_state(valkey_pid) == "T", 10, "Valkey stopped")
        answers = [post(i) for i in range(1, 7)]
        # Every turn answered while the broker was still paused.
        assert _process_state(valkey_pid) == "T"
        assert [a.status_code for a in answers] == [201] * 6, [a.text for a in answers]
        assert [a.json()["turn"]["turn_number"] for a in answers] == [2, 3, 4, 5, 6, 7]
        kept = list(OutboxMessage.objects.values_list("task_name", flat=True))
        # The turns are marked in Valkey (REDIS_URL, up) to be remembered, their extraction
        # following their memories; the drain that writes them waits in the outbox.
        assert "memory_app.remember_pending_turns" in kept
        assert "memory_app.compact_session" in kept
        assert facts(sid).count() == 1  # nothing ran yet

        os.kill(valkey_pid, signal.SIGCONT)
        # What beat does every 30 s: the drain runs in the worker.
        _publish("sessions_app.outbox_drain", [], {})
        _wait_until(lambda: not OutboxMessage.objects.exists(), 180, "outbox drained")
        _wait_until(
            lambda: (
                facts(sid).count() == 7
                and ContextSummary.objects.filter(session_id=sid).exists()
                # the span's episodic memory comes from a task the compaction enqueues
                and span_episodes(sid).exists()
            ),
            300,
            "extraction and compaction after the broker came back",
        )
    finally:
        os.kill(valkey_pid, signal.SIGCONT)
        worker.terminate()
        try:
            worker.wait(timeout=20)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()
        log.close()

    # Each preference once; each compacted span once, with its one episodic memory.
    def outcome() -> tuple[list[str], list[tuple[int, int]], int]:
        return (
            sorted(facts(sid).values_list("content", flat=True)),
            sorted(
                ContextSummary.objects.filter(session_id=sid).values_list("first_turn", "last_turn")
            ),
            span_episodes(sid).count(),
        )

    memories, spans, episodes = outcome()
    assert memories == sorted(f"I love {food}" for food in FOODS[:7])
    assert spans and spans[0][0] == 1 and len(spans) == len(set(spans)) == episodes, spans
    # A duplicate delivery (a timed-out publish that reached the broker after all) of
    # every task changes nothing: the tasks are idempotent.
    for answer in answers:
        extract_memories_from_turn.apply(args=[answer.json()["turn"]["id"]])
    compact_session.apply(args=[sid])
    assert outcome() == (memories, spans, episodes)
