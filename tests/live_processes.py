"""The app's own processes started by a test (a Celery worker, gunicorn) on the test's
database: their environment, starting and stopping them, and waiting on what they do."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from typing import IO
from urllib.parse import quote

from django.conf import settings as django_settings
from django.db import connection


def database_url() -> str:
    """The test database (test_…) as a URL: for a child process, or for a second
    connection of the test's own (psycopg), on the same database."""
    s = connection.settings_dict
    auth = quote(s["USER"] or "") + (f":{quote(s['PASSWORD'])}" if s["PASSWORD"] else "")
    return f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT']}/{s['NAME']}"


def process_env(*, database: str | None = None, **extra: str) -> dict[str, str]:
    """The environment of a child process: test settings, the test database (or
    `database`), the test Valkey, no LLM, and `extra` on top."""
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.test",
        "DATABASE_URL": database or database_url(),
        "REDIS_URL": django_settings.REDIS_URL,
        "ENGRAM_LLM_URL": "",
        **extra,
    }


def start_celery_worker(
    *, queue: str, env: dict[str, str], log: IO[bytes], name: str | None = None
) -> subprocess.Popen[bytes]:
    """A real worker (solo pool) consuming `queue`, its output in `log`."""
    return subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool", "solo",
         "-l", "info", "-Q", queue, "-n", f"{name or queue}@%h",
         "--without-gossip", "--without-mingle", "--without-heartbeat"],
        cwd=str(django_settings.BASE_DIR), env=env, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip


def stop_process(process: subprocess.Popen[bytes], timeout: float) -> None:
    """SIGTERM, and SIGKILL if it has not exited within `timeout` seconds."""
    process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=timeout)


def wait_until(
    check: Callable[[], bool], timeout: float, what: str, *, interval: float = 0.1
) -> None:
    """Poll `check` every `interval` seconds until it holds; fail after `timeout`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {what}")
