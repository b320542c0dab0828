"""`python -m bench.b1_versus OTHER_CHECKOUT [--rounds 8] [--seconds 6] [--key]`: B1's
single-turn phase against this checkout's code and another's, in the same minutes.

A change to the turn path is judged by server CPU per turn, which moves by a couple of
milliseconds from one B1 run to the next on the shared machine. Here two gunicorns (this
checkout and OTHER_CHECKOUT, e.g. a `git archive` of the base commit; same migrations)
serve one throwaway PostgreSQL + Valkey, and B1's `http` load (8 client threads, each on
its own 4 sessions, B1's turn body) alternates between them, round by round, the order
flipped every round. Printed per round and as medians (the first two rounds warm up):
the workers' CPU per turn of each side.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bench.servers import Gunicorn


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(argv)

    from bench.harness import log
    from bench.run import django_on_data_services
    from bench.servers import ROOT, Gunicorn

    with django_on_data_services(log) as env:
        roots = {"this": ROOT, "other": args.other.resolve()}
        auth, sessions = _auth_and_sessions(list(roots))
        servers = {
            side: Gunicorn(env=env, workers=2, threads=4, cwd=root) for side, root in roots.items()
        }
        with servers["this"], servers["other"]:
            cpu = _alternate(args, servers, sessions, auth)
        _print_medians(roots, cpu)
    return 0


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.b1_versus")
    parser.add_argument("other", type=Path, help="the other checkout's root")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=6)
    parser.add_argument("--key", action="store_true", help="send an Idempotency-Key")
    return parser.parse_args(argv)


def _auth_and_sessions(sides: list[str]) -> tuple[dict[str, str], dict[str, list[list[str]]]]:
    """The Authorization header of a new key, and per side 8 threads' 4 sessions each."""
    from django.db import connection

    from bench.b1_ingestion import _sessions
    from sessions_app.services.api_keys import api_key_create, tenant_get_or_create

    tenant = tenant_get_or_create(name="b1-versus")
    auth = {"Authorization": f"Bearer {api_key_create(tenant=tenant, name='v').secret}"}
    sessions = {side: [_sessions(tenant, 4, f"{side}-{t}") for t in range(8)] for side in sides}
    connection.close()
    return auth, sessions


def _alternate(
    args: argparse.Namespace,
    servers: dict[str, Gunicorn],
    sessions: dict[str, list[list[str]]],
    auth: dict[str, str],
) -> dict[str, list[float]]:
    """`args.rounds` rounds of both sides, the order flipped every round: per side, the
    server CPU ms per turn of each round."""
    sides = list(servers)
    cpu: dict[str, list[float]] = {side: [] for side in sides}
    for round_number in range(args.rounds):
        order = sides if round_number % 2 == 0 else list(reversed(sides))
        for side in order:
            cpu[side].append(
                _measure_side(args, side, servers[side], sessions[side], auth, round_number)
            )
    return cpu


def _measure_side(
    args: argparse.Namespace,
    side: str,
    server: Gunicorn,
    sessions: list[list[str]],
    auth: dict[str, str],
    round_number: int,
) -> float:
    """One round of B1's `http` load on one side: its workers' CPU ms per turn."""
    from bench.b1_ingestion import TURN_BODY, ServerCpu
    from bench.harness import log
    from bench.loadgen import HttpPoster, Operation, run_load

    body = json.dumps(TURN_BODY).encode()
    posters: list[Operation] = [
        HttpPoster(
            port=server.port,
            paths=[f"/api/v1/sessions/{sid}/turns" for sid in ids],
            body=body,
            headers=auth,
            key_prefix=f"v-{side}-{round_number}-{i}-{time.time()}" if args.key else None,
        )
        for i, ids in enumerate(sessions)
    ]
    at_start = ServerCpu(server.worker_pids())
    result = run_load(
        name=side,
        operations=posters,
        max_requests=3000,
        max_seconds=args.seconds,
        warmup_per_thread=5 if round_number < 2 else 0,
        at_start=at_start,
    )
    per_turn = at_start.since() / max(result.requests, 1) * 1000
    log(
        f"[versus] round {round_number + 1}/{args.rounds} {side:>5}: "
        f"{result.requests} turns, {result.throughput:.1f}/s, "
        f"server CPU {per_turn:.2f} ms/turn, errors {result.errors}"
    )
    return per_turn


def _print_medians(roots: dict[str, Path], cpu: dict[str, list[float]]) -> None:
    """Per side, the median over the rounds after the first two (all, if that is all)."""
    for side, root in roots.items():
        measured = cpu[side][2:] or cpu[side]
        print(
            f"{side} ({root}): server CPU ms/turn median {statistics.median(measured):.2f}"
            f" over rounds {', '.join(f'{x:.2f}' for x in measured)}",
            file=sys.stderr,
        )


if __name__ == "__main__":
    sys.exit(main())
