"""How `make run` serves the API: gunicorn's gthread workers, sized to the machine, each with
Django's psycopg connection pool.

Why this shape: a client that opens a new TCP connection per request (plain `requests.post`,
many agent frameworks) must not cost a PostgreSQL connection per request. With the pool, each
worker process holds at most `pool_max_size` connections whatever the clients do, so the web
tier never holds more than `workers * pool_max_size`. The pool is as large as a worker's
thread count, so no thread waits for a connection another thread of the same worker holds.

Read by config/gunicorn_conf.py, config/devstack.py and the benchmarks; no Django import.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from config.settings.env import env_int


@dataclass(frozen=True)
class WebSizing:
    workers: int
    threads: int

    @property
    def pool_max_size(self) -> int:
        return env_int("DATABASE_POOL_MAX_SIZE", self.threads)

    @property
    def max_db_connections(self) -> int:
        """The most PostgreSQL connections the web tier can hold at once."""
        return self.workers * self.pool_max_size


def web_sizing() -> WebSizing:
    """One worker per core (at least 2, at most 8: each worker loads the embedding model),
    4 threads each; ENGRAM_WEB_WORKERS / ENGRAM_WEB_THREADS override."""
    cores = os.cpu_count() or 1
    workers = env_int("ENGRAM_WEB_WORKERS", max(2, min(cores, 8)))
    threads = env_int("ENGRAM_WEB_THREADS", 4)
    return WebSizing(workers=max(1, workers), threads=max(1, threads))


def pool_env(sizing: WebSizing) -> dict[str, str]:
    """Environment that turns the pool on for a web process (settings read it)."""
    return {
        "DATABASE_POOL": "true",
        "DATABASE_POOL_MAX_SIZE": str(sizing.pool_max_size),
    }
