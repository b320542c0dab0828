"""`python -m bench.search_latency_lme --longmemeval PATH [--rounds 3] [--other CHECKOUT]`:
memory search latency on the LongMemEval pool (one user's ~2,700 memories: the user
turns of every session of the dev set), in this process and over HTTP.

The pool is stored as `bench.longmemeval_retrieval` stores it (same contents, threads,
dates), through the API in this process, once per database: with DATABASE_URL set, a
second run finds the tenant `lme-latency` and reuses it; the tables are then vacuumed
and analysed, as autovacuum leaves them after a bulk add. Then each round searches the
209 questions (`as_of` = the question's date, limit 10):

- parity first: every question searched with the shipped statement and with the plain
  one (the vector step of the owner's rows without the covering index's range), in
  process; counted alike when hits, scores, parts and both rankings are equal;
- in process: `memory_search` with the query's vector computed beforehand, so the
  figure is the search's own (its statements and Python), not the embedding model's;
  the shipped and the plain statement alternated round by round;
- over HTTP: `POST /memories/search` to a gunicorn with production settings, the
  query embedded by the server, as an agent sees it. With `--other CHECKOUT` (another
  checkout's root, e.g. a `git archive` of the base commit; same migrations) a second
  gunicorn serves that code on the same database, the two alternated round by round,
  the order flipped every round.

Printed: p50 / p95 per side and the load average. Searches over HTTP count their
hits' accesses, so the two servers' scores drift apart by the access part: parity is
checked in process. Recorded in bench/RESULTS.md
(section SEARCH_LATENCY_LME) unless `--no-record`.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

from bench.harness import BenchResult, log, record
from bench.percentiles import percentile

ID = "SEARCH_LATENCY_LME"
TITLE = "Memory search latency on the LongMemEval pool (in process and HTTP)"
TENANT = "lme-latency"
USER = "lme"


def stored_tenant(path: Path) -> tuple[Any, list[dict[str, Any]]]:
    """The tenant holding the LongMemEval pool (stored now unless an earlier run did) and
    the questions."""
    from django.test import Client

    from bench.longmemeval_retrieval import load_pool
    from bench.search_pool_dump import _store
    from memory_app.models import Memory
    from sessions_app.models import Tenant
    from sessions_app.services.api_keys import api_key_create

    pool = load_pool(path)
    tenant = Tenant.objects.filter(name=TENANT).first()
    if tenant is not None and Memory.objects.filter(tenant=tenant).exists():
        log("[lme] reusing the pool an earlier run stored")
        return tenant, pool.questions
    tenant = Tenant.objects.create(name=TENANT)
    secret = api_key_create(tenant=tenant, name="store").secret
    client = Client(headers={"Authorization": f"Bearer {secret}"}, SERVER_NAME="localhost")
    began = time.monotonic()
    items = [
        {"user_id": USER, "type": "episodic", "content": text,
         "thread_key": f"session:{sid}", "thread_order": order, "occurred_at": date}
        for order, ((sid, _), text, date) in enumerate(
            zip(pool.turns, pool.texts, pool.dates, strict=True))
    ]  # fmt: skip
    _store(client, items)
    log(f"[lme] stored {len(items)} memories in {time.monotonic() - began:.0f} s")
    return tenant, pool.questions


def _settle() -> None:
    """VACUUM (ANALYZE) the memory tables, as autovacuum leaves them within a minute of a
    bulk add into a table this small. Until then the visibility map is unset and the
    owner's vectors cannot come from the covering index alone: without this the figures
    depend on whether autovacuum's minute has passed when the rounds start."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("VACUUM (ANALYZE) memory, memory_passage")


def _as_of(question: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(question["as_of"].replace("Z", "+00:00"))


def _search(tenant: Any, question: dict[str, Any], vector: list[float]) -> Any:
    from memory_app.selectors.memories import Actor
    from memory_app.selectors.search import memory_search

    return memory_search(
        tenant=tenant, actor=Actor(user_id=USER), query=question["question"], user_id=USER,
        limit=10, as_of=_as_of(question), query_embedding=vector,
    )  # fmt: skip


def in_process_round(
    tenant: Any, questions: list[dict[str, Any]], vectors: list[list[float]]
) -> list[float]:
    """One pass over the questions with `memory_search`; milliseconds per search."""
    times = []
    for question, vector in zip(questions, vectors, strict=True):
        began = time.perf_counter()
        _search(tenant, question, vector)
        times.append((time.perf_counter() - began) * 1000)
    return times


def _outcomes(
    tenant: Any, questions: list[dict[str, Any]], vectors: list[list[float]]
) -> list[Any]:
    outcomes = []
    for question, vector in zip(questions, vectors, strict=True):
        outcome = _search(tenant, question, vector)
        hits = [(hit.memory.pk, hit.score, hit.parts) for hit in outcome.hits]
        outcomes.append((hits, outcome.vector_ranking, outcome.lexical_ranking))
    return outcomes


@contextmanager
def plain_statement() -> Iterator[None]:
    """The search as it was without the covering index's range on the owner's rows
    (memory_app.selectors.search.vector, `_OWNER_ROWS`): the same statement otherwise."""
    from memory_app.selectors.search import vector

    owner_rows = vector._owner_rows
    vector._owner_rows = lambda where, branch: branch  # type: ignore[assignment]
    try:
        yield
    finally:
        vector._owner_rows = owner_rows  # type: ignore[assignment]


def parity(tenant: Any, questions: list[dict[str, Any]], vectors: list[list[float]]) -> int:
    """How many questions the shipped search and the plain statement answer alike: the
    same hits, scores and parts, the same rankings of both steps. In process, so no
    access is counted between the two."""
    shipped = _outcomes(tenant, questions, vectors)
    with plain_statement():
        plain = _outcomes(tenant, questions, vectors)
    return sum(a == b for a, b in zip(shipped, plain, strict=True))


def in_process(
    tenant: Any, questions: list[dict[str, Any]], vectors: list[list[float]], rounds: int
) -> dict[str, list[float]]:
    """The shipped search and the plain statement in process, alternated round by round,
    the order flipped every round."""
    times: dict[str, list[float]] = {"shipped": [], "plain": []}
    in_process_round(tenant, questions[:20], vectors[:20])  # warm up
    for number in range(rounds):
        order = ["shipped", "plain"] if number % 2 == 0 else ["plain", "shipped"]
        for side in order:
            with plain_statement() if side == "plain" else nullcontext():
                took = in_process_round(tenant, questions, vectors)
            times[side] += took
            _log_round(f"[in process] round {number} {side}", took)
    return times


def http_round(client: httpx.Client, questions: list[dict[str, Any]]) -> list[float]:
    """One pass over the questions with `POST /memories/search`; milliseconds each."""
    times = []
    for question in questions:
        body = {"query": question["question"], "user_id": USER, "limit": 10}
        body["as_of"] = question["as_of"]
        began = time.perf_counter()
        response = client.post("/api/v1/memories/search", json=body)
        times.append((time.perf_counter() - began) * 1000)
        response.raise_for_status()
    return times


def _log_round(what: str, took: list[float]) -> None:
    log(f"{what}: p50 {percentile(took, 50):.1f} p95 {percentile(took, 95):.1f} ms, "
        f"load {os.getloadavg()[0]:.1f}")  # fmt: skip


def _figures(times: list[float]) -> dict[str, float]:
    return {
        "p50_ms": round(percentile(times, 50), 1),
        "p95_ms": round(percentile(times, 95), 1),
        "searches": len(times),
    }


def _http(
    tenant: Any,
    env: dict[str, str],
    others: dict[str, Path],
    rounds: int,
    questions: list[dict[str, Any]],
) -> dict[str, list[float]]:
    """Each side's HTTP latencies: a gunicorn per checkout, alternated round by round."""
    from django.db import connection

    from bench.servers import Gunicorn
    from sessions_app.services.api_keys import api_key_create

    secret = api_key_create(tenant=tenant, name="latency").secret
    connection.close()
    server_env = {**os.environ, **env}
    servers = {
        side: Gunicorn(env=server_env, workers=2, threads=2, cwd=root)
        for side, root in others.items()
    }
    times: dict[str, list[float]] = {side: [] for side in others}
    for server in servers.values():
        server.start()
    try:
        clients = {
            side: httpx.Client(
                base_url=f"http://127.0.0.1:{server.port}",
                headers={"Authorization": f"Bearer {secret}"},
                timeout=60,
            )
            for side, server in servers.items()
        }
        for client in clients.values():  # warm up: the embedding model, connections
            http_round(client, questions[:20])
        for number in range(rounds):
            order = list(others) if number % 2 == 0 else list(reversed(others))
            for side in order:
                took = http_round(clients[side], questions)
                times[side] += took
                _log_round(f"[http] round {number} {side}", took)
    finally:
        for server in servers.values():
            server.stop()
    return times


def _markdown(data: dict[str, Any]) -> str:
    lines = [
        f"LongMemEval pool: {data['memories']} memories of one user, {data['questions']} "
        f"questions (`as_of` = the question's date, limit 10), {data['rounds']} rounds; "
        f"load average {data['load_before']:.1f} before, {data['load_after']:.1f} after.",
        "",
        f"Parity: {data['parity']} of {data['questions']} questions answered alike by the "
        "shipped and the plain statement (hits, scores, parts, both rankings).",
        "",
        "| path | p50 ms | p95 ms | searches |",
        "|---|---:|---:|---:|",
    ]
    for name, figures in data["results"].items():
        lines.append(
            f"| {name} | {figures['p50_ms']} | {figures['p95_ms']} | {figures['searches']} |"
        )
    lines += [
        "",
        "In process: `memory_search` with the query's vector given (the search's "
        "statements and Python); `plain`: the vector step of the owner's rows without "
        "the covering index's range, alternated with `shipped` round by round. HTTP: "
        "`POST /memories/search`, gunicorn with production settings (2 workers, 2 "
        "threads), the query embedded by the server; `other` is the checkout given with "
        "`--other`, alternated with `this` round by round.",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.search_latency_lme", description=__doc__)
    parser.add_argument("--longmemeval", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--other", type=Path, help="another checkout's root, served alternately")
    parser.add_argument("--no-http", action="store_true")
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args(argv)

    from bench.run import django_on_data_services
    from bench.servers import ROOT

    with django_on_data_services(log) as env:
        from memory_app.embedding import embed_query
        from memory_app.models import Memory

        tenant, questions = stored_tenant(args.longmemeval)
        _settle()
        vectors = [embed_query(question["question"]) for question in questions]
        load_before = os.getloadavg()[0]
        same = parity(tenant, questions, vectors)
        log(f"[lme] parity: {same} of {len(questions)} questions answered alike")
        local = in_process(tenant, questions, vectors, args.rounds)
        results = {f"in process, {side}": _figures(times) for side, times in local.items()}
        if not args.no_http:
            sides = {"this": ROOT} | ({"other": args.other.resolve()} if args.other else {})
            http = _http(tenant, env, sides, args.rounds, questions)
            results |= {f"HTTP, {side}": _figures(times) for side, times in http.items()}
        data = {
            "memories": Memory.objects.filter(tenant=tenant).count(),
            "questions": len(questions),
            "rounds": args.rounds,
            "load_before": load_before,
            "load_after": os.getloadavg()[0],
            "results": results,
            "parity": same,
        }
        for name, figures in results.items():
            log(f"[lme] {name}: p50 {figures['p50_ms']} p95 {figures['p95_ms']} ms")
        command = " ".join(["python -m bench.search_latency_lme", *(argv or sys.argv[1:])])
        result = BenchResult(ID, TITLE, _markdown(data), data)
        path = record(result, command, update=not args.no_record)
        log(f"[lme] raw: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
