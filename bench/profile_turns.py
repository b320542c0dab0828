"""`python -m bench.profile_turns [--turns 300] [--key] [--batch N] [--profile out.prof]`:
where a B1 turn's time goes, without HTTP (with `--batch`, through the batch route).

Starts throwaway PostgreSQL + Valkey (like `bench.run`), migrates, then posts B1's turn
body through Django's test client with `config.settings.production` (DEBUG off, Celery
publishing to Valkey, `turn_recorded` receivers running after commit as in gunicorn).
Prints queries per turn (with the statements of one turn) and CPU ms per turn; with
`--profile`, writes a cProfile file (process CPU time) of the measured turns
(`python -m pstats` reads it).
"""

from __future__ import annotations

import argparse
import cProfile
import json
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any


@contextmanager
def cpu_profile(path: str) -> Iterator[None]:
    """A cProfile of the block in process CPU time, written to `path` when the block
    ends; no profile when `path` is empty. CPU time, not wall time: on the shared machine,
    waits for the CPU and for PostgreSQL would otherwise swamp the profile."""
    if not path:
        yield
        return
    profiler = cProfile.Profile(time.process_time)
    profiler.enable()
    yield
    profiler.disable()
    profiler.dump_stats(path)


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.profile_turns")
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--key", action="store_true", help="send an Idempotency-Key")
    parser.add_argument("--profile", default="", help="write cProfile stats here")
    parser.add_argument(
        "--batch",
        type=int,
        default=0,
        help="post the turns through POST /api/v1/turns/batch, this many per request",
    )
    return parser.parse_args(argv)


@dataclass
class TurnPoster:
    """Posts B1's turn body (`turn`; `body` as JSON) through Django's test client, over
    `sessions` in turn: one turn a request, or `batch` turns a request through the batch
    route."""

    client: Any
    sessions: list[str]
    turn: dict[str, Any]
    body: str
    batch: int
    key: bool

    def post(self, index: int) -> None:
        if self.batch:
            self.post_batch(index)
            return
        headers = {"HTTP_IDEMPOTENCY_KEY": str(uuid.uuid4())} if self.key else {}
        response = self.client.post(
            f"/api/v1/sessions/{self.sessions[index % len(self.sessions)]}/turns",
            self.body,
            content_type="application/json",
            **headers,
        )
        assert response.status_code == 201, response.content

    def post_batch(self, index: int) -> None:
        turns = [
            {
                "session_id": self.sessions[(index + n) % len(self.sessions)],
                **({"idempotency_key": str(uuid.uuid4())} if self.key else {}),
                **self.turn,
            }
            for n in range(self.batch)
        ]
        response = self.client.post(
            "/api/v1/turns/batch", json.dumps({"turns": turns}), content_type="application/json"
        )
        assert response.status_code == 200, response.content
        assert all(r["status"] == 201 for r in response.json()["results"])


def _poster(batch: int, key: bool) -> TurnPoster:
    """A tenant with a key and eight sessions, and a poster into them."""
    from django.test import Client

    from bench.b1_ingestion import TURN_BODY
    from sessions_app.services.api_keys import api_key_create, tenant_get_or_create
    from sessions_app.services.sessions import session_create

    tenant = tenant_get_or_create(name="profile")
    secret = api_key_create(tenant=tenant, name="profile").secret
    sessions = [
        str(session_create(tenant=tenant, user_id=f"u{i}", agent_id="bench").pk) for i in range(8)
    ]
    client = Client(HTTP_AUTHORIZATION=f"Bearer {secret}", HTTP_HOST="127.0.0.1")
    return TurnPoster(
        client=client,
        sessions=sessions,
        turn=TURN_BODY,
        body=json.dumps(TURN_BODY),
        batch=batch,
        key=key,
    )


def _print_statements(poster: TurnPoster) -> None:
    """The SQL statements of one request, on stderr."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as queries:
        poster.post(0)
    statements = [q["sql"] for q in queries.captured_queries]
    per = f"request of {poster.batch} turns" if poster.batch else "turn"
    print(f"statements per {per}: {len(statements)}", file=sys.stderr)
    for sql in statements:
        print(f"  {sql[:150]}", file=sys.stderr)


def _measure(poster: TurnPoster, turns: int, profile: str) -> None:
    """About `turns` turns posted; CPU and wall ms per turn printed on stderr."""
    cpu, wall = time.process_time(), time.perf_counter()
    with cpu_profile(profile):
        requests = max(1, turns // poster.batch) if poster.batch else turns
        for index in range(requests):
            poster.post(index)
        posted = requests * (poster.batch or 1)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    print(
        f"{posted} turns: {cpu / posted * 1000:.2f} ms CPU, "
        f"{wall / posted * 1000:.2f} ms wall per turn",
        file=sys.stderr,
    )


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)

    from bench.harness import log
    from bench.run import django_on_data_services

    with django_on_data_services(log):
        from django.db import connection

        poster = _poster(args.batch, args.key)
        for index in range(2 if args.batch else 20):  # warm-up: caches, connections, imports
            poster.post(index)
        _print_statements(poster)
        _measure(poster, args.turns, args.profile)
        connection.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
