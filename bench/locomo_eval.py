"""`python -m bench.locomo_eval --data ../shared/eval-data/locomo-dev.json`: recall and
context retention on long real conversations (LoCoMo), through the public HTTP API.

The two protocols of ../shared/eval-data/README.md, against a gunicorn this module starts
with production settings on throwaway embedded PostgreSQL + Valkey:

- Memory recall@k: per conversation a fresh user; every turn stored with
  `POST /memories/bulk` as an episodic memory `"<speaker>: <text>"`, tagged with its
  dia_id, in a thread (one per LoCoMo session, order = the order of the adds, occurred_at
  = the session's date). Each question searched with `POST /memories/search` for that
  user; recall@k = share of the question's evidence turns in the top k. A plain BM25 over
  the same turns (no model, this module's own 30 lines) is computed in the same run.
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
import math
import re
import signal
import statistics
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

ID = "LOCOMO"
TITLE = "Recall and context retention on LoCoMo conversations (HTTP)"
KS = (1, 5, 10, 20)
CONTEXT_BUDGET = 2000
BULK = 200

_WORD = re.compile(r"[a-z0-9]+")
_PUNCT = re.compile(r"[^\w\s]")


# --- Data ---------------------------------------------------------------------------------


@dataclass
class Turn:
    dia_id: str
    speaker: str
    text: str
    session: int
    date: str


@dataclass
class Conversation:
    index: int
    speaker_a: str
    speaker_b: str
    turns: list[Turn]
    questions: list[dict[str, Any]] = field(default_factory=list)


def load(path: Path) -> list[Conversation]:
    """Conversations with their turns in order and the questions that carry evidence
    (categories 1-4; 5 is adversarial, no answer)."""
    out = []
    for index, raw in enumerate(json.loads(path.read_text())):
        conv = raw["conversation"]
        numbers = sorted(
            int(key.split("_")[1])
            for key in conv
            if re.fullmatch(r"session_\d+", key) and isinstance(conv[key], list)
        )
        turns = [
            Turn(t["dia_id"], t["speaker"], t["text"], n, conv.get(f"session_{n}_date_time", ""))
            for n in numbers
            for t in conv[f"session_{n}"]
        ]
        questions = [
            q for q in raw["qa"] if q.get("category") in (1, 2, 3, 4) and q.get("evidence")
        ]
        out.append(Conversation(index, conv["speaker_a"], conv["speaker_b"], turns, questions))
    return out


def _date(text: str) -> str | None:
    """LoCoMo dates look like '1:56 pm on 8 May, 2023'."""
    try:
        return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").isoformat() + "Z"
    except ValueError:
        return None


def _evidence(question: dict[str, Any]) -> set[str]:
    # A few evidence entries hold several ids ("D8:6; D9:17"); split them.
    return {part.strip() for item in question["evidence"] for part in re.split(r"[;,]", item)}


# --- Plain BM25 baseline ------------------------------------------------------------------


class BM25:
    """Okapi BM25 (k1 = 1.5, b = 0.75) over lower-cased word tokens, no stemming, no stop
    words: the baseline any search should beat."""

    def __init__(self, documents: list[str], k1: float = 1.5, b: float = 0.75) -> None:
        self.docs = [Counter(_WORD.findall(doc.lower())) for doc in documents]
        self.lengths = [sum(doc.values()) for doc in self.docs]
        self.avg = sum(self.lengths) / max(1, len(self.docs))
        df: Counter[str] = Counter()
        for doc in self.docs:
            df.update(doc.keys())
        n = len(self.docs)
        self.idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}
        self.k1, self.b = k1, b

    def top(self, query: str, k: int) -> list[int]:
        terms = set(_WORD.findall(query.lower()))
        scores = []
        for index, doc in enumerate(self.docs):
            norm = self.k1 * (1 - self.b + self.b * self.lengths[index] / self.avg)
            score = sum(
                self.idf[t] * doc[t] * (self.k1 + 1) / (doc[t] + norm) for t in terms if t in doc
            )
            if score > 0:
                scores.append((score, index))
        scores.sort(key=lambda pair: (-pair[0], pair[1]))
        return [index for _, index in scores[:k]]


# --- Measures -----------------------------------------------------------------------------


def recall_at(ranked: list[set[str]], evidence: set[str], k: int) -> float:
    found: set[str] = set()
    for ids in ranked[:k]:
        found |= ids
    return len(found & evidence) / len(evidence)


def percentile(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, math.ceil(p / 100 * len(ordered)) - 1))
    return ordered[rank]


def normalise(text: str) -> str:
    return " ".join(_PUNCT.sub(" ", str(text).lower()).split())


def _turn_pairs(conv: Conversation) -> Iterator[tuple[str, str]]:
    """A's line as the user message, B's as the reply; a speaker talking twice in a row
    makes a turn with the other side blank."""
    pending: str | None = None
    for turn in conv.turns:
        line = f"{turn.speaker}: {turn.text}"
        if turn.speaker == conv.speaker_a:
            if pending is not None:
                yield pending, ""
            pending = line
        else:
            yield pending or "", line
            pending = None
    if pending is not None:
        yield pending, ""


# --- Protocols ----------------------------------------------------------------------------


def _ok(response: httpx.Response) -> httpx.Response:
    if response.is_error:
        raise RuntimeError(
            f"{response.request.method} {response.request.url}: {response.status_code} "
            f"{response.text[:500]}"
        )
    return response


def memory_protocol(client: httpx.Client, convs: list[Conversation], run_id: str) -> dict[str, Any]:
    sums = {f"engram_r@{k}": 0.0 for k in KS} | {f"bm25_r@{k}": 0.0 for k in KS}
    latencies: list[float] = []
    per_category: dict[int, list[float]] = {}
    questions = 0
    ingest_seconds = 0.0
    for conv in convs:
        user = f"locomo-{run_id}-{conv.index}"
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
        memory_dias: dict[str, set[str]] = {}
        began = time.monotonic()
        for start in range(0, len(items), BULK):
            response = client.post("/api/v1/memories/bulk", json=items[start : start + BULK])
            _ok(response)
            for result in response.json()["results"]:
                dia = conv.turns[start + result["index"]].dia_id
                memory_dias.setdefault(result["memory_id"], set()).add(dia)
        ingest_seconds += time.monotonic() - began
        bm25 = BM25([f"{t.speaker}: {t.text}" for t in conv.turns])
        for question in conv.questions:
            evidence = _evidence(question)
            began = time.perf_counter()
            response = client.post(
                "/api/v1/memories/search",
                json={"query": question["question"], "user_id": user, "limit": max(KS)},
            )
            latencies.append((time.perf_counter() - began) * 1000)
            _ok(response)
            ranked = [
                memory_dias.get(hit["memory"]["id"], set()) for hit in response.json()["results"]
            ]
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
        response = client.post(
            "/api/v1/sessions",
            json={"user_id": f"locomo-ctx-{run_id}-{conv.index}", "agent_id": "locomo-bench"},
        )
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
        full = "\n".join(history)
        full_norm = normalise(full)
        full_tokens = count_tokens(full)
        for question in conv.questions:
            answer = normalise(question["answer"])
            if not answer or answer not in full_norm:
                continue
            answerable += 1
            began = time.perf_counter()
            response = client.get(
                f"/api/v1/sessions/{session_id}/context",
                params={"query": question["question"], "budget": CONTEXT_BUDGET},
            )
            latencies.append((time.perf_counter() - began) * 1000)
            _ok(response)
            body = response.json()
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
    command = " ".join(
        ["python -m bench.locomo_eval", *(argv if argv is not None else sys.argv[1:])]
    )
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
