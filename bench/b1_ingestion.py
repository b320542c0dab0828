"""B1 ingestion: recording turns of three steps over HTTP, against the SQL floor.

- Subject: `POST /api/v1/sessions/{id}/turns` to gunicorn running `config.wsgi` with
  `config.settings.production` (workers = nproc, gthread), from `threads` client threads
  on keep-alive connections; once without and once with an `Idempotency-Key`.
- Batch: `POST /api/v1/turns/batch` with 10, 100 and 500 of the same turns per request
  (spread over the thread's sessions), measured in turns/s next to the same floor.
- Floor: the least SQL that records the same turn, one transaction issued with psycopg
  from the same number of threads: update the session's totals (returning the turn
  number), insert the turn, insert its three steps, commit.

Each thread writes to its own sessions, so neither side waits on another's session lock;
phases alternate over `rounds` so that drift on the shared machine hits both alike. The
target is ≥ 0.5x the floor's turns/s (single turns missed it; the best batch size is
measured against it).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import psutil
import psycopg

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


# --- The floor: the same writes, minimal SQL ---------------------------------------------

FLOOR_SESSION_SQL = """
UPDATE chat_session SET
    status = 'active', turn_count = turn_count + 1, last_turn_number = last_turn_number + 1,
    total_input_tokens = total_input_tokens + %(input)s,
    total_output_tokens = total_output_tokens + %(output)s,
    total_cost_usd = total_cost_usd + %(cost)s, total_calls = total_calls + %(calls)s,
    total_duration_ms = total_duration_ms + %(duration)s,
    last_active_at = now(), updated_at = now(),
    expires_at = now() + make_interval(secs => ttl_seconds)
WHERE id = %(session)s
RETURNING last_turn_number, tenant_id, user_id, agent_id
"""
FLOOR_TURN_SQL = """
INSERT INTO chat_turn (
    tenant_id, session_id, turn_number, user_message, assistant_response, intent_data,
    reasoning, metadata, state_before, state_after, context_after, input_tokens,
    output_tokens, cached_tokens, reasoning_tokens, cost_usd, call_count, error_count,
    unpriced_calls, duration_ms, compacted, rolled_back, created_at, occurred_at)
VALUES (%(tenant)s, %(session)s, %(number)s, %(user_message)s, %(assistant_response)s,
        %(intent)s, '', '{}', '{}', '{}', '{}', %(input)s, %(output)s, 0, 0, %(cost)s,
        %(calls)s, 0, 0, %(duration)s, false, false, now(), now())
RETURNING id
"""
FLOOR_STEP_ROW = (
    "(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, 0, 0, 0, %s, false, %s, true, NULL, now())"
)
FLOOR_STEPS_SQL = (
    "INSERT INTO turn_step (tenant_id, turn_id, session_id, user_id, agent_id, step_order, "
    "step_type, model, input_tokens, output_tokens, cached_tokens, cache_write_tokens, "
    "reasoning_tokens, cost_usd, price_missing, duration_ms, success, error, created_at) "
    "VALUES " + ", ".join([FLOOR_STEP_ROW] * len(STEPS))
)


def _step_costs() -> list[Decimal]:
    """Priced once, in Python, with the same table the service uses."""
    from sessions_app.hooks import StepUsage, price_step
    from sessions_app.services.turns import COST_PRECISION
    from sessions_app.usage import TokenCounts

    at = datetime.now(UTC)
    costs = []
    for step in STEPS:
        cost = price_step(
            StepUsage(
                str(step["model"]),
                TokenCounts(
                    input_tokens=int(step["input_tokens"]),
                    output_tokens=int(step["output_tokens"]),
                ),
                at,
            )
        )
        assert cost is not None, f"no price for {step['model']}"
        costs.append(cost.quantize(COST_PRECISION))
    return costs


class FloorWriter:
    """One psycopg connection; one call = one turn recorded in one transaction."""

    def __init__(self, *, database_url: str, session_ids: list[str], costs: list[Decimal]):
        self.conn = psycopg.connect(database_url)
        self.session_ids = session_ids
        self.costs = costs
        self.turn = 0
        self.totals = {
            "input": sum(int(s["input_tokens"]) for s in STEPS),
            "output": sum(int(s["output_tokens"]) for s in STEPS),
            "cost": sum(costs, Decimal(0)),
            "calls": len(STEPS),
            "duration": sum(int(s["duration_ms"]) for s in STEPS),
        }
        self.intent = json.dumps(TURN_BODY["intent_data"])

    def __call__(self) -> None:
        session = self.session_ids[self.turn % len(self.session_ids)]
        self.turn += 1
        with self.conn.transaction(), self.conn.cursor() as cur:
            cur.execute(FLOOR_SESSION_SQL, {**self.totals, "session": session})
            number, tenant, user_id, agent_id = cur.fetchone()  # type: ignore[misc]
            cur.execute(
                FLOOR_TURN_SQL,
                {
                    **self.totals,
                    "tenant": tenant,
                    "session": session,
                    "number": number,
                    "user_message": TURN_BODY["user_message"],
                    "assistant_response": TURN_BODY["assistant_response"],
                    "intent": self.intent,
                },
            )
            (turn_id,) = cur.fetchone()  # type: ignore[misc]
            params: list[Any] = []
            for order, (step, cost) in enumerate(zip(STEPS, self.costs, strict=True), 1):
                params += [tenant, turn_id, session, user_id, agent_id, order,
                           step["step_type"], step["model"], step["input_tokens"],
                           step["output_tokens"], cost, step["duration_ms"]]  # fmt: skip
            cur.execute(FLOOR_STEPS_SQL, params)

    def close(self) -> None:
        self.conn.close()


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

    from sessions_app.services.api_keys import api_key_create, tenant_get_or_create

    size = SIZES[ctx.size]
    ctx.ensure_dataset(size.dataset)
    tenant = tenant_get_or_create(name="bench-b1")
    secret = api_key_create(tenant=tenant, name="b1").secret
    per_thread = 4  # sessions per thread: turns spread over a few rows, as agents do
    sessions = {
        phase: [_sessions(tenant, per_thread, f"{phase}-{t}") for t in range(size.threads)]
        for phase in PHASES
    }
    costs = _step_costs()
    connection.close()  # the runner holds no connection while measuring

    body = json.dumps(TURN_BODY).encode()
    auth = {"Authorization": f"Bearer {secret}"}
    results: dict[str, LoadResult] = {}
    server_cpu: dict[str, float] = dict.fromkeys(PHASES, 0.0)
    server = Gunicorn(env=ctx.server_env, workers=ctx.nproc, threads=4)
    ctx.log(f"[B1] gunicorn: {' '.join(server.argv[2:])}")
    with server:
        pollers: dict[str, list[Any]] = {}
        for phase in PHASES:
            if phase == "floor":
                pollers[phase] = [
                    FloorWriter(database_url=ctx.database_url, session_ids=ids, costs=costs)
                    for ids in sessions[phase]
                ]
            elif phase in BATCH_SIZES:
                pollers[phase] = [
                    HttpPoster(
                        port=server.port,
                        paths=["/api/v1/turns/batch"],
                        body=_batch_body(ids, BATCH_SIZES[phase]),
                        headers=auth,
                        expect=200,
                        check=_all_recorded,
                        timeout=300,  # 500 turns per request, on a shared machine
                    )
                    for ids in sessions[phase]
                ]
            else:
                keyed = phase.endswith("key")
                pollers[phase] = [
                    HttpPoster(
                        port=server.port,
                        paths=[f"/api/v1/sessions/{sid}/turns" for sid in ids],
                        body=body,
                        headers=auth,
                        key_prefix=f"b1-{round(time.time())}-{index}" if keyed else None,
                    )
                    for index, ids in enumerate(sessions[phase])
                ]
        try:
            for round_number in range(1, size.rounds + 1):
                for phase in PHASES:
                    pids = server.worker_pids() if phase != "floor" else []
                    per_request = BATCH_SIZES.get(phase, 1)
                    warmup = 0 if round_number > 1 else 5 if per_request == 1 else 1
                    at_start = ServerCpu(pids)
                    result = run_load(
                        name=phase,
                        operations=pollers[phase],
                        max_requests=max(size.turns_per_phase // per_request, 2 * size.threads),
                        max_seconds=size.seconds_per_phase,
                        warmup_per_thread=warmup,
                        at_start=at_start,
                    )
                    spent = at_start.since()
                    server_cpu[phase] += spent
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
                    results[phase] = results[phase].merged(result) if phase in results else result
        finally:
            for phase in ("floor",):
                for writer in pollers.get(phase, []):
                    writer.close()
    return _report(ctx, size, server, results, server_cpu)


def _report(
    ctx: BenchContext,
    size: B1Size,
    server: Gunicorn,
    results: dict[str, LoadResult],
    server_cpu: dict[str, float],
) -> BenchResult:
    floor = results["floor"]
    rows = []
    turns_per_s: dict[str, float] = {}
    for phase in PHASES:
        r = results[phase]
        per_request = BATCH_SIZES.get(phase, 1)
        turns = r.requests * per_request
        turns_per_s[phase] = r.throughput * per_request
        ratio = turns_per_s[phase] / floor.throughput if floor.throughput else float("nan")
        server_ms = server_cpu[phase] / turns * 1000 if turns and phase != "floor" else None
        rows.append(
            f"| {phase} | {turns:,} | {r.errors} | {turns_per_s[phase]:,.1f} | {ratio:.2f}x | "
            f"{r.percentile(50):.1f} | {r.percentile(95):.1f} | {r.percentile(99):.1f} | "
            f"{r.client_cpu_seconds / r.seconds:.2f} | "
            f"{'-' if server_ms is None else f'{server_ms:.1f}'} |"
        )
    http = results["http"]
    ratio = http.throughput / floor.throughput if floor.throughput else 0.0
    best = max(BATCH_SIZES, key=lambda phase: turns_per_s[phase])
    best_ratio = turns_per_s[best] / floor.throughput if floor.throughput else 0.0
    verdict = "meets" if best_ratio >= TARGET_RATIO else "misses"
    markdown = f"""
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
target.** Single turn (http) / floor = {ratio:.2f}x.

The load generator runs on the same 2 cores as gunicorn and PostgreSQL: "client CPU" is
its share of one core while it ran (the HTTP client parses responses, so it costs more
there than psycopg does for the floor). The floor is a lower bound on the work, not an
alternative implementation: it skips authentication, validation, pricing lookups, the
budget check, the context snapshot and the response body.
"""
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
        "ratio_http_key_to_floor": round(
            results["http+idempotency-key"].throughput / floor.throughput, 3
        )
        if floor.throughput
        else None,
        "target_ratio": TARGET_RATIO,
    }
    return BenchResult(id=ID, title=TITLE, markdown=markdown, data=data)
