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
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from bench.locomo_eval import percentile

ID = "TURN_RECALL"
TITLE = "A recorded turn recalled from another session: latency and background throughput"
LINES = [
    "We talked about the {w} trip and the hotel near the station.",
    "My sister recommended the {w} bakery on the corner, worth a try.",
    "I finally fixed the {w} bike, the chain was the problem.",
    "Remind me that the {w} meeting moved to Thursday afternoon.",
]


def _word() -> str:
    return "zq" + uuid.uuid4().hex[:10]


def _headers(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


def steady(
    base: str,
    secret: str,
    users: int,
    rate: float,
    seconds: float,
    stored: Any,
    senders: int = 24,
) -> dict[str, Any]:
    """Record turns on a fixed schedule (turn n due `n / rate` seconds after the start),
    sent by `senders` concurrent senders (each with its own keep-alive connection, as an
    agent's client), and watch, from one poller, when each turn's memory is committed
    (`stored(turns)` answers which (session, turn number) pairs have a memory); then check
    over HTTP that every 10th is found by a search, as its user, from another session's
    point of view (the memory search). What was really sent is measured, not assumed: the
    rate between the first and the last send, and how late sends started against their
    schedule (a sender busy with a slow answer makes the next turn late)."""
    sessions: dict[str, str] = {}
    for index in range(users):
        response = httpx.post(
            f"{base}/api/v1/sessions",
            json={"user_id": f"steady-{index}", "agent_id": "bench"},
            headers=_headers(secret),
            timeout=120,
        )
        response.raise_for_status()
        sessions[f"steady-{index}"] = response.json()["id"]
    total = int(rate * seconds)
    # (session, turn number) -> (word, user, when answered 201)
    acknowledged: dict[tuple[str, int], tuple[str, str, float]] = {}
    latencies: dict[tuple[str, int], float] = {}
    starts: list[float] = []
    lateness: list[float] = []
    answer_times: list[float] = []
    failures: list[str] = []
    lock = threading.Lock()
    finished = threading.Event()
    numbers = iter(range(total))
    began = [0.0]

    def send(client: httpx.Client, number: int) -> None:
        user = f"steady-{number % users}"
        word = _word()
        due = began[0] + number / rate
        wait = due - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        started = time.monotonic()
        try:
            response = client.post(
                f"/api/v1/sessions/{sessions[user]}/turns",
                json={
                    "user_message": LINES[number % len(LINES)].format(w=word),
                    "assistant_response": "Noted.",
                    "steps": [{"step_type": "response", "input_tokens": 10, "output_tokens": 5}],
                },
            )
            response.raise_for_status()
        except httpx.HTTPError as exc:  # counted and reported, never a silent gap
            with lock:
                failures.append(f"{type(exc).__name__}: {exc}"[:200])
            return
        answered = time.monotonic()
        with lock:
            acknowledged[(sessions[user], response.json()["turn"]["turn_number"])] = (
                word,
                user,
                answered,
            )
            starts.append(started)
            lateness.append(started - due)
            answer_times.append(answered - started)

    def sender() -> None:
        with httpx.Client(base_url=base, headers=_headers(secret), timeout=120) as client:
            while True:
                with lock:
                    number = next(numbers, None)
                if number is None:
                    return
                send(client, number)

    def poll() -> None:
        while not finished.is_set() or len(latencies) < len(acknowledged):
            with lock:
                waiting = {key: at for key, (_, _, at) in acknowledged.items()}
            waiting = {key: at for key, at in waiting.items() if key not in latencies}
            if waiting:
                seen = time.monotonic()
                for key in stored(list(waiting)):
                    latencies[key] = seen - waiting[key]
            if finished.is_set() and time.monotonic() - finished_at[0] > 120:
                return
            time.sleep(0.1)

    finished_at = [0.0]
    poller = threading.Thread(target=poll)
    poller.start()
    try:
        with ThreadPoolExecutor(max_workers=senders) as pool:
            began[0] = time.monotonic()
            futures = [pool.submit(sender) for _ in range(senders)]
            for future in futures:
                future.result()
    finally:  # the poller ends however the senders did
        finished_at[0] = time.monotonic()
        finished.set()
        poller.join()
    found = checked = 0
    with httpx.Client(base_url=base, headers=_headers(secret), timeout=120) as client:
        for word, user, _ in list(acknowledged.values())[::10]:
            checked += 1
            hits = client.post(
                "/api/v1/memories/search", json={"query": word, "user_id": user, "limit": 3}
            ).json()["results"]
            found += any(word in hit["memory"]["content"] for hit in hits)
    values = list(latencies.values())
    # From when the first turn was due to the last send: sends that started late and
    # then caught up do not raise it above the rate asked.
    span = max(starts) - began[0] if len(starts) > 1 else 0.0
    return {
        "turns": total,
        "rate": rate,
        "senders": senders,
        "sent_rate": round((len(starts) - 1) / span, 1) if span else None,
        "sent_in_s": round(span, 1),
        "late_p95_s": round(percentile(lateness, 95), 3),
        "answer_p50_s": round(percentile(answer_times, 50), 3),
        "answer_p95_s": round(percentile(answer_times, 95), 3),
        "failed": len(failures),
        "failures": sorted(set(failures))[:5],
        "remembered": len(values),
        "not_remembered_in_120s": len(acknowledged) - len(values),
        "p50_s": round(percentile(values, 50), 3),
        "p95_s": round(percentile(values, 95), 3),
        "max_s": round(max(values), 3) if values else None,
        "search_checked": checked,
        "search_found": found,
    }


def burst(base: str, secret: str, turns: int, database_count: Any) -> dict[str, Any]:
    with httpx.Client(base_url=base, headers=_headers(secret), timeout=120) as client:
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
                "user_message": LINES[n % len(LINES)].format(w=_word()),
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


def main(argv: list[str] | None = None) -> int:
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
    args = parser.parse_args(argv)
    command = " ".join(
        ["python -m bench.turn_recall", *(argv if argv is not None else sys.argv[1:])]
    )
    from bench.run import raise_on_sigterm

    signal.signal(signal.SIGTERM, raise_on_sigterm)

    from bench.harness import BenchResult, log, record
    from bench.run import _production_env
    from bench.servers import CeleryWorker, Gunicorn, data_services

    with data_services(log) as (database_url, redis_url):
        server_env = _production_env(database_url, redis_url)
        if args.embedding_precision:
            server_env["ENGRAM_EMBEDDING_PRECISION"] = args.embedding_precision
        os.environ.update(server_env)
        import django
        from django.core.management import call_command

        django.setup()
        from memory_app.models import Memory, MemorySource
        from sessions_app.models import Tenant
        from sessions_app.services.api_keys import api_key_create

        log("[setup] migrating")
        call_command("migrate", verbosity=0, interactive=False)
        call_command("prepare_embedder", verbosity=0)
        tenant = Tenant.objects.create(name=f"recall-{time.strftime('%H%M%S')}")
        secret = api_key_create(tenant=tenant, name="recall").secret

        def remembered() -> int:
            return Memory.objects.filter(
                tenant=tenant, source=MemorySource.CONVERSATION_TURN
            ).count()

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

        env = {**os.environ, **server_env}
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
        data = {"steady": steady_result, "burst": burst_result}
        path = record(
            BenchResult(ID, TITLE, markdown(data, command), data),
            command,
            update=not args.no_record,
        )
        log(f"[recall] raw: {path}")
        from django.db import connections

        connections.close_all()
    return 0


if __name__ == "__main__":
    sys.exit(main())
