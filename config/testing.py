"""Throwaway PostgreSQL + Valkey for a test run.

Called by `config.settings.test` before the database settings are read, because
pytest-django loads settings before any conftest. The process that starts the servers
stops them and deletes their data at exit; processes it spawns (xdist workers, Celery
workers, gunicorn in benchmarks) inherit `DATABASE_URL` / `REDIS_URL` and reuse them.
With those variables already set, nothing is started.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

from config.embedded import EmbeddedPostgres, EmbeddedValkey, free_port


def ensure_test_services() -> None:
    if os.environ.get("DATABASE_URL") and os.environ.get("REDIS_URL"):
        return
    root = Path(tempfile.mkdtemp(prefix="engram-test-"))
    owner = os.getpid()

    def cleanup() -> None:
        if os.getpid() != owner:  # a forked child must not stop its parent's servers
            return
        for server in started:
            server.stop()
        shutil.rmtree(root, ignore_errors=True)

    started: list[EmbeddedPostgres | EmbeddedValkey] = []
    atexit.register(cleanup)
    if not os.environ.get("DATABASE_URL"):
        postgres = EmbeddedPostgres(root / "pg", free_port())
        os.environ["DATABASE_URL"] = postgres.start()
        started.append(postgres)
    if not os.environ.get("REDIS_URL"):
        valkey = EmbeddedValkey(root / "valkey", free_port(), persist=False)
        os.environ["REDIS_URL"] = valkey.start()
        started.append(valkey)
