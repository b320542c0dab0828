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


def main(argv: list[str] | None = None) -> int:
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
    args = parser.parse_args(argv)

    from bench.harness import log
    from bench.run import django_on_data_services

    with django_on_data_services(log):
        from django.db import connection
        from django.test import Client
        from django.test.utils import CaptureQueriesContext

        from bench.b1_ingestion import TURN_BODY
        from sessions_app.services.api_keys import api_key_create, tenant_get_or_create
        from sessions_app.services.sessions import session_create

        tenant = tenant_get_or_create(name="profile")
        secret = api_key_create(tenant=tenant, name="profile").secret
        sessions = [
            str(session_create(tenant=tenant, user_id=f"u{i}", agent_id="bench").pk)
            for i in range(8)
        ]
        client = Client(HTTP_AUTHORIZATION=f"Bearer {secret}", HTTP_HOST="127.0.0.1")
        body = json.dumps(TURN_BODY)

        def post_batch(index: int) -> None:
            turns = [
                {
                    "session_id": sessions[(index + n) % len(sessions)],
                    **({"idempotency_key": str(uuid.uuid4())} if args.key else {}),
                    **TURN_BODY,
                }
                for n in range(args.batch)
            ]
            response = client.post(
                "/api/v1/turns/batch", json.dumps({"turns": turns}), content_type="application/json"
            )
            assert response.status_code == 200, response.content
            assert all(r["status"] == 201 for r in response.json()["results"])

        def post(index: int) -> None:
            if args.batch:
                post_batch(index)
                return
            headers = {"HTTP_IDEMPOTENCY_KEY": str(uuid.uuid4())} if args.key else {}
            response = client.post(
                f"/api/v1/sessions/{sessions[index % len(sessions)]}/turns",
                body,
                content_type="application/json",
                **headers,
            )
            assert response.status_code == 201, response.content

        for index in range(2 if args.batch else 20):  # warm-up: caches, connections, imports
            post(index)
        with CaptureQueriesContext(connection) as queries:
            post(0)
        statements = [q["sql"] for q in queries.captured_queries]
        per = f"request of {args.batch} turns" if args.batch else "turn"
        print(f"statements per {per}: {len(statements)}", file=sys.stderr)
        for sql in statements:
            print(f"  {sql[:150]}", file=sys.stderr)

        # CPU time, not wall time: on the shared machine, waits for the CPU and for
        # PostgreSQL would otherwise swamp the profile.
        profiler = cProfile.Profile(time.process_time) if args.profile else None
        cpu, wall = time.process_time(), time.perf_counter()
        if profiler:
            profiler.enable()
        requests = max(1, args.turns // args.batch) if args.batch else args.turns
        for index in range(requests):
            post(index)
        turns = requests * (args.batch or 1)
        if profiler:
            profiler.disable()
            profiler.dump_stats(args.profile)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        print(
            f"{turns} turns: {cpu / turns * 1000:.2f} ms CPU, "
            f"{wall / turns * 1000:.2f} ms wall per turn",
            file=sys.stderr,
        )
        connection.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
