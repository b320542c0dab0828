"""The turns-and-steps stage of the benchmark generator: every session's turns, each
turn's steps, and the session totals that agree with them.

Each chunk of `chunk_sessions` sessions is one statement: a writable CTE inserts the
turns and, from what it returns, their steps, so the rows never pass through Python. A
chunk whose turns are all there is skipped, so an interrupted run resumes where it
stopped; `ON CONFLICT DO NOTHING` makes a second run add nothing.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from django.db import connection, transaction

from bench.generate import (
    SPREAD_DAYS,
    GenerateSpec,
    Progress,
    StageResult,
    _anchor,
    _session_id_sql,
    _tenants,
    _Throttle,
)

STEP_TYPES = ["intent", "filter", "retrieve", "tool", "rerank"]  # the last step is "response"
MODELS = ["gemini-1.5-flash", "gemini-1.5-pro"]

ModelPrices = tuple[list[str], list[Decimal | None], list[Decimal | None]]

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

TURN_COUNT_SQL = "SELECT count(*) FROM chat_turn WHERE session_id = ANY(%s::uuid[])"


def _model_prices() -> ModelPrices:
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


def _ensure_step_partitions() -> None:
    """turn_step is partitioned by month: give every month the steps fall in its own
    partition first, so the load does not pile into DEFAULT (and then have to move)."""
    from sessions_app.services.step_partitions import step_partitions_ensure

    step_partitions_ensure(since=_anchor() - timedelta(days=SPREAD_DAYS + 1))


def _chunk_session_ids(spec: GenerateSpec, tenant_index: int, lo: int, hi: int) -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {_session_id_sql('%(tenant_index)s', 's')}::text "
            "FROM generate_series(%(lo)s, %(hi)s) AS s",
            {"seed": spec.seed, "tenant_index": tenant_index, "lo": lo, "hi": hi},
        )
        return [row[0] for row in cursor.fetchall()]


def _chunk_params(
    spec: GenerateSpec,
    tenant_index: int,
    tenant_id: int,
    ids: list[str],
    lo: int,
    hi: int,
    prices: ModelPrices,
) -> dict[str, Any]:
    models, price_in, price_out = prices
    return {
        "seed": spec.seed,
        "ti": tenant_index,
        "tenant_id": tenant_id,
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
    }


def _load_chunk(
    spec: GenerateSpec,
    tenant_index: int,
    tenant_id: int,
    lo: int,
    hi: int,
    prices: ModelPrices,
) -> tuple[int, int]:
    """(turns, steps) inserted for sessions lo..hi of one tenant, in one transaction that
    also brings the sessions' totals up to date; nothing when every turn is there."""
    ids = _chunk_session_ids(spec, tenant_index, lo, hi)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(TURN_COUNT_SQL, [ids])
        have = cursor.fetchone()[0]
        if have >= len(ids) * spec.turns_per_session:
            return 0, 0
        cursor.execute(
            TURNS_AND_STEPS_SQL.format(session_id=_session_id_sql("%(ti)s", "s")),
            _chunk_params(spec, tenant_index, tenant_id, ids, lo, hi, prices),
        )
        steps = cursor.rowcount
        cursor.execute(TURN_COUNT_SQL, [ids])
        turns = cursor.fetchone()[0] - have
        cursor.execute(SESSION_TOTALS_SQL, {"ids": ids})
    return turns, steps


def stage_turns_and_steps(spec: GenerateSpec, progress: Progress) -> StageResult:
    result = StageResult("turns", {"chat_turn": 0, "turn_step": 0})
    if spec.turns_per_session <= 0 or spec.steps_per_turn <= 0:
        return result
    started = time.monotonic()
    throttle = _Throttle(progress)
    _ensure_step_partitions()
    prices = _model_prices()
    tenants = _tenants(spec)
    chunks_total = spec.tenants * -(-spec.sessions // spec.chunk_sessions)
    chunks_done = 0
    for index, tenant in enumerate(tenants):
        for lo in range(0, spec.sessions, spec.chunk_sessions):
            hi = min(lo + spec.chunk_sessions, spec.sessions) - 1
            turns, steps = _load_chunk(spec, index, tenant.pk, lo, hi, prices)
            result.inserted["chat_turn"] += turns
            result.inserted["turn_step"] += steps
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
