"""`python -m bench.turn_recall`: how soon a recorded turn can be recalled from another
session, and how many turns a second the background work turns into memories.

Against gunicorn (production settings) and a real Celery worker (prefork, 2 processes,
as `make run` starts it) on throwaway embedded PostgreSQL + Valkey:

1. Steady: `--users` agents record turns at `--rate` turns a second in all
   (`POST /sessions/{id}/turns`), turn n due `n / rate` seconds after the start, sent by
   `--senders` concurrent senders with a keep-alive connection each; each turn says a
   word of its own. The rate really sent (first to last send) and how late sends started
   are reported beside the rate asked. One poller looks every 100 ms for the turns'
   memories: the delay from a turn's 201 to its memory being committed (and so found by
   any search of its user) is its recall latency (p50 / p95). Every 10th turn is then
   searched for over HTTP as its user.
2. Burst: `--burst` turns recorded as fast as the web takes them (`POST /turns/batch`
   of 50), then the time until the last of them is a memory: the background work's
   turns a second.

Figures go to bench/RESULTS.md (section TURN_RECALL) and raw JSON to bench/out/.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from collections.abc import Callable
from typing import Any

import httpx

from bench.harness import command_line
from bench.turn_recall_steady import LINES, auth_headers, steady, unique_word

ID = "TURN_RECALL"
TITLE = "A recorded turn recalled from another session: latency and background throughput"


def burst(base: str, secret: str, turns: int, database_count: Any) -> dict[str, Any]:
    with httpx.Client(base_url=base, headers=auth_headers(secret), timeout=120) as client:
        ids = []
        for index in range(10):
            response = client.post(
                "/api/v1/sessions", json={"user_id": f"burst-{index}", "agent_id": "bench"}
            )
            response.raise_for_status()
            ids.append(response.json()["id"])
        before = database_count()
        load_before = os.getloadavg()[0]
        began = time.monotonic()
        items = [
            {
                "session_id": ids[n % len(ids)],
                "user_message": LINES[n % len(LINES)].format(w=unique_word()),
                "assistant_response": "Noted, I will keep that in mind for later.",
                "steps": [{"step_type": "response", "input_tokens": 10, "output_tokens": 5}],
            }
            for n in range(turns)
        ]
        for start in range(0, turns, 50):
            client.post("/api/v1/turns/batch", json={"turns": items[start : start + 50]})
        recorded = time.monotonic() - began
    while database_count() - before < turns and time.monotonic() - began < 600:
        time.sleep(0.2)
    elapsed = time.monotonic() - began
    written = database_count() - before
    return {
        "turns": turns,
        "recorded_per_s": round(turns / recorded, 1),
        "recording_s": round(recorded, 2),
        "until_all_remembered_s": round(elapsed, 2),
        "remembered": written,
        "turns_per_s": round(written / elapsed, 1),
        # The machine's 1-minute load average (other users included) before and after.
        "load": [round(load_before, 1), round(os.getloadavg()[0], 1)],
    }


def markdown(result: dict[str, Any], command: str) -> str:
    s, b = result["steady"], result["burst"]
    reached = s["sent_rate"] is not None and s["sent_rate"] >= 0.95 * s["rate"]
    rate = (
        f"Steady {s['rate']} turns/s asked, **{s['sent_rate']} turns/s sent** "
        f"({s['turns']} turns in {s['sent_in_s']} s by {s['senders']} concurrent senders; "
        f"a send started {s['late_p95_s']} s behind its schedule at p95; a turn answered "
        f"201 in p50 {s['answer_p50_s']} s, p95 {s['answer_p95_s']} s)"
    )
    if s["failed"]:
        rate += f"; {s['failed']} turns failed (not counted)"
    if not reached:
        rate += "; **the asked rate was not reached**, so the figures below are at the rate sent"
    return (
        f"{rate}: each turn's memory committed, so recallable from any session of its user, "
        f"after p50 **{s['p50_s']} s**, p95 **{s['p95_s']} s** from its 201 (max "
        f"{s['max_s']} s; {s['not_remembered_in_120s']} not within 120 s); a search as the "
        f"user found {s['search_found']} of {s['search_checked']} checked (every 10th).\n\n"
        f"Burst of {b['turns']} turns (batches of 50, recorded in {b['recording_s']} s, "
        f"{b['recorded_per_s']} turns/s): all remembered after {b['until_all_remembered_s']} "
        f"s, **{b['turns_per_s']} turns/s** from the first recording to the last memory "
        "(web and worker sharing the machine; load average "
        f"{' -> '.join(str(x) for x in b.get('load', ['?']))}).\n"
    )


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.turn_recall", description=__doc__)
    parser.add_argument("--rate", type=float, default=20.0)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--users", type=int, default=20)
    parser.add_argument("--senders", type=int, default=24, help="concurrent senders (steady)")
    parser.add_argument("--burst", type=int, default=1000)
    parser.add_argument("--no-record", action="store_true")
    parser.add_argument(
        "--embedding-precision",
        choices=("fp32", "int8"),
        help="ENGRAM_EMBEDDING_PRECISION for the servers (default: the setting's)",
    )
    return parser.parse_args(argv)


def _memory_probes(tenant: Any) -> tuple[Callable[[], int], Callable[..., Any]]:
    """(remembered, stored) for the tenant's memories of conversation turns: how many
    there are, and which of the given (session, turn number) pairs have one."""
    from memory_app.models import Memory, MemorySource

    def remembered() -> int:
        return Memory.objects.filter(tenant=tenant, source=MemorySource.CONVERSATION_TURN).count()

    def stored(turns: list[tuple[str, int]]) -> list[tuple[str, int]]:
        sessions = {session for session, _ in turns}
        rows = Memory.objects.filter(
            tenant=tenant,
            source=MemorySource.CONVERSATION_TURN,
            session_id__in=sessions,
            thread_order__gte=min(number for _, number in turns),
        ).values_list("session_id", "thread_order")
        found = {(str(session), number) for session, number in rows}
        return [turn for turn in turns if turn in found]

    return remembered, stored


def _measure(
    args: argparse.Namespace, env: dict[str, str], secret: str, tenant: Any
) -> dict[str, Any]:
    """A warm-up, the steady run and the burst against gunicorn and a Celery worker."""
    from bench.harness import log
    from bench.servers import CeleryWorker, Gunicorn

    remembered, stored = _memory_probes(tenant)
    with Gunicorn(env=env, workers=2, threads=8) as server, CeleryWorker(env=env):
        base = f"http://127.0.0.1:{server.port}"
        log("[recall] warming up")
        steady(base, secret, 1, 2.0, 3.0, stored, senders=2)
        log(f"[recall] steady {args.rate} turns/s for {args.seconds} s")
        steady_result = steady(
            base, secret, args.users, args.rate, args.seconds, stored, args.senders
        )
        log(f"[recall] steady: {json.dumps(steady_result)}")
        log(f"[recall] burst of {args.burst} turns")
        burst_result = burst(base, secret, args.burst, remembered)
        log(f"[recall] burst: {json.dumps(burst_result)}")
    return {"steady": steady_result, "burst": burst_result}


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    command = command_line("bench.turn_recall", argv)
    from bench.run import raise_on_sigterm

    signal.signal(signal.SIGTERM, raise_on_sigterm)

    from bench.harness import BenchResult, log, record
    from bench.run import django_on_data_services

    if args.embedding_precision:  # for the servers too: they inherit this environment
        os.environ["ENGRAM_EMBEDDING_PRECISION"] = args.embedding_precision
    with django_on_data_services(log) as server_env:
        from django.core.management import call_command

        from sessions_app.models import Tenant
        from sessions_app.services.api_keys import api_key_create

        call_command("prepare_embedder", verbosity=0)
        tenant = Tenant.objects.create(name=f"recall-{time.strftime('%H%M%S')}")
        secret = api_key_create(tenant=tenant, name="recall").secret
        data = _measure(args, {**os.environ, **server_env}, secret, tenant)
        path = record(
            BenchResult(ID, TITLE, markdown(data, command), data),
            command,
            update=not args.no_record,
        )
        log(f"[recall] raw: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
