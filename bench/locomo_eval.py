"""`python -m bench.locomo_eval --data ../shared/eval-data/locomo-dev.json`: recall and
context retention on long real conversations (LoCoMo), through the public HTTP API.

The two protocols of ../shared/eval-data/README.md, against a gunicorn this module starts
with production settings on throwaway embedded PostgreSQL + Valkey:

- Memory recall@k: per conversation a fresh user; every turn stored with
  `POST /memories/bulk` as an episodic memory `"<speaker>: <text>"`, tagged with its
  dia_id, in a thread (one per LoCoMo session, order = the order of the adds, occurred_at
  = the session's date). Each question searched with `POST /memories/search` for that
  user; recall@k = share of the question's evidence turns in the top k. A plain BM25 over
  the same turns (no model, `bench.retrieval_baselines.BM25`) is computed in the same run.
- Context retention: per conversation one session, the turns recorded in order (A's line
  as the user message, B's as the reply; compaction runs inline: the server runs with
  CELERY_TASK_ALWAYS_EAGER, as a deployment without a worker backlog would see it), then
  `GET /sessions/{id}/context?query=<question>&budget=2000` per question. Kept = the gold
  answer (lower-cased, punctuation removed) appears in the returned messages; reported
  beside the same check on the full history and the full history's tokens.

The data is read from the path given; nothing of it is written into the repository.
Figures go to bench/RESULTS.md (section LOCOMO) and raw JSON to bench/out/.
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

from bench.harness import command_line
from bench.locomo_data import Conversation, _date, _evidence, _turn_pairs, load
from bench.percentiles import percentile
from bench.retrieval_baselines import BM25

ID = "LOCOMO"
TITLE = "Recall and context retention on LoCoMo conversations (HTTP)"
KS = (1, 5, 10, 20)
CONTEXT_BUDGET = 2000
BULK = 200

_PUNCT = re.compile(r"[^\w\s]")


# --- Measures -----------------------------------------------------------------------------


def recall_at(ranked: list[set[str]], evidence: set[str], k: int) -> float:
    found: set[str] = set()
    for ids in ranked[:k]:
        found |= ids
    return len(found & evidence) / len(evidence)


def normalise(text: str) -> str:
    return " ".join(_PUNCT.sub(" ", str(text).lower()).split())


# --- Protocols ----------------------------------------------------------------------------


def _ok(response: httpx.Response) -> httpx.Response:
    if response.is_error:
        raise RuntimeError(
            f"{response.request.method} {response.request.url}: {response.status_code} "
            f"{response.text[:500]}"
        )
    return response


def memory_items(conv: Conversation, user: str) -> list[dict[str, Any]]:
    """The memory protocol's items: every turn an episodic memory of `user`, tagged with
    its dia_id, in a thread per LoCoMo session, at the session's date when that parses."""
    items = []
    for order, turn in enumerate(conv.turns):
        item: dict[str, Any] = {
            "user_id": user,
            "type": "episodic",
            "content": f"{turn.speaker}: {turn.text}",
            "tags": [turn.dia_id[:64]],
            "thread_key": f"conversation-{conv.index}/session-{turn.session}",
            "thread_order": order,
        }
        occurred = _date(turn.date)
        if occurred:
            item["occurred_at"] = occurred
        items.append(item)
    return items


def _store_memories(
    client: httpx.Client, conv: Conversation, items: list[dict[str, Any]]
) -> dict[str, set[str]]:
    """`conv`'s memory items stored through `/memories/bulk`; the dia_ids each memory holds
    (a turn whose text another already has is merged into it)."""
    memory_dias: dict[str, set[str]] = {}
    for start in range(0, len(items), BULK):
        response = client.post("/api/v1/memories/bulk", json=items[start : start + BULK])
        _ok(response)
        for result in response.json()["results"]:
            dia = conv.turns[start + result["index"]].dia_id
            memory_dias.setdefault(result["memory_id"], set()).add(dia)
    return memory_dias


def _search_dias(
    client: httpx.Client, user: str, query: str, memory_dias: dict[str, set[str]]
) -> tuple[list[set[str]], float]:
    """The dia_ids of each hit of `query` in `user`'s memories, best first, and the
    search's milliseconds."""
    began = time.perf_counter()
    response = client.post(
        "/api/v1/memories/search", json={"query": query, "user_id": user, "limit": max(KS)}
    )
    elapsed = (time.perf_counter() - began) * 1000
    _ok(response)
    ranked = [memory_dias.get(hit["memory"]["id"], set()) for hit in response.json()["results"]]
    return ranked, elapsed


def memory_protocol(client: httpx.Client, convs: list[Conversation], run_id: str) -> dict[str, Any]:
    sums = {f"engram_r@{k}": 0.0 for k in KS} | {f"bm25_r@{k}": 0.0 for k in KS}
    latencies: list[float] = []
    per_category: dict[int, list[float]] = {}
    questions = 0
    ingest_seconds = 0.0
    for conv in convs:
        user = f"locomo-{run_id}-{conv.index}"
        items = memory_items(conv, user)
        began = time.monotonic()
        memory_dias = _store_memories(client, conv, items)
        ingest_seconds += time.monotonic() - began
        bm25 = BM25([f"{t.speaker}: {t.text}" for t in conv.turns])
        for question in conv.questions:
            evidence = _evidence(question)
            ranked, elapsed = _search_dias(client, user, question["question"], memory_dias)
            latencies.append(elapsed)
            baseline = [{conv.turns[i].dia_id} for i in bm25.top(question["question"], max(KS))]
            for k in KS:
                sums[f"engram_r@{k}"] += recall_at(ranked, evidence, k)
                sums[f"bm25_r@{k}"] += recall_at(baseline, evidence, k)
            per_category.setdefault(question["category"], []).append(
                recall_at(ranked, evidence, 10)
            )
            questions += 1
    out: dict[str, Any] = {key: round(value / questions, 4) for key, value in sums.items()}
    out |= {
        "questions": questions,
        "memories": sum(len(c.turns) for c in convs),
        "ingest_seconds": round(ingest_seconds, 1),
        "search_p50_ms": round(percentile(latencies, 50), 1),
        "search_p95_ms": round(percentile(latencies, 95), 1),
        "engram_r@10_by_category": {
            str(c): round(sum(v) / len(v), 4) for c, v in sorted(per_category.items())
        },
    }
    return out


def _record_conversation(client: httpx.Client, conv: Conversation, user: str) -> tuple[str, str]:
    """`conv` recorded turn by turn in a new session of `user`: the session's id and the
    history it holds, a line a message."""
    response = client.post("/api/v1/sessions", json={"user_id": user, "agent_id": "locomo-bench"})
    _ok(response)
    session_id = response.json()["id"]
    history: list[str] = []
    for user_message, reply in _turn_pairs(conv):
        response = client.post(
            f"/api/v1/sessions/{session_id}/turns",
            json={
                "user_message": user_message,
                "assistant_response": reply,
                "steps": [{"step_type": "response", "input_tokens": 0, "output_tokens": 0}],
            },
        )
        _ok(response)
        history.extend(part for part in (user_message, reply) if part)
    return session_id, "\n".join(history)


def session_context(
    client: httpx.Client, session_id: str, query: str, budget: int = CONTEXT_BUDGET
) -> tuple[dict[str, Any], float]:
    """The session's context for `query` within `budget` tokens, and its milliseconds."""
    began = time.perf_counter()
    response = client.get(
        f"/api/v1/sessions/{session_id}/context", params={"query": query, "budget": budget}
    )
    elapsed = (time.perf_counter() - began) * 1000
    _ok(response)
    return response.json(), elapsed


def context_protocol(
    client: httpx.Client, convs: list[Conversation], run_id: str
) -> dict[str, Any]:
    from memory_app.window.tokens import count_tokens

    answerable = kept = 0
    context_tokens: list[int] = []
    history_tokens: list[int] = []
    latencies: list[float] = []
    part_tokens: Counter[str] = Counter()
    for conv in convs:
        session_id, full = _record_conversation(client, conv, f"locomo-ctx-{run_id}-{conv.index}")
        full_norm = normalise(full)
        full_tokens = count_tokens(full)
        for question in conv.questions:
            answer = normalise(question["answer"])
            if not answer or answer not in full_norm:
                continue
            answerable += 1
            body, elapsed = session_context(client, session_id, question["question"])
            latencies.append(elapsed)
            text = normalise(" ".join(m["content"] for m in body["messages"]))
            kept += answer in text
            context_tokens.append(body["total_tokens"])
            for kind, part in body["parts"].items():
                part_tokens[kind] += part["tokens"]
            history_tokens.append(full_tokens)
    mean_context = statistics.fmean(context_tokens) if context_tokens else 0.0
    mean_history = statistics.fmean(history_tokens) if history_tokens else 0.0
    return {
        "answerable_in_full_history": answerable,
        "kept": kept,
        "kept_share": round(kept / answerable, 4) if answerable else 0.0,
        "mean_context_tokens": round(mean_context, 1),
        "mean_full_history_tokens": round(mean_history, 1),
        "context_share_of_history": round(mean_context / mean_history, 4) if mean_history else 0.0,
        "context_p50_ms": round(percentile(latencies, 50), 1),
        "context_p95_ms": round(percentile(latencies, 95), 1),
        "mean_tokens_by_kind": {
            kind: round(tokens / max(1, len(context_tokens)), 1)
            for kind, tokens in part_tokens.most_common()
        },
    }


# --- Report -------------------------------------------------------------------------------


def markdown(memory: dict[str, Any] | None, context: dict[str, Any] | None, command: str) -> str:
    lines: list[str] = []
    if memory:
        lines += [
            f"Memory protocol: {memory['questions']} questions over {memory['memories']} turns "
            f"stored as memories (ingest {memory['ingest_seconds']} s through `/memories/bulk`).",
            "",
            "| | R@1 | R@5 | R@10 | R@20 | search p50 / p95 |",
            "|---|---|---|---|---|---|",
            "| Engram (HTTP, production settings) | "
            + " | ".join(f"{memory[f'engram_r@{k}']:.3f}" for k in KS)
            + f" | {memory['search_p50_ms']} / {memory['search_p95_ms']} ms |",
            "| plain BM25 over the same turns (same run) | "
            + " | ".join(f"{memory[f'bm25_r@{k}']:.3f}" for k in KS)
            + " | |",
            "",
            f"Engram R@10 by category: {memory['engram_r@10_by_category']}",
            "",
        ]
    if context:
        lines += [
            f"Context protocol (budget {CONTEXT_BUDGET}): the answer is kept for "
            f"{context['kept']} of {context['answerable_in_full_history']} questions whose "
            f"answer the full history contains (**{context['kept_share']:.1%}**); mean context "
            f"{context['mean_context_tokens']} tokens vs full history "
            f"{context['mean_full_history_tokens']} "
            f"(**{context['context_share_of_history']:.1%}**); "
            f"context p50 / p95 {context['context_p50_ms']} / {context['context_p95_ms']} ms.",
            "",
            f"Mean context tokens by kind: {context['mean_tokens_by_kind']}",
            "",
        ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.locomo_eval", description=__doc__)
    parser.add_argument("--data", required=True, type=Path, help="locomo-dev.json")
    parser.add_argument("--protocols", default="memory,context", help="memory,context")
    parser.add_argument("--conversations", type=int, default=0, help="First N only (0 = all).")
    parser.add_argument("--no-record", action="store_true", help="Do not touch RESULTS.md.")
    args = parser.parse_args(argv)
    command = command_line("bench.locomo_eval", argv)
    protocols = {p.strip() for p in args.protocols.split(",") if p.strip()}
    convs = load(args.data)
    if args.conversations:
        convs = convs[: args.conversations]
    from bench.run import raise_on_sigterm

    signal.signal(signal.SIGTERM, raise_on_sigterm)

    from bench.harness import BenchResult, log, record
    from bench.run import api_on_gunicorn

    memory = context = None
    with api_on_gunicorn(log, tenant_name="locomo", timeout=120) as (client, run_id):
        client.post(
            "/api/v1/memories/search", json={"query": "warm up", "user_id": "nobody"}
        ).raise_for_status()
        if "memory" in protocols:
            log("[locomo] memory protocol")
            memory = memory_protocol(client, convs, run_id)
            log(f"[locomo] memory: {json.dumps(memory)}")
        if "context" in protocols:
            log("[locomo] context protocol")
            context = context_protocol(client, convs, run_id)
            log(f"[locomo] context: {json.dumps(context)}")
        # Recorded before the servers stop: the section names their versions.
        result = BenchResult(
            ID, TITLE, markdown(memory, context, command), {"memory": memory, "context": context}
        )
        path = record(result, command, update=not args.no_record)
        log(f"[locomo] raw: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
