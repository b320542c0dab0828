"""Helpers for the database-restart tests: a PostgreSQL cluster of the module's own,
seeded by a Django process pointed at it; the gunicorn serving it; and agents recording
turns with retries, as the SDK does."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
import requests

from config.embedded import EmbeddedPostgres, port_is_open
from tests.live_processes import process_env
from tests.sessions_app.helpers import SEED_STEPS

AGENTS = 6

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
        return process_env(database=self.postgres.url, **extra)

    def query(self, sql: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
        with psycopg.connect(self.postgres.url, autocommit=True) as conn:
            return conn.execute(sql, params).fetchall()  # type: ignore[arg-type]

    def restart(self) -> None:
        """Fast shutdown (open transactions rolled back, every connection closed), then
        start again on the same port and data."""
        self.postgres.stop()
        assert not port_is_open(self.postgres.port)
        self.postgres.start()


@dataclass
class Web:
    port: int
    log: Path

    def url(self, session_id: str) -> str:
        return f"http://127.0.0.1:{self.port}/api/v1/sessions/{session_id}/turns"


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
