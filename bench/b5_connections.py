"""B5 connections: `make run`'s server under clients that open a new connection per request.

- Subject: gunicorn exactly as `make run` starts it (config/gunicorn_conf.py: gthread
  workers sized to the machine, Django's psycopg pool per worker) with
  `config.settings.production`.
- Load: 20,000 requests from 8 threads, each request on a fresh TCP connection (no
  keep-alive: what plain `requests.post` and many agent frameworks do), over mixed routes:
  session list/detail, budget check, turn writes, usage, health, an unknown route.
- Measured: status counts (5xx must be 0) and the most PostgreSQL client connections seen
  in pg_stat_activity, sampled every 100 ms, against the bound the pool sets:
  workers x pool size. (Without that bound, a server that keeps one idle connection per
  client connection runs out after ~1,500 requests.)
"""

from __future__ import annotations

import http.client
import itertools
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg

from bench.harness import OUT_DIR, BenchContext, BenchResult
from config.embedded import free_port, port_is_open
from config.serving import WebSizing, pool_env, web_sizing

ID = "B5"
TITLE = "Connections: 20,000 requests, a new connection each, against make run's gunicorn"
REQUESTS = 20_000
THREADS = 8
ROOT = Path(__file__).resolve().parents[1]
TURN = {
    "user_message": "Which of these has the longest battery life?",
    "assistant_response": "The ThinkPad X1 Carbon, at about 15 hours.",
    "steps": [{"step_type": "response", "model": "gpt-4o-mini", "input_tokens": 900,
               "output_tokens": 120, "duration_ms": 300}],
}  # fmt: skip


def _fixtures() -> tuple[str, list[str]]:
    from django.db import connections

    from sessions_app.services.api_keys import api_key_create, tenant_get_or_create
    from sessions_app.services.sessions import session_create

    tenant = tenant_get_or_create(name="bench-b5")
    secret = api_key_create(tenant=tenant, name="b5").secret
    sessions = [
        str(session_create(tenant=tenant, user_id=f"u{i}", agent_id="b5").id) for i in range(16)
    ]
    connections.close_all()  # the bench process holds no connection during the load
    return secret, sessions


def _requests(sessions: list[str]) -> itertools.cycle[tuple[str, str, str | None]]:
    """A fixed mix: mostly reads, one write in five, plus health and an unknown route."""
    mix: list[tuple[str, str, str | None]] = []
    for sid in sessions:
        mix += [
            ("GET", "/api/v1/sessions?page_size=5", None),
            ("GET", f"/api/v1/sessions/{sid}", None),
            ("POST", f"/api/v1/sessions/{sid}/budget/check", '{"estimated_tokens": 100}'),
            ("POST", f"/api/v1/sessions/{sid}/turns", json.dumps(TURN)),
            ("GET", "/api/v1/usage?group_by=model", None),
            ("GET", f"/api/v1/sessions/{sid}/turns?page_size=3", None),
            ("GET", "/healthz", None),
            ("GET", "/api/v1/no-such-route", None),
        ]
    return itertools.cycle(mix)


class _Sampler(threading.Thread):
    """Max client connections to the database, sampled from pg_stat_activity."""

    def __init__(self, database_url: str) -> None:
        super().__init__(daemon=True)
        self.database_url = database_url
        self.stop = threading.Event()
        self.max_seen = 0
        self.samples = 0

    def run(self) -> None:
        with psycopg.connect(self.database_url, autocommit=True) as conn:
            while not self.stop.is_set():
                row = conn.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                    " AND backend_type = 'client backend' AND pid <> pg_backend_pid()"
                ).fetchone()
                self.max_seen = max(self.max_seen, int(row[0]) if row else 0)
                self.samples += 1
                self.stop.wait(0.1)


def _start_server(ctx: BenchContext, port: int, log_path: Path) -> subprocess.Popen[bytes]:
    env = {
        **ctx.server_env,
        **pool_env(web_sizing()),
        "ENGRAM_HOST": "127.0.0.1",
        "ENGRAM_PORT": str(port),
        "ENGRAM_WEB_LOG_LEVEL": "warning",
    }
    argv = [sys.executable, "-m", "gunicorn", "-c", str(ROOT / "config" / "gunicorn_conf.py"),
            "config.wsgi:application"]  # fmt: skip
    log_file = open(log_path, "wb")  # noqa: SIM115  closed with the process
    process = subprocess.Popen(
        argv, cwd=ROOT, env=env, stdout=log_file, stderr=log_file, start_new_session=True
    )
    deadline = time.monotonic() + 90
    while not port_is_open(port):
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"gunicorn did not start; see {log_path}")
        time.sleep(0.2)
    return process


def _load(
    port: int, headers: dict[str, str], work: Iterator[tuple[str, str, str | None]]
) -> tuple[Counter[int], Counter[str]]:
    """REQUESTS requests from `work` by THREADS threads, each request on a new
    connection: (status counts, transport error counts by exception name)."""
    statuses: Counter[int] = Counter()
    errors: Counter[str] = Counter()
    lock = threading.Lock()
    remaining = [REQUESTS]

    def client() -> None:
        while True:
            with lock:
                if remaining[0] <= 0:
                    return
                remaining[0] -= 1
                method, path, body = next(work)
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            try:
                conn.request(method, path, body=body, headers=headers)
                status = conn.getresponse().status
                with lock:
                    statuses[status] += 1
            except OSError as exc:
                with lock:
                    errors[type(exc).__name__] += 1
            finally:
                conn.close()

    threads = [threading.Thread(target=client) for _ in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return statuses, errors


def _data(
    sizing: WebSizing,
    statuses: Counter[int],
    errors: Counter[str],
    elapsed: float,
    sampler: _Sampler,
) -> dict[str, Any]:
    return {
        "requests": REQUESTS,
        "threads": THREADS,
        "seconds": round(elapsed, 1),
        "requests_per_second": round(REQUESTS / elapsed, 1),
        "statuses": {str(k): v for k, v in sorted(statuses.items())},
        "client_errors": dict(errors),
        "server_errors_5xx": sum(n for status, n in statuses.items() if status >= 500),
        "workers": sizing.workers,
        "threads_per_worker": sizing.threads,
        "pool_max_size_per_worker": sizing.pool_max_size,
        "pool_bound": sizing.max_db_connections,
        "max_pg_connections_seen": sampler.max_seen,
        "samples": sampler.samples,
    }


def _markdown(data: dict[str, Any]) -> str:
    status_text = ", ".join(f"{k}: {v}" for k, v in data["statuses"].items())
    return f"""| requests | client threads | new connection per request | 5xx | transport errors | max PostgreSQL connections seen | bound: workers x pool | req/s |
|---:|---:|:---:|---:|---:|---:|---:|---:|
| {REQUESTS} | {THREADS} | yes | {data["server_errors_5xx"]} | {sum(data["client_errors"].values())} | {data["max_pg_connections_seen"]} | {data["workers"]} x {data["pool_max_size_per_worker"]} = {data["pool_bound"]} | {data["requests_per_second"]} |

Statuses: {status_text} (the 404s are the deliberate unknown route). PostgreSQL client
connections sampled every 100 ms ({data["samples"]} samples) from pg_stat_activity; the
sampler's own connection is excluded. Server: `gunicorn -c config/gunicorn_conf.py
config.wsgi:application` ({data["workers"]} gthread workers x {data["threads_per_worker"]} threads,
Django psycopg pool max {data["pool_max_size_per_worker"]} per worker, `config.settings.production`).
Target: 0 5xx and max connections <= workers x pool.
"""  # noqa: E501


def run(ctx: BenchContext) -> BenchResult:
    sizing = web_sizing()
    secret, sessions = _fixtures()
    port = free_port()
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    log_path = OUT_DIR / "b5-gunicorn.log"
    server = _start_server(ctx, port, log_path)
    work = _requests(sessions)
    sampler = _Sampler(ctx.database_url)
    headers = {"Authorization": f"Bearer {secret}", "Content-Type": "application/json",
               "Connection": "close"}  # fmt: skip
    try:
        sampler.start()
        started = time.monotonic()
        statuses, errors = _load(port, headers, work)
        elapsed = time.monotonic() - started
    finally:
        sampler.stop.set()
        sampler.join(timeout=5)
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
    data = _data(sizing, statuses, errors, elapsed, sampler)
    return BenchResult(id=ID, title=TITLE, markdown=_markdown(data), data=data)
