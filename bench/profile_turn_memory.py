"""`python -m bench.profile_turn_memory [--sessions 20] [--turns 10] [--rounds 2]`: where
the time of turning recorded turns into memories goes, in process (no HTTP, no Celery),
two ways over the same kind of turns, alternating in one run:

- per turn: `conversation_remember_session` once per turn, in the order they were
  recorded, as a task per turn did (one embedding call and a transaction per turn);
- drained: every turn marked, then one `turns_remember_pending` (the queue's drain:
  batches across sessions, one embedding call and one INSERT per batch).

Each round records `--sessions` x `--turns` new turns per way (memory hooks off), then
writes their memories; printed per way: turns a second, statements and embedding calls
per turn, and the share of wall time spent embedding. Production settings on throwaway
PostgreSQL + Valkey, like `bench.profile_turns`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.profile_turn_memory")
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--turns", type=int, default=10, help="turns per session per round")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args(argv)

    from bench.harness import log
    from bench.run import django_on_data_services

    with django_on_data_services(log):
        from django.conf import settings
        from django.core.management import call_command
        from django.db import connection
        from django.test.utils import CaptureQueriesContext

        import memory_app.services.conversation as conversation
        from bench.turn_recall import LINES, _word
        from memory_app.services import turn_queue
        from memory_app.services.conversation import conversation_remember_session
        from memory_app.valkey import valkey
        from sessions_app.hooks import turn_recorded
        from sessions_app.services.api_keys import tenant_get_or_create
        from sessions_app.services.sessions import session_create
        from sessions_app.services.turns import StepInput, turn_record
        from sessions_app.usage import TokenCounts

        call_command("prepare_embedder", verbosity=0)
        settings.ENGRAM_TURN_MEMORY_LINGER_SECONDS = 0.0  # the drain ends with its work
        turn_recorded.disconnect(dispatch_uid="memory_remember_turn")  # memory and compaction
        tenant = tenant_get_or_create(name="profile-turn-memory")
        embedding = {"calls": 0, "seconds": 0.0}
        real_embed = conversation.embed_texts

        def timed_embed(texts: list[str]) -> list[list[float]]:
            began = time.perf_counter()
            try:
                return real_embed(texts)
            finally:
                embedding["calls"] += 1
                embedding["seconds"] += time.perf_counter() - began

        conversation.embed_texts = timed_embed  # type: ignore[assignment]

        def record_round(label: str) -> list[tuple[Any, int]]:
            sessions = [
                session_create(tenant=tenant, user_id=f"{label}-{i}", agent_id="bench")
                for i in range(args.sessions)
            ]
            recorded = []
            step = StepInput(step_type="response", counts=TokenCounts(10, 5))
            for n in range(args.turns):
                for index, session in enumerate(sessions):
                    line = LINES[(n + index) % len(LINES)].format(w=_word())
                    turn_record(
                        tenant=tenant,
                        session_id=session.pk,
                        steps=[step],
                        user_message=line,
                        assistant_response="Noted, I will keep that in mind.",
                    )
                    recorded.append((session.pk, n + 1))
            return recorded

        def per_turn(recorded: list[tuple[Any, int]]) -> None:
            for session_id, number in recorded:
                conversation_remember_session(session_id=session_id, up_to=number)

        def drained(recorded: list[tuple[Any, int]]) -> None:
            valkey().set(turn_queue._key("due"), 1, px=600_000)  # mark only, publish nothing
            turn_queue.turns_mark_pending(marks=recorded)
            turn_queue.turns_remember_pending()

        results: dict[str, list[dict[str, float]]] = {"per_turn": [], "drained": []}
        for round_ in range(args.rounds):
            order = ("per_turn", "drained") if round_ % 2 == 0 else ("drained", "per_turn")
            for way in order:
                recorded = record_round(f"{way}-{round_}")
                embedding.update(calls=0, seconds=0.0)
                cpu, wall = time.process_time(), time.perf_counter()
                with CaptureQueriesContext(connection) as queries:
                    (per_turn if way == "per_turn" else drained)(recorded)
                cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
                turns = len(recorded)
                figures = {
                    "turns": turns,
                    "turns_per_s": round(turns / wall, 1),
                    "cpu_ms_per_turn": round(cpu / turns * 1000, 2),
                    "statements_per_turn": round(len(queries.captured_queries) / turns, 2),
                    "embedding_calls_per_turn": round(embedding["calls"] / turns, 3),
                    "embedding_share": round(embedding["seconds"] / wall, 2),
                }
                results[way].append(figures)
                log(f"[profile] round {round_ + 1} {way}: {json.dumps(figures)}")
        summary = {
            way: round(sum(r["turns_per_s"] for r in rows) / len(rows), 1)
            for way, rows in results.items()
        }
        log(
            f"[profile] mean turns/s: per turn {summary['per_turn']}, drained "
            f"{summary['drained']} ({summary['drained'] / summary['per_turn']:.1f}x)"
        )
        connection.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
