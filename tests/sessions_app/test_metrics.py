"""`GET /metrics`: Prometheus text, protected, and right under several gunicorn workers."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import requests
from django.conf import settings as django_settings
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families
from rest_framework.test import APIClient

from config.embedded import free_port
from sessions_app.models import OutboxMessage
from sessions_app.services.api_keys import IssuedKey
from tests.live_processes import process_env, stop_process
from tests.sessions_app.helpers import create_session, post_turn, turn_body

TURNS_ROUTE = "/api/v1/sessions/<str:session_id>/turns"


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of a scrape, by name and sorted labels."""
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(text: str, name: str, **labels: str) -> float | None:
    return samples(text).get((name, tuple(sorted(labels.items()))))


@pytest.mark.django_db
def test_metrics_count_turns_steps_latency_and_read_backlogs(
    api: APIClient, django_capture_on_commit_callbacks: Any
) -> None:
    before = Client().get("/metrics").content.decode()
    turns_before = value(before, "engram_turns_recorded_total") or 0
    sid = create_session(api)["id"]
    for _ in range(3):
        with django_capture_on_commit_callbacks(execute=True):  # turns count once committed
            assert post_turn(api, sid, turn_body()).status_code == 201  # three steps each
    OutboxMessage.objects.create(task_name="memory_app.extract_memories_from_turn", args=[1])
    response = Client().get("/metrics")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain")
    text = response.content.decode()
    assert value(text, "engram_turns_recorded_total") == turns_before + 3
    assert (value(text, "engram_steps_recorded_total") or 0) >= 9
    count = value(
        text,
        "engram_http_request_duration_seconds_count",
        method="POST",
        route=TURNS_ROUTE,
        status="201",
    )
    assert count is not None and count >= 3
    assert value(text, "engram_outbox_backlog") == 1
    assert value(text, "engram_celery_queue_depth") is not None  # read from the real Valkey
    assert (value(text, "engram_rollup_steps_behind") or 0) >= 9  # nothing filled yet
    assert value(text, "engram_rollup_lag_seconds") is None  # absent before the first fill


@pytest.mark.django_db
def test_metrics_are_for_loopback_staff_or_the_token(settings: Any) -> None:
    assert Client(REMOTE_ADDR="203.0.113.9").get("/metrics").status_code == 403
    assert Client().get("/metrics").status_code == 200  # the test client is 127.0.0.1
    settings.ENGRAM_METRICS_TOKEN = "scrape-secret"
    assert Client().get("/metrics").status_code == 403  # a token, once set, is required
    wrong = Client(REMOTE_ADDR="203.0.113.9", HTTP_AUTHORIZATION="Bearer nope")
    assert wrong.get("/metrics").status_code == 403
    right = Client(REMOTE_ADDR="203.0.113.9", HTTP_AUTHORIZATION="Bearer scrape-secret")
    assert right.get("/metrics").status_code == 200
    assert Client().post("/metrics").status_code == 405


@contextmanager
def _gunicorn_with_three_workers(tmp_path: Path, folder: Path) -> Iterator[str]:
    """gunicorn with the metrics config and three workers writing samples to `folder`;
    yields its base URL once it answers."""
    port = free_port()
    env = process_env(PROMETHEUS_MULTIPROC_DIR=str(folder), ENGRAM_COMPACT_MAX_TURNS="1000")
    log = (tmp_path / "gunicorn.log").open("wb")
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "-c", "config/gunicorn_metrics.py",
         "-w", "3", "--timeout", "300", "-b", f"127.0.0.1:{port}", "config.wsgi:application"],
        cwd=str(django_settings.BASE_DIR), env=env, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                requests.get(f"{base}/metrics", timeout=10)
                break
            except requests.RequestException:  # not listening or workers still booting
                assert server.poll() is None, (tmp_path / "gunicorn.log").read_text()
                assert time.monotonic() < deadline, "gunicorn did not start"
                time.sleep(0.3)
        yield base
    finally:
        stop_process(server, timeout=30)
        log.close()


def _post_twelve_turns(base: str, secret: str) -> None:
    """Twelve turns of two steps in one session, each request on a new connection."""
    headers = {"Authorization": f"Bearer {secret}", "Connection": "close"}
    created = requests.post(
        f"{base}/api/v1/sessions",
        json={"user_id": "u", "agent_id": "a"},
        headers=headers,
        timeout=30,
    )
    sid = created.json()["id"]
    steps = [{"step_type": "response", "model": "gpt-4o-mini", "input_tokens": 10,
              "output_tokens": 5}] * 2  # fmt: skip
    for n in range(12):
        body = {"user_message": f"hello {n}", "assistant_response": "hi", "steps": steps}
        answer = requests.post(
            f"{base}/api/v1/sessions/{sid}/turns", json=body, headers=headers, timeout=30
        )
        assert answer.status_code == 201, answer.text


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_metrics_add_up_every_gunicorn_worker(issued_key: IssuedKey, tmp_path: Path) -> None:
    """Three workers serve the turns (each request on a new connection, so they spread);
    every scrape, whichever worker answers it, counts all of them."""
    folder = tmp_path / "prometheus"
    with _gunicorn_with_three_workers(tmp_path, folder) as base:
        _post_twelve_turns(base, issued_key.secret)
        scrapes = [
            requests.get(f"{base}/metrics", headers={"Connection": "close"}, timeout=30).text
            for _ in range(6)
        ]
    writers = {path.name.rsplit("_", 1)[-1] for path in folder.glob("*.db")}
    assert len(writers) >= 2, writers  # more than one worker served and wrote samples
    for text in scrapes:
        assert value(text, "engram_turns_recorded_total") == 12
        assert value(text, "engram_steps_recorded_total") == 24
        posted = value(
            text,
            "engram_http_request_duration_seconds_count",
            method="POST",
            route=TURNS_ROUTE,
            status="201",
        )
        assert posted == 12
