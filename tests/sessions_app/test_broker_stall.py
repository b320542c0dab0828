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
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import requests

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
from tests.live_processes import process_env, start_celery_worker, stop_process, wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

FOODS = ["mangoes", "olives", "lentils", "walnuts", "figs", "leeks", "plums"]


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
    wait_until(check, timeout, what, interval=0.2)


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


@pytest.fixture
def compaction_settings(settings: Any) -> None:
    """Compact every five turns, keeping two; publishes give up after half a second."""
    settings.ENGRAM_COMPACT_MAX_TURNS = 5
    settings.ENGRAM_COMPACT_KEEP_LAST_TURNS = 2
    settings.ENGRAM_PUBLISH_TIMEOUT_SECONDS = 0.5
    settings.ENGRAM_LLM_URL = ""


@contextmanager
def _worker(broker_url: str, valkey_pid: int, tmp_path: Path) -> Iterator[None]:
    """A real worker on the paused-and-resumed broker, with the same compaction settings;
    on the way out the broker is resumed before the worker is stopped."""
    env = process_env(
        CELERY_BROKER_URL=broker_url,
        ENGRAM_COMPACT_MAX_TURNS="5",
        ENGRAM_COMPACT_KEEP_LAST_TURNS="2",
        # The worker publishes what it enqueues (the drain, span extraction) as in
        # production, instead of running it inline.
        CELERY_TASK_ALWAYS_EAGER="false",
    )
    log = (tmp_path / "worker.log").open("wb")
    worker = start_celery_worker(
        queue="celery", env=env, log=log, name=f"stall-{uuid.uuid4().hex[:6]}"
    )
    try:
        yield
    finally:
        os.kill(valkey_pid, signal.SIGCONT)
        stop_process(worker, timeout=20)
        log.close()


@dataclass
class Turns:
    """Sessions and turns posted over HTTP to the live server."""

    http: requests.Session
    api: str

    @classmethod
    def for_key(cls, live_server: Any, issued_key: IssuedKey) -> Turns:
        http = requests.Session()
        http.headers["Authorization"] = f"Bearer {issued_key.secret}"
        return cls(http, f"{live_server.url}/api/v1")

    def open_session(self) -> str:
        session = self.http.post(f"{self.api}/sessions", json={"user_id": "u1", "agent_id": "shop"})
        assert session.status_code == 201, session.text
        return str(session.json()["id"])

    def post(self, sid: str, i: int) -> requests.Response:
        """Turn `i`: the user loves FOODS[i]."""
        body: dict[str, Any] = {
            "user_message": f"I love {FOODS[i]}.",
            "assistant_response": f"Noted: {FOODS[i]}.",
            "steps": [{"step_type": "response", "model": "gpt-4o-mini",
                       "input_tokens": 500, "output_tokens": 50}],
        }  # fmt: skip
        return self.http.post(f"{self.api}/sessions/{sid}/turns", json=body, timeout=60)


def _post_while_paused(valkey_pid: int, post: Any) -> list[requests.Response]:
    """Stop Valkey, then post turns 1-6."""
    os.kill(valkey_pid, signal.SIGSTOP)
    # Signal delivery is asynchronous: wait until the kernel shows it stopped.
    _wait_until(lambda: _process_state(valkey_pid) == "T", 10, "Valkey stopped")
    return [post(i) for i in range(1, 7)]


def _assert_answered_while_paused(
    valkey_pid: int, answers: list[requests.Response], sid: str
) -> None:
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


def _resume_and_wait_for_the_work(valkey_pid: int, sid: str) -> None:
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


def _outcome(sid: str) -> tuple[list[str], list[tuple[int, int]], int]:
    """The session's facts, its compacted spans, and how many span episodes it has."""
    return (
        sorted(facts(sid).values_list("content", flat=True)),
        sorted(
            ContextSummary.objects.filter(session_id=sid).values_list("first_turn", "last_turn")
        ),
        span_episodes(sid).count(),
    )


def _deliver_every_task_again(answers: list[requests.Response], sid: str) -> None:
    """A duplicate delivery (a timed-out publish that reached the broker after all)."""
    for answer in answers:
        extract_memories_from_turn.apply(args=[answer.json()["turn"]["id"]])
    compact_session.apply(args=[sid])


def test_turns_answer_while_valkey_is_paused_and_work_runs_once_after(
    live_server: Any,
    issued_key: IssuedKey,
    broker: tuple[str, int],
    compaction_settings: None,
    tmp_path: Path,
) -> None:
    broker_url, valkey_pid = broker
    turns = Turns.for_key(live_server, issued_key)
    with _worker(broker_url, valkey_pid, tmp_path):
        sid = turns.open_session()
        post = partial(turns.post, sid)

        # Broker up: the first turn's extraction runs in the worker.
        assert post(0).status_code == 201
        _wait_until(lambda: facts(sid).count() == 1, 180, "first extraction")

        answers = _post_while_paused(valkey_pid, post)
        _assert_answered_while_paused(valkey_pid, answers, sid)
        _resume_and_wait_for_the_work(valkey_pid, sid)

    # Each preference once; each compacted span once, with its one episodic memory.
    memories, spans, episodes = _outcome(sid)
    assert memories == sorted(f"I love {food}" for food in FOODS[:7])
    assert spans and spans[0][0] == 1 and len(spans) == len(set(spans)) == episodes, spans
    # Every task delivered twice changes nothing: the tasks are idempotent.
    _deliver_every_task_again(answers, sid)
    assert _outcome(sid) == (memories, spans, episodes)
