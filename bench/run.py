"""`python -m bench.run --size short|full [--only B1,…]`: run the benchmarks.

Starts throwaway embedded PostgreSQL + Valkey (unless DATABASE_URL / REDIS_URL are set),
migrates the database, runs each selected benchmark with progress on stderr, and records
its section in bench/RESULTS.md and its raw figures in bench/out/.

Everything runs with `config.settings.production`: the runner sets the variables that
production requires (a random secret key, loopback hosts, no HTTPS redirect) in its own
environment, so gunicorn, started by a benchmark, inherits them.

To add a benchmark: write `bench/bN_<what>.py` with `ID`, `TITLE` and
`run(ctx: BenchContext) -> BenchResult` (see bench/b1_ingestion.py), and append its
module name to `BENCHMARKS` below.
"""

from __future__ import annotations

import argparse
import importlib
import os
import secrets
import signal
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import cast

import httpx

from bench.harness import (
    BenchContext,
    Benchmark,
    command_line,
    environment,
    log,
    update_results,
    write_json,
)

# The registry, in run order.
BENCHMARKS: list[str] = [
    "bench.b1_ingestion",
    "bench.b2_memory_search",
    "bench.b3_dashboards",
    "bench.b4_compaction",
    "bench.b5_connections",
    "bench.b17_cockpit",
]


def load_benchmarks(only: set[str] | None) -> list[Benchmark]:
    modules = [cast(Benchmark, importlib.import_module(name)) for name in BENCHMARKS]
    if only:
        unknown = only - {m.ID for m in modules}
        if unknown:
            raise SystemExit(f"unknown benchmark(s): {', '.join(sorted(unknown))}")
        modules = [m for m in modules if m.ID in only]
    return modules


def _production_env(database_url: str, redis_url: str) -> dict[str, str]:
    return {
        "DATABASE_URL": database_url,
        "REDIS_URL": redis_url,
        "DJANGO_SETTINGS_MODULE": "config.settings.production",
        "DJANGO_SECRET_KEY": secrets.token_urlsafe(48),
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
        "DJANGO_SECURE_SSL_REDIRECT": "false",
        "DJANGO_LOG_LEVEL": "WARNING",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        # Benchmarks measure throughput with one key per tenant: the per-key limit off.
        "ENGRAM_RATE_LIMIT": "",
    }


@contextmanager
def django_on_data_services(log: Callable[[str], None]) -> Iterator[dict[str, str]]:
    """Django in this process with production settings on `data_services`, migrated:
    where a benchmark run by itself (not through `bench.run`) measures. Yields the
    environment it set, for a server the benchmark starts."""
    from bench.servers import data_services

    with data_services(log) as (database_url, redis_url):
        server_env = _production_env(database_url, redis_url)
        os.environ.update(server_env)
        import django
        from django.core.management import call_command
        from django.db import connections

        django.setup()
        log("[setup] migrating")
        call_command("migrate", verbosity=0, interactive=False)
        try:
            yield server_env
        finally:
            connections.close_all()


@contextmanager
def api_on_gunicorn(
    log: Callable[[str], None], *, tenant_name: str, timeout: float
) -> Iterator[tuple[httpx.Client, str]]:
    """An authenticated client of a gunicorn with production settings, on a new tenant of
    `django_on_data_services`: where an evaluation talks to Engram through its public API
    as an agent would. Background work runs inline (CELERY_TASK_ALWAYS_EAGER), as a
    deployment without a worker backlog sees it. Yields the client and the run id that
    keeps this run's users apart from an earlier run's on the same database."""
    from bench.servers import Gunicorn

    with django_on_data_services(log) as server_env:
        from sessions_app.models import Tenant
        from sessions_app.services.api_keys import api_key_create

        run_id = time.strftime("%H%M%S")
        tenant = Tenant.objects.create(name=f"{tenant_name}-{run_id}")
        secret = api_key_create(tenant=tenant, name=tenant_name).secret
        env = {**os.environ, **server_env, "CELERY_TASK_ALWAYS_EAGER": "true"}
        server = Gunicorn(env=env, workers=os.cpu_count() or 1, threads=2)
        with (
            server,
            httpx.Client(
                base_url=f"http://127.0.0.1:{server.port}",
                headers={"Authorization": f"Bearer {secret}"},
                timeout=timeout,
            ) as client,
        ):
            yield client, run_id


def raise_on_sigterm(signum: int, frame: FrameType | None) -> None:
    """SIGTERM as SystemExit: it unwinds through every `finally`, so the servers stop."""
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__)
    parser.add_argument("--size", choices=["short", "full"], default="short")
    parser.add_argument("--only", default="", help="Comma-separated ids, e.g. B1,B3.")
    args = parser.parse_args(argv)
    only = {part.strip().upper() for part in args.only.split(",") if part.strip()} or None
    command = command_line("bench.run", argv)
    signal.signal(signal.SIGTERM, raise_on_sigterm)

    from bench.servers import data_services

    started = time.monotonic()
    with data_services(log) as (database_url, redis_url):
        server_env = _production_env(database_url, redis_url)
        os.environ.update(server_env)
        import django
        from django.core.management import call_command
        from django.db import connections

        django.setup()
        benchmarks = load_benchmarks(only)  # after setup: they import models
        log("[setup] migrating")
        call_command("migrate", verbosity=0, interactive=False)
        env = environment(command)
        ctx = BenchContext(
            size=args.size,
            database_url=database_url,
            redis_url=redis_url,
            server_env={**os.environ, **server_env},
            nproc=os.cpu_count() or 1,
            log=log,
        )
        for benchmark in benchmarks:
            log(f"[{benchmark.ID}] {benchmark.TITLE}")
            began = time.monotonic()
            result = benchmark.run(ctx)
            path = write_json(result, env)
            update_results(result, env)
            log(f"[{benchmark.ID}] done in {time.monotonic() - began:.0f}s; raw: {path}")
        connections.close_all()
    log(f"[run] all done in {time.monotonic() - started:.0f}s; see bench/RESULTS.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
