"""`python -m bench.profile_turn_memory [--sessions 20] [--turns 10] [--rounds 2]`: where
the time of turning recorded turns into memories goes, in process (no HTTP, no Celery),
two ways over the same kind of turns, alternating in one run:

- per turn: `conversation_remember_session` once per turn, in the order they were
  recorded, as a task per turn did (one embedding call and a transaction per turn);
- drained: every turn marked, then one `turns_remember_pending` (the queue's drain:
  batches across sessions, one embedding call and one INSERT per batch).

Each round records `--sessions` x `--turns` new turns per way (memory hooks off), then
writes their memories. Printed per way, per turn: turns a second; the CPU of this
process, split into the embedding model's (inside the embedding calls of the drain's
thread, and every other thread's: the model's and the drain's embedding thread) and the
rest (Python, the driver); the CPU of
the PostgreSQL backend serving it (read from /proc: the embedded server runs on this
machine), which holds the inserts, their indexes and the lexical statistics triggers;
the wall time inside SQL statements; statements and embedding calls. Production settings
on throwaway PostgreSQL + Valkey, like `bench.profile_turns`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


def backend_cpu_seconds(pid: int) -> float:
    """User + system CPU of a local process (a PostgreSQL backend), from /proc."""
    with open(f"/proc/{pid}/stat") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def backend_pid() -> int:
    """The process id of the PostgreSQL backend serving Django's default connection."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


@dataclass
class Meter:
    """Embedding calls and SQL statements of one way's run. `embedding_cpu` is the main
    thread's CPU inside the embedding calls; `_measure_way` adds every other thread's."""

    calls: int = 0
    embedding_cpu: float = 0.0
    statements: int = 0
    sql_wall: float = 0.0

    def reset(self) -> None:
        self.calls, self.embedding_cpu, self.statements, self.sql_wall = 0, 0.0, 0, 0.0

    def meter_embedder(self, model: Any) -> None:
        """`model.embed` counted from now on: calls, and the main thread's CPU inside them."""
        real_embed = model.embed

        def metered_embed(texts: list[str]) -> list[list[float]]:
            # The embedding's CPU is the calling thread's inside this call when the drain
            # itself calls (the main thread), plus every other thread's (the model's own
            # threads, the drain's embedding thread): see `_measure_way`.
            main = threading.current_thread() is threading.main_thread()
            began = time.thread_time()
            try:
                return real_embed(texts)
            finally:
                self.calls += 1
                if main:
                    self.embedding_cpu += time.thread_time() - began

        model.embed = metered_embed

    def sql(self, execute: Callable[..., Any], *params: Any) -> Any:
        """A `connection.execute_wrapper`: statements and their wall time."""
        began = time.perf_counter()
        try:
            return execute(*params)
        finally:
            self.statements += 1
            self.sql_wall += time.perf_counter() - began


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.profile_turn_memory")
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--turns", type=int, default=10, help="turns per session per round")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--ways", default="per_turn,drained", help="comma-separated")
    return parser.parse_args(argv)


def _prepare(meter: Meter) -> Any:
    """The embedder loaded and metered, turn memory left to this process (the drain
    ends with its work, no memory or compaction hooks): the tenant to record in."""
    from django.conf import settings
    from django.core.management import call_command

    from memory_app.embedding import embedder
    from sessions_app.hooks import turn_recorded
    from sessions_app.services.api_keys import tenant_get_or_create

    call_command("prepare_embedder", verbosity=0)
    settings.ENGRAM_TURN_MEMORY_LINGER_SECONDS = 0.0  # the drain ends with its work
    turn_recorded.disconnect(dispatch_uid="memory_remember_turn")  # memory and compaction
    tenant = tenant_get_or_create(name="profile-turn-memory")
    meter.meter_embedder(embedder())
    return tenant


def _record_round(tenant: Any, label: str, sessions: int, turns: int) -> list[tuple[Any, int]]:
    """`turns` turns in each of `sessions` new sessions, interleaved: (session, number)."""
    from bench.turn_recall_steady import LINES, unique_word
    from sessions_app.services.sessions import session_create
    from sessions_app.services.turn_recording import turn_record
    from sessions_app.services.turn_totals import StepInput
    from sessions_app.usage import TokenCounts

    created = [
        session_create(tenant=tenant, user_id=f"{label}-{i}", agent_id="bench")
        for i in range(sessions)
    ]
    recorded = []
    step = StepInput(step_type="response", counts=TokenCounts(10, 5))
    for n in range(turns):
        for index, session in enumerate(created):
            line = LINES[(n + index) % len(LINES)].format(w=unique_word())
            turn_record(
                tenant=tenant,
                session_id=session.pk,
                steps=[step],
                user_message=line,
                assistant_response="Noted, I will keep that in mind.",
            )
            recorded.append((session.pk, n + 1))
    return recorded


Way = Callable[[list[tuple[Any, int]]], None]


def _ways() -> dict[str, Way]:
    """The ways of turning recorded turns into memories, by name; their modules are
    imported here, before anything is measured."""
    from memory_app.services import turn_queue
    from memory_app.services.conversation import conversation_remember_session
    from memory_app.valkey import valkey

    def per_turn(recorded: list[tuple[Any, int]]) -> None:
        for session_id, number in recorded:
            conversation_remember_session(session_id=session_id, up_to=number)

    def drained(recorded: list[tuple[Any, int]]) -> None:
        valkey().set(turn_queue._key("due"), 1, px=600_000)  # mark only, publish nothing
        turn_queue.turns_mark_pending(marks=recorded)
        turn_queue.turns_remember_pending()

    return {"per_turn": per_turn, "drained": drained}


def _measure_way(
    way: Way, recorded: list[tuple[Any, int]], meter: Meter, backend: int
) -> dict[str, float]:
    """`way` run over `recorded`: its figures per turn."""
    from django.db import connection

    meter.reset()
    pg = backend_cpu_seconds(backend)
    cpu, main_cpu = time.process_time(), time.thread_time()
    wall = time.perf_counter()
    with connection.execute_wrapper(meter.sql):
        way(recorded)
    cpu, main_cpu = time.process_time() - cpu, time.thread_time() - main_cpu
    wall = time.perf_counter() - wall
    pg = backend_cpu_seconds(backend) - pg
    embedding_cpu = meter.embedding_cpu + (cpu - main_cpu)
    turns = len(recorded)

    def ms(seconds: float) -> float:
        return round(seconds / turns * 1000, 2)

    return {
        "turns": turns,
        "turns_per_s": round(turns / wall, 1),
        "cpu_ms_per_turn": ms(cpu + pg),
        "embedding_cpu_ms": ms(embedding_cpu),
        "python_cpu_ms": ms(cpu - embedding_cpu),
        "postgres_cpu_ms": ms(pg),
        "sql_wall_ms": ms(meter.sql_wall),
        "statements_per_turn": round(meter.statements / turns, 2),
        "embedding_calls_per_turn": round(meter.calls / turns, 3),
    }


def _log_means(results: dict[str, list[dict[str, float]]]) -> None:
    from bench.harness import log

    for way, rows in results.items():
        mean = {
            key: round(sum(row[key] for row in rows) / len(rows), 2)
            for key in rows[0]
            if key != "turns"
        }
        log(f"[profile] mean {way}: {json.dumps(mean)}")


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)

    from bench.harness import log
    from bench.run import django_on_data_services

    with django_on_data_services(log):
        from django.db import connection

        meter = Meter()
        tenant = _prepare(meter)
        ways = _ways()
        chosen = [way for way in args.ways.split(",") if way in ways]
        results: dict[str, list[dict[str, float]]] = {way: [] for way in chosen}
        backend = backend_pid()
        for round_ in range(args.rounds):
            order = chosen if round_ % 2 == 0 else list(reversed(chosen))
            for way in order:
                recorded = _record_round(tenant, f"{way}-{round_}", args.sessions, args.turns)
                figures = _measure_way(ways[way], recorded, meter, backend)
                results[way].append(figures)
                log(f"[profile] round {round_ + 1} {way}: {json.dumps(figures)}")
        _log_means(results)
        connection.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
