"""B1 ingestion: recording turns of three steps over HTTP, against the SQL floor.

- Subject: `POST /api/v1/sessions/{id}/turns` to gunicorn running `config.wsgi` with
  `config.settings.production` (workers = nproc, gthread), from `threads` client threads
  on keep-alive connections; once without and once with an `Idempotency-Key`.
- Batch: `POST /api/v1/turns/batch` with 10, 100 and 500 of the same turns per request
  (spread over the thread's sessions), measured in turns/s next to the same floor.
- Floor (bench/b1_floor.py): the least SQL that records the same turn, one transaction
  issued with psycopg from the same number of threads: update the session's totals
  (returning the turn number), insert the turn, insert its three steps, commit.

Each thread writes to its own sessions, so neither side waits on another's session lock;
phases alternate over `rounds` so that drift on the shared machine hits both alike. The
target is ≥ 0.5x the floor's turns/s (single turns missed it; the best batch size is
measured against it).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import psutil

from bench.b1_floor import FloorWriter, step_costs
from bench.generate import GenerateSpec
from bench.harness import BenchContext, BenchResult
from bench.loadgen import HttpPoster, LoadResult, run_load
from bench.servers import Gunicorn

ID = "B1"
TITLE = "Ingestion: POST …/turns over HTTP vs the same transaction in psycopg"
TARGET_RATIO = 0.5

STEPS = [
    {"step_type": "intent", "model": "gemini-1.5-flash", "input_tokens": 150,
     "output_tokens": 20, "duration_ms": 180},
    {"step_type": "filter", "model": "gemini-1.5-flash", "input_tokens": 300,
     "output_tokens": 50, "duration_ms": 220},
    {"step_type": "response", "model": "gemini-1.5-pro", "input_tokens": 800,
     "output_tokens": 200, "duration_ms": 450},
]  # fmt: skip
TURN_BODY = {
    "user_message": "Tell me about the first one",
    "assistant_response": "The Dell XPS 15 has a 15.6-inch OLED display and 32 GB of memory.",
    "intent_data": {"intent": "product_detail"},
    "steps": STEPS,
}


@dataclass(frozen=True)
class B1Size:
    threads: int
    rounds: int
    seconds_per_phase: float
    turns_per_phase: int
    dataset: GenerateSpec


SIZES = {
    # ~100k existing steps, so that inserts maintain indexes of a non-trivial table.
    "short": B1Size(
        threads=8,
        rounds=2,
        seconds_per_phase=8,
        turns_per_phase=3000,
        dataset=GenerateSpec(tenants=4, sessions=250, turns_per_session=33, steps_per_turn=3),
    ),
    "full": B1Size(
        threads=8,
        rounds=3,
        seconds_per_phase=30,
        turns_per_phase=20_000,
        dataset=GenerateSpec(tenants=10, sessions=1000, turns_per_session=33, steps_per_turn=3),
    ),
}

# Batch phases: POST /api/v1/turns/batch with this many turns per request (no keys, like
# "http"), the turns spread over the thread's sessions.
BATCH_SIZES = {"batch-10": 10, "batch-100": 100, "batch-500": 500}
PHASES = ["floor", "http", "http+idempotency-key", *BATCH_SIZES]
TABLE_HEAD = (
    "| phase | turns | errors | turns/s | vs floor | p50 ms | p95 ms | p99 ms "
    "| client CPU | server CPU ms/turn |\n"
    "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
)


# --- The run -------------------------------------------------------------------------------


def _sessions(tenant: Any, count: int, label: str) -> list[str]:
    from sessions_app.services.sessions import session_create

    return [
        str(session_create(tenant=tenant, user_id=f"b1-{label}-{i}", agent_id="bench").pk)
        for i in range(count)
    ]


def _batch_body(session_ids: list[str], size: int) -> bytes:
    turns = [{"session_id": session_ids[n % len(session_ids)], **TURN_BODY} for n in range(size)]
    return json.dumps({"turns": turns}).encode()


def _all_recorded(payload: bytes) -> None:
    """A batch answers 200 even when items fail: every item must be a 201."""
    results = json.loads(payload)["results"]
    failed = [r for r in results if r["status"] != 201]
    if failed:
        raise RuntimeError(f"{len(failed)} of {len(results)} items failed: {failed[0]}")


class ServerCpu:
    """The server processes' CPU from a start (`run_load` calls it between the warm-up
    and the measured requests, so the warm-up is not charged to them) to `since()`."""

    def __init__(self, pids: list[int]) -> None:
        self.pids = pids
        self.start = _cpu_seconds(pids)

    def __call__(self) -> None:
        self.start = _cpu_seconds(self.pids)

    def since(self) -> float:
        return _cpu_seconds(self.pids) - self.start


def _cpu_seconds(pids: list[int]) -> float:
    total = 0.0
    for pid in pids:
        try:
            times = psutil.Process(pid).cpu_times()
        except psutil.Error:
            continue
        total += times.user + times.system
    return total


def run(ctx: BenchContext) -> BenchResult:
    from django.db import connection

    size = SIZES[ctx.size]
    ctx.ensure_dataset(size.dataset)
    secret, sessions = _tenant_sessions(size)
    costs = step_costs(STEPS)
    connection.close()  # the runner holds no connection while measuring

    results: dict[str, LoadResult] = {}
    server_cpu: dict[str, float] = dict.fromkeys(PHASES, 0.0)
    server = Gunicorn(env=ctx.server_env, workers=ctx.nproc, threads=4)
    ctx.log(f"[B1] gunicorn: {' '.join(server.argv[2:])}")
    with server:
        pollers = _pollers(ctx, server, sessions, secret, costs)
        try:
            for round_number in range(1, size.rounds + 1):
                for phase in PHASES:
                    result, spent = _measure_phase(
                        ctx, size, server, phase, pollers[phase], round_number
                    )
                    server_cpu[phase] += spent
                    results[phase] = results[phase].merged(result) if phase in results else result
        finally:
            for writer in pollers["floor"]:
                writer.close()
    return _report(ctx, size, server, results, server_cpu)


def _tenant_sessions(size: B1Size) -> tuple[str, dict[str, list[list[str]]]]:
    """The bench tenant's API key secret, and per phase each client thread's sessions."""
    from sessions_app.services.api_keys import api_key_create, tenant_get_or_create

    tenant = tenant_get_or_create(name="bench-b1")
    secret = api_key_create(tenant=tenant, name="b1").secret
    per_thread = 4  # sessions per thread: turns spread over a few rows, as agents do
    sessions = {
        phase: [_sessions(tenant, per_thread, f"{phase}-{t}") for t in range(size.threads)]
        for phase in PHASES
    }
    return secret, sessions


def _pollers(
    ctx: BenchContext,
    server: Gunicorn,
    sessions: dict[str, list[list[str]]],
    secret: str,
    costs: list[Decimal],
) -> dict[str, list[Any]]:
    """Per phase, one operation per client thread, on that thread's sessions."""
    auth = {"Authorization": f"Bearer {secret}"}
    pollers: dict[str, list[Any]] = {}
    for phase in PHASES:
        if phase == "floor":
            pollers[phase] = [
                FloorWriter(
                    database_url=ctx.database_url, session_ids=ids, body=TURN_BODY, costs=costs
                )
                for ids in sessions[phase]
            ]
        elif phase in BATCH_SIZES:
            pollers[phase] = [
                _batch_poster(server, ids, BATCH_SIZES[phase], auth) for ids in sessions[phase]
            ]
        else:
            pollers[phase] = _turn_posters(
                server, sessions[phase], auth, keyed=phase.endswith("key")
            )
    return pollers


def _batch_poster(server: Gunicorn, ids: list[str], turns: int, auth: dict[str, str]) -> Any:
    """`turns` turns per `POST /api/v1/turns/batch`, spread over `ids`."""
    return HttpPoster(
        port=server.port,
        paths=["/api/v1/turns/batch"],
        body=_batch_body(ids, turns),
        headers=auth,
        expect=200,
        check=_all_recorded,
        timeout=300,  # 500 turns per request, on a shared machine
    )


def _turn_posters(
    server: Gunicorn, sessions: list[list[str]], auth: dict[str, str], *, keyed: bool
) -> list[Any]:
    """One turn per `POST …/turns`, a thread's requests going round its sessions; with
    `keyed`, each request carries its own Idempotency-Key."""
    body = json.dumps(TURN_BODY).encode()
    return [
        HttpPoster(
            port=server.port,
            paths=[f"/api/v1/sessions/{sid}/turns" for sid in ids],
            body=body,
            headers=auth,
            key_prefix=f"b1-{round(time.time())}-{index}" if keyed else None,
        )
        for index, ids in enumerate(sessions)
    ]


def _measure_phase(
    ctx: BenchContext,
    size: B1Size,
    server: Gunicorn,
    phase: str,
    operations: list[Any],
    round_number: int,
) -> tuple[LoadResult, float]:
    """One phase of one round: its load, and the gunicorn workers' CPU seconds it cost
    (none counted for the floor)."""
    pids = server.worker_pids() if phase != "floor" else []
    per_request = BATCH_SIZES.get(phase, 1)
    warmup = 0 if round_number > 1 else 5 if per_request == 1 else 1
    at_start = ServerCpu(pids)
    result = run_load(
        name=phase,
        operations=operations,
        max_requests=max(size.turns_per_phase // per_request, 2 * size.threads),
        max_seconds=size.seconds_per_phase,
        warmup_per_thread=warmup,
        at_start=at_start,
    )
    spent = at_start.since()
    turns = result.requests * per_request
    per_turn = spent / turns * 1000 if pids and turns else None
    cpu_note = f", server CPU {per_turn:.2f} ms/turn" if per_turn else ""
    ctx.log(
        f"[B1] round {round_number}/{size.rounds} {phase:>22}: "
        f"{turns:>6} turns in {result.seconds:5.1f}s = "
        f"{result.throughput * per_request:7.1f}/s, "
        f"p50 {result.percentile(50):6.1f} ms, "
        f"p99 {result.percentile(99):6.1f} ms, errors {result.errors}" + cpu_note
    )
    return result, spent


# --- The report ----------------------------------------------------------------------------


def _report(
    ctx: BenchContext,
    size: B1Size,
    server: Gunicorn,
    results: dict[str, LoadResult],
    server_cpu: dict[str, float],
) -> BenchResult:
    floor = results["floor"].throughput
    turns_per_s = {phase: results[phase].throughput * BATCH_SIZES.get(phase, 1) for phase in PHASES}
    rows = [_table_row(phase, results[phase], server_cpu[phase], floor) for phase in PHASES]
    ratio = results["http"].throughput / floor if floor else 0.0
    best = max(BATCH_SIZES, key=lambda phase: turns_per_s[phase])
    best_ratio = turns_per_s[best] / floor if floor else 0.0
    markdown = _markdown(size, server, rows, best=best, best_ratio=best_ratio, http_ratio=ratio)
    data = {
        "size": ctx.size,
        "threads": size.threads,
        "rounds": size.rounds,
        "gunicorn": server.argv[3:],
        "phases": {phase: results[phase].summary() for phase in PHASES},
        "server_cpu_seconds": server_cpu,
        "ratio_http_to_floor": round(ratio, 3),
        "turns_per_s": {phase: round(value, 1) for phase, value in turns_per_s.items()},
        "best_batch": best,
        "ratio_best_batch_to_floor": round(best_ratio, 3),
        "ratio_http_key_to_floor": round(results["http+idempotency-key"].throughput / floor, 3)
        if floor
        else None,
        "target_ratio": TARGET_RATIO,
    }
    return BenchResult(id=ID, title=TITLE, markdown=markdown, data=data)


def _table_row(phase: str, r: LoadResult, cpu_seconds: float, floor: float) -> str:
    """The phase's row of TABLE_HEAD; `floor` is the floor's turns/s."""
    per_request = BATCH_SIZES.get(phase, 1)
    turns = r.requests * per_request
    per_s = r.throughput * per_request
    ratio = per_s / floor if floor else float("nan")
    server_ms = cpu_seconds / turns * 1000 if turns and phase != "floor" else None
    return (
        f"| {phase} | {turns:,} | {r.errors} | {per_s:,.1f} | {ratio:.2f}x | "
        f"{r.percentile(50):.1f} | {r.percentile(95):.1f} | {r.percentile(99):.1f} | "
        f"{r.client_cpu_seconds / r.seconds:.2f} | "
        f"{'-' if server_ms is None else f'{server_ms:.1f}'} |"
    )


def _markdown(
    size: B1Size,
    server: Gunicorn,
    rows: list[str],
    *,
    best: str,
    best_ratio: float,
    http_ratio: float,
) -> str:
    verdict = "meets" if best_ratio >= TARGET_RATIO else "misses"
    return f"""
Setup: {size.threads} client threads (each on its own 4 sessions), {size.rounds} rounds of
the three phases alternating, each phase bounded at {size.turns_per_phase:,} turns or
{size.seconds_per_phase:g} s. Dataset underneath: {size.dataset.total_steps:,} generated
steps. Server: `gunicorn {" ".join(server.argv[3:])}` with `config.settings.production`
(DEBUG off, persistent connections). A turn is the body of seed 000: three steps, priced.
Batch phases send {", ".join(str(n) for n in BATCH_SIZES.values())} of those turns per
`POST /api/v1/turns/batch` (no keys); their latencies are per request, their turns and
server CPU per turn. Server CPU is the gunicorn workers' user + system time from the end
of a phase's warm-up requests (5 a thread in the first round) to its last answer.

{TABLE_HEAD}
{chr(10).join(rows)}

**Best batch ({best}) / floor = {best_ratio:.2f}x — {verdict} the ≥ {TARGET_RATIO}x
target.** Single turn (http) / floor = {http_ratio:.2f}x.

The load generator runs on the same 2 cores as gunicorn and PostgreSQL: "client CPU" is
its share of one core while it ran (the HTTP client parses responses, so it costs more
there than psycopg does for the floor). The floor is a lower bound on the work, not an
alternative implementation: it skips authentication, validation, pricing lookups, the
budget check, the context snapshot and the response body.
"""
