"""`python -m bench.search_overheads`: what a memory search spends outside the index, the
plain way against the way Engram takes, in one process, alternating.

- Query embedding: MiniLM on torch (sentence-transformers) / the same weights on ONNX
  Runtime (the default runtime); MiniLM on the query (no cache) / the per-process LRU /
  the Valkey vector shared between workers (a process whose LRU does not have it).
- Access statistics: an UPDATE of the hits in the request (the fallback without Valkey) /
  the one Valkey round trip that buffers them (the flush runs in beat).
- Serialisation of a 10-hit answer: DRF's SearchResultSerializer / `memory_data`.

Each pair runs `rounds` times alternately and reports the medians and their ratio, so
a noisy shared machine moves both sides alike. Production settings, embedded PostgreSQL
and Valkey (bench.servers), a tenant of `memories` generated memories.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

from bench.harness import command_line

ID = "OVERHEADS"
TITLE = "Memory search: time outside the index, before / after (in process)"


def _timed(action: Callable[[], Any]) -> float:
    began = time.perf_counter()
    action()
    return (time.perf_counter() - began) * 1000


def _pair(rounds: int, before: Callable[[], Any], after: Callable[[], Any]) -> dict[str, float]:
    old: list[float] = []
    new: list[float] = []
    for _ in range(rounds):
        old.append(_timed(before))
        new.append(_timed(after))
    return _medians(old, new)


def _medians(old: list[float], new: list[float]) -> dict[str, float]:
    a, b = statistics.median(old), statistics.median(new)
    return {"before_ms": round(a, 3), "after_ms": round(b, 3), "ratio": round(a / b, 1)}


def _tenant_with_memories(memories: int) -> Any:
    from memory_app.services.memories import MemoryDraft, memory_add_many
    from sessions_app.models import Tenant

    tenant = Tenant.objects.create(name=f"overheads-{time.strftime('%H%M%S')}")
    memory_add_many(
        tenant=tenant,
        drafts=[
            MemoryDraft(
                user_id="u",
                type="fact",
                content=f"Order A-{1000 + n} ships from warehouse {n % 7} on day {n % 30}",
                tags=["orders"],
            )
            for n in range(memories)
        ],
    )
    return tenant


def _embedding_runtime_pair(
    rounds: int, texts: Iterator[str], model: str
) -> tuple[str, dict[str, float]]:
    """(the default embedder's runtime, MiniLM on torch / on that runtime)."""
    from memory_app.embedding import LocalEmbedder, embedder

    torch_model = LocalEmbedder(model, 1)
    torch_model.embed(["warm up"])
    onnx_model = embedder()
    return onnx_model.runtime, _pair(
        rounds,
        lambda: torch_model.embed([next(texts)]),
        lambda: onnx_model.embed([next(texts)]),
    )


def _embedding_lru_pair(rounds: int, texts: Iterator[str]) -> dict[str, float]:
    """MiniLM on a new query / the per-process LRU's vector of a repeated one."""
    from memory_app.embedding import embed_query, embedder

    return _pair(
        rounds,
        lambda: embedder().embed([next(texts)]),
        lambda: embed_query("the same question every time"),
    )


def _embedding_valkey_pair(rounds: int, texts: Iterator[str]) -> dict[str, float]:
    """MiniLM on a new query / the Valkey vector another process computed: each round
    computes and shares a vector, empties this process's LRU, and times asking again."""
    from memory_app.embedding import _cached_query_vector, embed_query, embedder

    def shared_hit() -> None:
        text = next(texts)
        embed_query(text)  # computed and shared ...
        _cached_query_vector.cache_clear()  # ... then asked by a process without it
        began = time.perf_counter()
        embed_query(text)
        shared_ms.append((time.perf_counter() - began) * 1000)

    shared_ms: list[float] = []
    cold_ms: list[float] = []
    for _ in range(rounds):
        cold_ms.append(_timed(lambda: embedder().embed([next(texts)])))
        shared_hit()
    return _medians(cold_ms, shared_ms)


def _access_pair(rounds: int, ids: list[Any]) -> dict[str, float]:
    """An UPDATE of the hits' access statistics / the Valkey buffer."""
    from django.db import connection

    from memory_app.services.access import memory_access_record

    def update() -> None:
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE memory SET access_count = access_count + 1, last_accessed_at = now() "
                "WHERE id = ANY(%s::uuid[])",
                [[str(pk) for pk in ids]],
            )

    return _pair(rounds, update, lambda: memory_access_record(memory_ids=ids))


def _serialisation_pair(rounds: int, hits: list[Any]) -> dict[str, float]:
    """DRF's SearchResultSerializer / `memory_data` on the same hits."""
    from memory_app.api.serializers_memory import memory_data
    from memory_app.api.serializers_search import SearchResultSerializer

    body = {
        "query": "order A-1003",
        "results": [{"score": h.score, "parts": h.parts, "memory": h.memory} for h in hits],
    }
    return _pair(
        rounds,
        lambda: SearchResultSerializer(body).data,
        lambda: [
            {"score": h.score, "parts": h.parts, "memory": memory_data(h.memory)} for h in hits
        ],
    )


def measure(rounds: int, memories: int, log: Callable[[str], None]) -> dict[str, Any]:
    from memory_app.embedding import embedder
    from memory_app.selectors.memories import Actor
    from memory_app.selectors.search import memory_search

    tenant = _tenant_with_memories(memories)
    model = embedder().model_name
    texts = iter(f"when does order A-{1000 + n} ship, question {n}" for n in range(10**6))
    embedder().embed(["warm up"])
    out: dict[str, Any] = {}

    log("[overheads] query embedding: torch / ONNX Runtime")
    out["runtime"], out["embedding_onnx"] = _embedding_runtime_pair(rounds, texts, model)
    log("[overheads] query embedding")
    out["embedding_lru"] = _embedding_lru_pair(rounds, texts)
    out["embedding_valkey"] = _embedding_valkey_pair(rounds, texts)

    outcome = memory_search(tenant=tenant, actor=Actor(user_id="u"), query="order A-1003", limit=10)
    ids = [hit.memory.pk for hit in outcome.hits]
    log("[overheads] access statistics")
    out["access"] = _access_pair(rounds, ids)
    log("[overheads] serialisation")
    out["serialisation"] = _serialisation_pair(rounds, outcome.hits)
    out["hits"] = len(ids)
    out["model"] = model
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.search_overheads", description=__doc__)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--memories", type=int, default=200)
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args(argv)
    command = command_line("bench.search_overheads", argv)

    from bench.harness import BenchResult, log, record
    from bench.run import django_on_data_services

    with django_on_data_services(log):
        load_before = os.getloadavg()[0]
        figures = measure(args.rounds, args.memories, log)
        load_after = os.getloadavg()[0]
        rows = [
            (
                f"query embedding: MiniLM on torch / on {figures['runtime']}",
                figures["embedding_onnx"],
            ),
            ("query embedding: MiniLM / per-process LRU hit", figures["embedding_lru"]),
            ("query embedding: MiniLM / Valkey hit (LRU empty)", figures["embedding_valkey"]),
            ("access statistics of the hits: UPDATE / Valkey buffer", figures["access"]),
            ("serialising the answer: DRF / memory_data", figures["serialisation"]),
        ]
        table = "\n".join(
            f"| {name} | {f['before_ms']:.3f} | {f['after_ms']:.3f} | {f['ratio']:.1f}x |"
            for name, f in rows
        )
        markdown = f"""
Command: `{command}`

In process, production settings, {args.memories} memories, {figures["hits"]} hits, medians
of {args.rounds} alternating rounds; 1-minute load average {load_before:.1f} before,
{load_after:.1f} after (2 cores shared with other jobs: read the ratios).

| step of a search (before / after) | before ms | after ms | before / after |
|---|---:|---:|---:|
{table}
"""
        result = BenchResult(ID, TITLE, markdown, figures)
        path = record(result, command, update=not args.no_record)
        log(f"[overheads] {figures}; raw: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
