"""`python -m bench.profile_budget_turns [--turns 200] [--rounds 3] [--profile out]`: what a
turn under period budgets, and one that also reserves the next call (`reserve_next`),
cost over B1's plain turn, without HTTP.

Starts throwaway PostgreSQL + Valkey (like `bench.run`), migrates, sets up the tenants,
five budgets and sessions of `bench.budget_check`, and posts B1's turn body through
Django's test client (production settings) in three modes, alternated per round: `plain`
(no budget applies), `budgeted` (five budgets apply) and `reserving` (the same, with
`reserve_next`). Prints the statements of one request per mode, then per turn: this
process's CPU ms (Django), the PostgreSQL backend's CPU ms (from /proc, so it must run on
the database's machine) and wall ms, with ratios to `plain`. CPU, not latency: on the
shared machine waits for the CPU swamp wall time. With `--profile`, writes a cProfile
file (process CPU time) per mode and round.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from typing import Any

from bench.profile_turn_memory import backend_cpu_seconds, backend_pid
from bench.profile_turns import cpu_profile

MODES = ("plain", "budgeted", "reserving")


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.profile_budget_turns")
    parser.add_argument("--turns", type=int, default=200, help="per mode and round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--profile", default="", help="cProfile files: PREFIX.MODE.ROUND")
    return parser.parse_args(argv)


@dataclass
class ModePoster:
    """Posts B1's turn through Django's test client in each mode: its own body, sessions
    (eight) and client (the tenant without budgets for `plain`, else the budgeted one)."""

    bodies: dict[str, str]
    sids: dict[str, list[str]]
    clients: dict[str, Any]

    def post(self, mode: str, index: int) -> Any:
        response = self.clients[mode].post(
            f"/api/v1/sessions/{self.sids[mode][index % 8]}/turns", self.bodies[mode],
            content_type="application/json",
        )  # fmt: skip
        assert response.status_code == 201, response.content
        return response


def _poster() -> ModePoster:
    """`bench.budget_check`'s tenants, budgets and sessions, and a poster into them."""
    from django.test import Client

    from bench.b1_ingestion import TURN_BODY
    from bench.budget_check import CHECK, _setup

    secrets_json, sessions = _setup(8)
    secrets = json.loads(secrets_json)
    bodies = {
        "plain": json.dumps(TURN_BODY),
        "budgeted": json.dumps(TURN_BODY),
        "reserving": json.dumps({**TURN_BODY, "reserve_next": CHECK}),
    }
    sids = {"plain": sessions["turn"], "budgeted": sessions["turn_budgeted"],
            "reserving": sessions["turn_reserving"]}  # fmt: skip
    clients = {
        mode: Client(
            HTTP_AUTHORIZATION=f"Bearer {secrets['plain' if mode == 'plain' else 'budgeted']}",
            HTTP_HOST="127.0.0.1",
        )
        for mode in MODES
    }
    return ModePoster(bodies=bodies, sids=sids, clients=clients)


def _warm_up_and_print_statements(poster: ModePoster) -> None:
    """Per mode, 20 warm-up turns, then the SQL statements of one turn on stderr."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    for mode in MODES:
        for index in range(20):  # warm-up: caches, connections, prepared statements
            poster.post(mode, index)
        with CaptureQueriesContext(connection) as queries:
            poster.post(mode, 0)
        print(f"{mode}: {len(queries.captured_queries)} statements", file=sys.stderr)
        for query in queries.captured_queries:
            print(f"  {' '.join(query['sql'].split())[:150]}", file=sys.stderr)


def _measure(poster: ModePoster, args: argparse.Namespace) -> dict[str, list[float]]:
    """Per mode, the seconds of this process's CPU, the backend's CPU and wall, summed
    over the rounds; modes alternate within each round."""
    pid = backend_pid()
    spent = {mode: [0.0, 0.0, 0.0] for mode in MODES}  # CPU, backend CPU, wall
    for number in range(args.rounds):
        for mode in MODES:
            profile = f"{args.profile}.{mode}.{number}" if args.profile else ""
            cpu, pg = time.process_time(), backend_cpu_seconds(pid)
            wall = time.perf_counter()
            with cpu_profile(profile):
                for index in range(args.turns):
                    poster.post(mode, index)
            spent[mode][0] += time.process_time() - cpu
            spent[mode][1] += backend_cpu_seconds(pid) - pg
            spent[mode][2] += time.perf_counter() - wall
    return spent


def _print_costs(spent: dict[str, list[float]], turns: int) -> None:
    """Per mode, ms per turn and the ratios to `plain`, on stderr."""
    base = spent["plain"]
    for mode in MODES:
        cpu, pg, wall = (value / turns * 1000 for value in spent[mode])
        print(
            f"{mode}: {cpu:.2f} ms CPU + {pg:.2f} ms PostgreSQL CPU = {cpu + pg:.2f} ms "
            f"({(spent[mode][0] + spent[mode][1]) / (base[0] + base[1]):.2f}x plain), "
            f"{wall:.2f} ms wall ({spent[mode][2] / base[2]:.2f}x) per turn",
            file=sys.stderr,
        )


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)

    from bench.harness import log
    from bench.run import django_on_data_services

    with django_on_data_services(log):
        from django.db import connection

        poster = _poster()
        _warm_up_and_print_statements(poster)
        spent = _measure(poster, args)
        _print_costs(spent, args.rounds * args.turns)
        connection.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
