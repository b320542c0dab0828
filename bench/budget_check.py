"""Budget check with reservation over HTTP, five period budgets applying, 20 agents.

`python -m bench.budget_check [--agents 20] [--rounds 2] [--seconds 8] [--no-record]`: gunicorn
(`config.wsgi`, production settings, workers = nproc, gthread) and 20 client threads on
keep-alive connections, each agent in its own session of one user, one agent and one
model, so that all five budgets (tenant, user, agent, model, user x agent; day periods,
limits far away) apply to every call and every check locks and reserves on all five.
Phases alternate over the rounds, so drift on the shared machine hits them alike:

- `turn`: B1's single turn (`POST …/turns`, three steps) in a tenant without budgets;
- `turn_budgeted`: the same turn where the five budgets apply (it spends the budgets'
  period rows and releases a reservation);
- `check_then_turn`: `POST …/budget/check` with `reserve: true` and then the turn, the
  way an agent under budgets records one in two round trips; the check's latency is
  also kept apart;
- `get_then_turn`: the cheapest authenticated request (`GET …/sessions/{id}`) and then
  B1's turn, no budgets: the floor of any scheme that makes a second round trip;
- `turn_reserving`: the turn with `reserve_next` where the five budgets apply: it spends
  the reservation the previous turn took and reserves the next call's, one round trip.

Ratios are to `turn` of the same run, same agents: p50 to p50 and p95 to p95.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

from bench.harness import BenchContext, command_line
from bench.loadgen import HttpPoster, LoadResult, run_load
from bench.percentiles import rounded_rank_percentile

ID = "B-budget"
TITLE = "Budget check with reservation: 5 budgets applying, 20 agents, over HTTP"
AGENTS = 20
MODEL = "gemini-1.5-pro"
PHASES = ("turn", "turn_budgeted", "check_then_turn", "get_then_turn", "turn_reserving")
PLAIN_PHASES = ("turn", "get_then_turn")  # in the tenant without budgets
CHECK = {"estimated_tokens": 1520, "model": MODEL}


class CheckThenTurn:
    """One agent: check (reserving) and then record the turn; check latencies kept."""

    def __init__(self, port: int, sid: str, headers: dict[str, str], turn: bytes) -> None:
        check = {**CHECK, "reserve": True}
        self.check = HttpPoster(
            port=port,
            paths=[f"/api/v1/sessions/{sid}/budget/check"],
            body=json.dumps(check).encode(),
            headers=headers,
            expect=200,
        )
        self.turn = HttpPoster(
            port=port, paths=[f"/api/v1/sessions/{sid}/turns"], body=turn, headers=headers
        )
        self.check_ms: list[float] = []

    def __call__(self) -> None:
        began = time.perf_counter()
        self.check()
        self.check_ms.append((time.perf_counter() - began) * 1000)
        self.turn()


class GetThenTurn:
    """One agent: read its session (the cheapest request), then record the turn."""

    def __init__(self, port: int, sid: str, headers: dict[str, str], turn: bytes) -> None:
        self.get = HttpPoster(
            port=port, paths=[f"/api/v1/sessions/{sid}"], headers=headers, expect=200,
            method="GET",
        )  # fmt: skip
        self.turn = HttpPoster(
            port=port, paths=[f"/api/v1/sessions/{sid}/turns"], body=turn, headers=headers
        )

    def __call__(self) -> None:
        self.get()
        self.turn()


def _setup(agents: int) -> tuple[str, dict[str, list[str]]]:
    from sessions_app.services.api_keys import api_key_create, tenant_get_or_create
    from sessions_app.services.sessions import session_create
    from sessions_app.services.spend_budgets import spend_budget_create

    stamp = round(time.time())
    plain = tenant_get_or_create(name=f"bench-budget-plain-{stamp}")
    budgeted = tenant_get_or_create(name=f"bench-budget-{stamp}")
    secrets = {
        "plain": api_key_create(tenant=plain, name="b").secret,
        "budgeted": api_key_create(tenant=budgeted, name="b").secret,
    }
    far = {"period": "day", "time_zone": "Europe/Paris", "limit_tokens": 10**15,
           "limit_usd": "1000000000"}  # fmt: skip
    for keys in (
        {"scope": "tenant"},
        {"scope": "user", "user_id": "bench-user"},
        {"scope": "agent", "agent_id": "bench-agent"},
        {"scope": "model", "model": MODEL},
        {"scope": "user_agent", "user_id": "bench-user", "agent_id": "bench-agent"},
    ):
        spend_budget_create(tenant=budgeted, **keys, **far)
    sessions: dict[str, list[str]] = {}
    for phase in PHASES:
        tenant = plain if phase in PLAIN_PHASES else budgeted
        sessions[phase] = [
            str(session_create(tenant=tenant, user_id="bench-user", agent_id="bench-agent").pk)
            for _ in range(agents)
        ]
    return json.dumps(secrets), sessions


def _clients(
    port: int, secrets: dict[str, str], sessions: dict[str, list[str]]
) -> dict[str, list[Any]]:
    """Every phase's agents: one operation a session, authenticated as the phase's tenant."""
    from bench.b1_ingestion import TURN_BODY

    turn = json.dumps(TURN_BODY).encode()
    reserving = json.dumps({**TURN_BODY, "reserve_next": CHECK}).encode()
    clients: dict[str, list[Any]] = {}
    for phase in PHASES:
        tenant = "plain" if phase in PLAIN_PHASES else "budgeted"
        auth = {"Authorization": f"Bearer {secrets[tenant]}"}
        sids = sessions[phase]
        if phase == "check_then_turn":
            clients[phase] = [CheckThenTurn(port, sid, auth, turn) for sid in sids]
        elif phase == "get_then_turn":
            clients[phase] = [GetThenTurn(port, sid, auth, turn) for sid in sids]
        else:
            body = reserving if phase == "turn_reserving" else turn
            clients[phase] = [
                HttpPoster(port=port, paths=[f"/api/v1/sessions/{sid}/turns"], body=body,
                           headers=auth)
                for sid in sids
            ]  # fmt: skip
    return clients


def _rounds(
    ctx: BenchContext, clients: dict[str, list[Any]], rounds: int, seconds: float
) -> dict[str, LoadResult]:
    """The phases in turn, `rounds` times; each phase's rounds merged into one result."""
    results: dict[str, LoadResult] = {}
    for number in range(1, rounds + 1):
        for phase in PHASES:
            result = run_load(
                name=phase,
                operations=clients[phase],
                max_requests=100_000,
                max_seconds=seconds,
                warmup_per_thread=3 if number == 1 else 0,
            )
            ctx.log(
                f"[{ID}] round {number}/{rounds} {phase:>16}: {result.requests} in "
                f"{result.seconds:.1f}s, p50 {result.percentile(50):.1f} ms, "
                f"p95 {result.percentile(95):.1f} ms, errors {result.errors} "
                f"{result.first_errors[:1]}"
            )
            results[phase] = results[phase].merged(result) if phase in results else result
    return results


def measure(ctx: BenchContext, agents: int, rounds: int, seconds: float) -> dict[str, Any]:
    from django.db import connection

    from bench.servers import Gunicorn

    secrets_json, sessions = _setup(agents)
    secrets = json.loads(secrets_json)
    connection.close()
    server = Gunicorn(env=ctx.server_env, workers=ctx.nproc, threads=4)
    with server:
        clients = _clients(server.port, secrets, sessions)
        results = _rounds(ctx, clients, rounds, seconds)
    checks = [ms for agent in clients["check_then_turn"] for ms in agent.check_ms]
    figures: dict[str, Any] = {phase: results[phase].summary() for phase in PHASES}
    figures["check"] = {
        "requests": len(checks),
        "p50_ms": round(rounded_rank_percentile(checks, 50), 2),
        "p95_ms": round(rounded_rank_percentile(checks, 95), 2),
    }
    return figures


def _row(what: str, figures: dict[str, Any], plain: dict[str, Any]) -> str:
    """A phase's row of the table, its ratios to the plain turn's."""
    return (
        f"| {what} | {figures['requests']} | {figures['p50_ms']:.1f} | "
        f"{figures['p95_ms']:.1f} | {figures['p50_ms'] / plain['p50_ms']:.2f}x | "
        f"{figures['p95_ms'] / plain['p95_ms']:.2f}x |"
    )


def _markdown(
    args: argparse.Namespace, f: dict[str, Any], load_before: float, load_after: float
) -> str:
    plain = f["turn"]
    return f"""
{args.agents} agents (client threads), each in its own session of one user, agent and model;
five day budgets (tenant, user, agent, model, user x agent) apply to every call of the
budgeted phases. {args.rounds} rounds of {args.seconds:.0f} s per phase, alternating.
1-minute load average {load_before:.1f} before, {load_after:.1f} after (2 shared cores:
read the ratios). Ratios: to the plain turn of the same run, p50 to p50, p95 to p95.

| phase | requests | p50 ms | p95 ms | p50 / turn | p95 / turn |
|---|---:|---:|---:|---:|---:|
{_row("turn, no budget applies (B1's single turn)", plain, plain)}
{_row("turn, five budgets apply", f["turn_budgeted"], plain)}
{_row("budget/check with reservation, five budgets", f["check"], plain)}
{_row("check + turn (two round trips under budgets)", f["check_then_turn"], plain)}
{_row("GET session + turn, no budgets (floor of two round trips)", f["get_then_turn"], plain)}
{_row("turn with reserve_next, five budgets (one round trip)", f["turn_reserving"], plain)}
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.budget_check", description=__doc__)
    parser.add_argument("--agents", type=int, default=AGENTS, help="client threads")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=8.0, help="per phase and round")
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args(argv)
    command = command_line("bench.budget_check", argv)

    from bench.harness import BenchResult, log, record
    from bench.run import django_on_data_services

    with django_on_data_services(log) as server_env:
        ctx = BenchContext(
            size="short", database_url=os.environ["DATABASE_URL"],
            redis_url=os.environ["REDIS_URL"], server_env={**os.environ, **server_env},
            nproc=os.cpu_count() or 1, log=log,
        )  # fmt: skip
        load_before = os.getloadavg()[0]
        f = measure(ctx, args.agents, args.rounds, args.seconds)
        load_after = os.getloadavg()[0]
        result = BenchResult(ID, TITLE, _markdown(args, f, load_before, load_after), f)
        path = record(result, command, update=not args.no_record)
        log(f"[{ID}] {json.dumps(f)}; raw: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
