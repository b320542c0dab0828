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
callback, must be idempotent the same way, and returns row counts. Turns and their
steps are in `bench.turn_data`; long-term memories (with real MiniLM vectors) are the
last stage, in `bench.memory_data`.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from django.db import connection, transaction
from django.db.backends.utils import CursorWrapper

from sessions_app.models import Tenant

AGENTS = ["shop-assistant", "support-bot", "research-agent"]
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


def stage_turns_and_steps(spec: GenerateSpec, progress: Progress) -> StageResult:
    """Turns and their steps; imported late, since their module imports this one."""
    from bench.turn_data import stage_turns_and_steps as turns

    return turns(spec, progress)


# A session's item c: the same MPN in its components and its selections.
ITEM_MPN_SQL = "'MPN-' || lpad(((s * 37 + c * 101) %% 100000)::text, 6, '0')"


def _insert_components(cursor: CursorWrapper, params: dict[str, Any]) -> int:
    cursor.execute(
        f"""
        INSERT INTO session_component (
            tenant_id, session_id, mpn, component_type, name, summary, full_data,
            position, fetched_at)
        SELECT %(tenant_id)s, {_session_id_sql("%(ti)s", "s")}, {ITEM_MPN_SQL},
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
    return cursor.rowcount


def _insert_selections(cursor: CursorWrapper, params: dict[str, Any]) -> int:
    """The first `selections` components of every session, as cart lines."""
    cursor.execute(
        f"""
        INSERT INTO session_selection (
            tenant_id, session_id, mpn, position, quantity, note, selected_at)
        SELECT %(tenant_id)s, {_session_id_sql("%(ti)s", "s")}, {ITEM_MPN_SQL}, c,
               1 + c %% 3, '', now()
        FROM generate_series(0, %(sessions)s - 1) AS s,
             generate_series(1, %(selections)s) AS c
        ON CONFLICT (session_id, mpn) DO NOTHING
        """,
        params,
    )
    return cursor.rowcount


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
            result.inserted["session_component"] += _insert_components(cursor, params)
            if selections > 0:
                result.inserted["session_selection"] += _insert_selections(cursor, params)
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
