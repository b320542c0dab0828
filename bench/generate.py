"""Synthetic data for benchmarks: tenants, sessions, turns, steps, components, selections.

Why SQL and not the ORM: 10M steps must be feasible on a 2-core machine. Each chunk of
sessions is one `INSERT … SELECT … FROM generate_series` statement (turns and their
steps together, in a writable CTE), so the rows never pass through Python.

Deterministic and idempotent: tenant names and session ids derive from `seed` (a
session's id is `md5('engram-bench/<seed>/<tenant>/<n>')::uuid`), token counts from the
row's coordinates, and every insert is `ON CONFLICT DO NOTHING`. Each chunk commits on
its own, and a chunk whose turns are all there is skipped, so an interrupted run resumes
where it stopped and a second run changes nothing. Growing `turns_per_session` later adds
the new turns; growing `steps_per_turn` does not add steps to turns that already exist.

`STAGES` is the list of generators, run in order; a stage gets the spec and a progress
callback, must be idempotent the same way, and returns row counts. Long-term memories
(with real MiniLM vectors) are the last stage, in `bench.memory_data`.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from django.db import connection, transaction

from sessions_app.models import Tenant

AGENTS = ["shop-assistant", "support-bot", "research-agent"]
STEP_TYPES = ["intent", "filter", "retrieve", "tool", "rerank"]  # the last step is "response"
MODELS = ["gemini-1.5-flash", "gemini-1.5-pro"]
SESSION_TTL_SECONDS = 24 * 3600
SPREAD_DAYS = 30  # sessions start over the 30 days before the anchor day


@dataclass(frozen=True)
class GenerateSpec:
    """How much to make. `sessions` and the counts after it are per tenant / session /
    turn; `components` and `selections` are per session (selections ≤ components).
    `memories` is a total over the tenants (`memory_users` users each); the first
    `memory_texts` of them are distinct texts embedded for real, the rest reuse those
    vectors with a small perturbation (see `bench.memory_data`)."""

    tenants: int
    sessions: int
    turns_per_session: int
    steps_per_turn: int
    components: int = 0
    selections: int = 0
    seed: int = 1
    chunk_sessions: int = 200
    memories: int = 0
    memory_texts: int = 2000
    memory_users: int = 1000

    @property
    def total_steps(self) -> int:
        return self.tenants * self.sessions * self.turns_per_session * self.steps_per_turn

    def tenant_name(self, index: int) -> str:
        return f"bench-{self.seed}-t{index:04d}"


Progress = Callable[[str], None]


@dataclass
class StageResult:
    name: str
    inserted: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    timings: dict[str, float] = field(default_factory=dict)  # seconds of notable steps


Stage = Callable[[GenerateSpec, Progress], StageResult]


def stderr_progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class _Throttle:
    """Progress lines at most once a second, so 10M rows don't print 10M lines."""

    def __init__(self, progress: Progress, interval: float = 1.0) -> None:
        self.progress = progress
        self.interval = interval
        self.last = 0.0

    def __call__(self, message: str, *, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self.last >= self.interval:
            self.last = now
            self.progress(message)


def _tenants(spec: GenerateSpec) -> list[Tenant]:
    names = [spec.tenant_name(i) for i in range(spec.tenants)]
    Tenant.objects.bulk_create([Tenant(name=n) for n in names], ignore_conflicts=True)
    by_name = {t.name: t for t in Tenant.objects.filter(name__in=names)}
    return [by_name[n] for n in names]


def _anchor() -> datetime:
    """Midnight UTC today: rows spread over the days before it, as dashboards expect."""
    now = datetime.now(UTC)
    return now.replace(hour=0, minute=0, second=0, microsecond=0)


def _session_id_sql(tenant_index: str, number: str) -> str:
    return f"md5('engram-bench/' || %(seed)s || '/' || {tenant_index} || '/' || {number})::uuid"


def stage_tenants_and_sessions(spec: GenerateSpec, progress: Progress) -> StageResult:
    result = StageResult("sessions")
    started = time.monotonic()
    before = Tenant.objects.count()
    tenants = _tenants(spec)
    result.inserted["tenant"] = Tenant.objects.count() - before
    result.inserted["chat_session"] = 0
    anchor = _anchor()
    for index, tenant in enumerate(tenants):
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(
                f"""
                INSERT INTO chat_session (
                    id, tenant_id, user_id, agent_id, status, state, metadata,
                    query_history, last_results, turn_count, last_turn_number,
                    total_input_tokens, total_output_tokens, total_cached_tokens,
                    total_reasoning_tokens, total_cost_usd, total_calls, total_errors,
                    unpriced_calls, total_duration_ms, runaway_reason, runaway_detail,
                    runaway_blocked, ttl_seconds, expires_at, created_at, updated_at,
                    last_active_at)
                SELECT {_session_id_sql("%(tenant_index)s", "s")}, %(tenant_id)s,
                       'user-' || (s %% 50), (%(agents)s::text[])[1 + s %% 3], 'opened',
                       '{{}}', '{{"bench": true}}', '[]', '[]', 0, 0, 0, 0, 0, 0, 0, 0, 0,
                       0, 0, '', '{{}}', false, %(ttl)s, at + make_interval(secs => %(ttl)s),
                       at, at, at
                FROM generate_series(0, %(sessions)s - 1) AS s,
                     LATERAL (SELECT %(anchor)s::timestamptz
                                     - make_interval(days => (s * 7 + %(tenant_index)s)
                                                              %% %(days)s + 1)
                                     + make_interval(secs => (s * 997) %% 86400) AS at) AS t
                ON CONFLICT (id) DO NOTHING
                """,
                {
                    "seed": spec.seed,
                    "tenant_index": index,
                    "tenant_id": tenant.pk,
                    "agents": AGENTS,
                    "ttl": SESSION_TTL_SECONDS,
                    "sessions": spec.sessions,
                    "anchor": anchor,
                    "days": SPREAD_DAYS,
                },
            )
            result.inserted["chat_session"] += cursor.rowcount
    result.seconds = time.monotonic() - started
    progress(
        f"[generate] sessions: {spec.tenants} tenants, {spec.tenants * spec.sessions:,} "
        f"sessions ({result.inserted['chat_session']:,} new) in {result.seconds:.1f}s"
    )
    return result


def _model_prices() -> tuple[list[str], list[Decimal | None], list[Decimal | None]]:
    """Input and output price per million tokens of each model in `MODELS`, from the
    price table, so generated costs agree with what `turn_record` would have stored."""
    from sessions_app.hooks import StepUsage, price_step
    from sessions_app.usage import TokenCounts

    at = datetime.now(UTC)
    inputs: list[Decimal | None] = []
    outputs: list[Decimal | None] = []
    for model in MODELS:
        one_in = price_step(StepUsage(model, TokenCounts(input_tokens=1_000_000), at))
        one_out = price_step(StepUsage(model, TokenCounts(output_tokens=1_000_000), at))
        inputs.append(one_in)
        outputs.append(one_out)
    return MODELS, inputs, outputs


# Token counts and costs of step k of turn n of session s: a pure function of (s, n, k),
# so the turn's and the session's totals are sums of what is stored. Cached tokens are
# left at zero: their price is the model's business, and costs must stay exact.
TURNS_AND_STEPS_SQL = """
WITH ss AS (
    SELECT s, {session_id} AS session_id FROM generate_series(%(lo)s, %(hi)s) AS s
), grid AS (
    SELECT s, session_id, n, k,
           1 + (s + n + k) %% %(n_models)s AS m,
           100 + (s * 31 + n * 7919 + k * 104729) %% 900 AS input_tokens,
           10 + (s * 17 + n * 31 + k * 7) %% 290 AS output_tokens,
           (s * 13 + n * 7 + k) %% 50 <> 0 AS success,
           50 + (s + n * 13 + k * 101) %% 950 AS duration_ms
    FROM ss,
         generate_series(1, %(turns)s) AS n,
         generate_series(1, %(steps)s) AS k
), priced AS (
    SELECT grid.*,
           (%(models)s::text[])[m] AS model,
           round(input_tokens * (%(price_in)s::numeric[])[m] / 1000000
                 + output_tokens * (%(price_out)s::numeric[])[m] / 1000000, 10) AS cost_usd
    FROM grid
), sessions AS (
    SELECT id, user_id, agent_id, created_at FROM chat_session
    WHERE id = ANY(%(ids)s::uuid[])
), turns AS (
    INSERT INTO chat_turn (
        tenant_id, session_id, turn_number, user_message, assistant_response, intent_data,
        reasoning, metadata, state_before, state_after, context_after, input_tokens,
        output_tokens, cached_tokens, reasoning_tokens, cost_usd, call_count, error_count,
        unpriced_calls, duration_ms, compacted, rolled_back, created_at, occurred_at)
    SELECT %(tenant_id)s, p.session_id, p.n,
           'Bench turn ' || p.n || ': show me more like item ' || (p.s * 7 + p.n) %% 1000,
           'Here are the items matching your request, turn ' || p.n || '.',
           jsonb_build_object('intent', (ARRAY['search','detail','compare','cart'])[1 + p.n %% 4]),
           '', '{{}}', '{{}}', '{{}}', '{{}}',
           sum(p.input_tokens), sum(p.output_tokens), 0, 0, coalesce(sum(p.cost_usd), 0),
           count(*), count(*) FILTER (WHERE NOT p.success),
           count(*) FILTER (WHERE p.cost_usd IS NULL), sum(p.duration_ms),
           false, false, min(se.created_at) + make_interval(secs => p.n * 40),
           min(se.created_at) + make_interval(secs => p.n * 40)
    FROM priced p JOIN sessions se ON se.id = p.session_id
    GROUP BY p.session_id, p.s, p.n
    ON CONFLICT (session_id, turn_number) DO NOTHING
    RETURNING id, session_id, turn_number, created_at
)
INSERT INTO turn_step (
    tenant_id, turn_id, session_id, user_id, agent_id, step_order, step_type, model,
    input_tokens, output_tokens, cached_tokens, cache_write_tokens, reasoning_tokens,
    cost_usd, price_missing, duration_ms, success, error, created_at)
SELECT %(tenant_id)s, t.id, t.session_id, se.user_id, se.agent_id, p.k,
       CASE WHEN p.k = %(steps)s THEN 'response'
            ELSE (%(step_types)s::text[])[1 + (p.k - 1) %% %(n_step_types)s] END,
       p.model, p.input_tokens, p.output_tokens, 0, 0, 0, p.cost_usd, p.cost_usd IS NULL,
       p.duration_ms, p.success, CASE WHEN p.success THEN NULL ELSE 'timeout' END,
       t.created_at + make_interval(secs => p.k)
FROM turns t
JOIN sessions se ON se.id = t.session_id
JOIN priced p ON p.session_id = t.session_id AND p.n = t.turn_number
"""

SESSION_TOTALS_SQL = """
UPDATE chat_session cs SET
    status = 'active', turn_count = agg.turns, last_turn_number = agg.last_number,
    total_input_tokens = agg.input_tokens, total_output_tokens = agg.output_tokens,
    total_cost_usd = agg.cost_usd, total_calls = agg.calls, total_errors = agg.errors,
    unpriced_calls = agg.unpriced, total_duration_ms = agg.duration_ms,
    last_active_at = agg.last_at, updated_at = agg.last_at,
    expires_at = agg.last_at + make_interval(secs => cs.ttl_seconds)
FROM (
    SELECT session_id, count(*) AS turns, max(turn_number) AS last_number,
           sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens,
           sum(cost_usd) AS cost_usd, sum(call_count) AS calls, sum(error_count) AS errors,
           sum(unpriced_calls) AS unpriced, sum(duration_ms) AS duration_ms,
           max(created_at) AS last_at
    FROM chat_turn WHERE session_id = ANY(%(ids)s) GROUP BY session_id
) AS agg
WHERE cs.id = agg.session_id
"""


def _chunk_session_ids(spec: GenerateSpec, tenant_index: int, lo: int, hi: int) -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {_session_id_sql('%(tenant_index)s', 's')}::text "
            "FROM generate_series(%(lo)s, %(hi)s) AS s",
            {"seed": spec.seed, "tenant_index": tenant_index, "lo": lo, "hi": hi},
        )
        return [row[0] for row in cursor.fetchall()]


def stage_turns_and_steps(spec: GenerateSpec, progress: Progress) -> StageResult:
    result = StageResult("turns", {"chat_turn": 0, "turn_step": 0})
    if spec.turns_per_session <= 0 or spec.steps_per_turn <= 0:
        return result
    started = time.monotonic()
    throttle = _Throttle(progress)
    # turn_step is partitioned by month: give every month the steps fall in its own
    # partition first, so the load does not pile into DEFAULT (and then have to move).
    from sessions_app.services.step_partitions import step_partitions_ensure

    step_partitions_ensure(since=_anchor() - timedelta(days=SPREAD_DAYS + 1))
    models, price_in, price_out = _model_prices()
    tenants = _tenants(spec)
    chunks_total = spec.tenants * -(-spec.sessions // spec.chunk_sessions)
    chunks_done = 0
    expected_per_session = spec.turns_per_session
    for index, tenant in enumerate(tenants):
        for lo in range(0, spec.sessions, spec.chunk_sessions):
            hi = min(lo + spec.chunk_sessions, spec.sessions) - 1
            ids = _chunk_session_ids(spec, index, lo, hi)
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute(
                    "SELECT count(*) FROM chat_turn WHERE session_id = ANY(%s::uuid[])", [ids]
                )
                have = cursor.fetchone()[0]
                if have < len(ids) * expected_per_session:
                    cursor.execute(
                        TURNS_AND_STEPS_SQL.format(session_id=_session_id_sql("%(ti)s", "s")),
                        {
                            "seed": spec.seed,
                            "ti": index,
                            "tenant_id": tenant.pk,
                            "ids": ids,
                            "lo": lo,
                            "hi": hi,
                            "turns": spec.turns_per_session,
                            "steps": spec.steps_per_turn,
                            "models": models,
                            "n_models": len(models),
                            "price_in": price_in,
                            "price_out": price_out,
                            "step_types": STEP_TYPES,
                            "n_step_types": len(STEP_TYPES),
                        },
                    )
                    result.inserted["turn_step"] += cursor.rowcount
                    cursor.execute(
                        "SELECT count(*) FROM chat_turn WHERE session_id = ANY(%s::uuid[])",
                        [ids],
                    )
                    result.inserted["chat_turn"] += cursor.fetchone()[0] - have
                    cursor.execute(SESSION_TOTALS_SQL, {"ids": ids})
            chunks_done += 1
            elapsed = time.monotonic() - started
            rate = result.inserted["turn_step"] / elapsed if elapsed else 0.0
            throttle(
                f"[generate] turns+steps: chunk {chunks_done}/{chunks_total}, "
                f"{result.inserted['turn_step']:,} new steps, {rate:,.0f} steps/s",
                force=chunks_done == chunks_total,
            )
    result.seconds = time.monotonic() - started
    return result


def stage_components_and_selections(spec: GenerateSpec, progress: Progress) -> StageResult:
    result = StageResult("context", {"session_component": 0, "session_selection": 0})
    if spec.components <= 0:
        return result
    started = time.monotonic()
    selections = min(spec.selections, spec.components)
    for index, tenant in enumerate(_tenants(spec)):
        with transaction.atomic(), connection.cursor() as cursor:
            params = {
                "seed": spec.seed,
                "ti": index,
                "tenant_id": tenant.pk,
                "sessions": spec.sessions,
                "components": spec.components,
                "selections": selections,
            }
            session_id = _session_id_sql("%(ti)s", "s")
            mpn = "'MPN-' || lpad(((s * 37 + c * 101) %% 100000)::text, 6, '0')"
            cursor.execute(
                f"""
                INSERT INTO session_component (
                    tenant_id, session_id, mpn, component_type, name, summary, full_data,
                    position, fetched_at)
                SELECT %(tenant_id)s, {session_id}, {mpn},
                       (ARRAY['laptop','monitor','dock','keyboard'])[1 + c %% 4],
                       'Item ' || c || ' of session ' || s, 'A synthetic item for benchmarks.',
                       jsonb_build_object('price', 100 + (s + c * 13) %% 2000, 'rank', c),
                       c, now()
                FROM generate_series(0, %(sessions)s - 1) AS s,
                     generate_series(1, %(components)s) AS c
                ON CONFLICT (session_id, mpn) DO NOTHING
                """,
                params,
            )
            result.inserted["session_component"] += cursor.rowcount
            if selections > 0:
                cursor.execute(
                    f"""
                    INSERT INTO session_selection (
                        tenant_id, session_id, mpn, position, quantity, note, selected_at)
                    SELECT %(tenant_id)s, {session_id}, {mpn}, c, 1 + c %% 3, '', now()
                    FROM generate_series(0, %(sessions)s - 1) AS s,
                         generate_series(1, %(selections)s) AS c
                    ON CONFLICT (session_id, mpn) DO NOTHING
                    """,
                    params,
                )
                result.inserted["session_selection"] += cursor.rowcount
    result.seconds = time.monotonic() - started
    progress(
        f"[generate] components/selections: {result.inserted['session_component']:,} / "
        f"{result.inserted['session_selection']:,} new in {result.seconds:.1f}s"
    )
    return result


def stage_memories(spec: GenerateSpec, progress: Progress) -> StageResult:
    """Long-term memories; imported late, since its module imports this one."""
    from bench.memory_data import stage_memories as memories

    return memories(spec, progress)


# The generators, in order.
STAGES: list[Stage] = [
    stage_tenants_and_sessions,
    stage_turns_and_steps,
    stage_components_and_selections,
    stage_memories,
]


def generate(spec: GenerateSpec, progress: Progress = stderr_progress) -> list[StageResult]:
    """Run every stage; safe to run again with the same spec (it then inserts nothing)."""
    progress(
        f"[generate] {spec.tenants} tenants x {spec.sessions} sessions x "
        f"{spec.turns_per_session} turns x {spec.steps_per_turn} steps "
        f"= {spec.total_steps:,} steps, {spec.memories:,} memories (seed {spec.seed})"
    )
    started = time.monotonic()
    results = [stage(spec, progress) for stage in STAGES]
    progress(f"[generate] done in {time.monotonic() - started:.1f}s")
    return results
