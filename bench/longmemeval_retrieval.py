"""`python -m bench.longmemeval_retrieval --longmemeval PATH --locomo PATH`: memory search
on both dev sets in one run, through the public HTTP API, beside plain BM25 and the
z-score fusion of BM25 and MiniLM computed in this process over the same texts.

- LongMemEval, pooled turn retrieval (../shared/eval-data/README.md): every distinct
  session of the file's questions poured into ONE user's memory; each user turn (role
  user, non-empty) a memory whose content is the message, `thread_key` = `session:<id>`,
  `thread_order` = its place in the pool (sessions in date order), `occurred_at` = the
  session's date. Questions: not `_abs`, with at least one user turn marked
  `has_answer`; relevant = those turns. Each question searched with
  `POST /memories/search` for that user, `as_of` = the question's date. recall_any@k =
  some relevant turn in the top k, recall_all@k = all of them (the paper's Recall@k),
  pooled and by question type.
- LoCoMo, memory recall@k: `bench.locomo_eval.memory_protocol`, unchanged.

Baselines over the same LongMemEval turns, in this process (`bench.retrieval_baselines`):
BM25, MiniLM cosine alone (the embedding model Engram is configured with), and their z-score
fusion 0.5/0.5 (each score z-normalised over all the pool's turns). `--dump PATH` also
writes every question's top 50 with the score parts (JSONL) for offline re-ranking.

The data is read from the paths given; nothing of it is written into the repository.
Figures go to bench/RESULTS.md (section LME_RETRIEVAL) and raw JSON to bench/out/.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from bench.cross_session import _lme_date
from bench.harness import command_line
from bench.locomo_eval import _evidence, _ok, load, memory_protocol
from bench.percentiles import percentile
from bench.retrieval_baselines import BM25, embedded, ranked, zscores

ID = "LME_RETRIEVAL"
TITLE = "Memory search on both dev sets: LongMemEval pooled turns and LoCoMo (HTTP)"
K = 10
BULK = 200
DUMP_LIMIT = 50
Turn = tuple[str, int]  # (session id, index among the session's user turns)


@dataclass
class Pool:
    """The user turns of every distinct session, sessions in date order."""

    turns: list[Turn]
    texts: list[str]
    dates: list[str]  # ISO 8601, UTC
    questions: list[dict[str, Any]]  # {id, type, question, as_of, relevant: set[Turn]}


def _user_turns(messages: list[dict[str, Any]]) -> list[tuple[str, bool]]:
    return [
        (m["content"], bool(m.get("has_answer")))
        for m in messages
        if m["role"] == "user" and (m.get("content") or "").strip()
    ]


def load_pool(path: Path) -> Pool:
    entries = json.loads(path.read_text())
    sessions: dict[str, tuple[str, list[tuple[str, bool]]]] = {}
    questions = []
    for entry in entries:
        relevant: set[Turn] = set()
        for sid, date, messages in zip(
            entry["haystack_session_ids"],
            entry["haystack_dates"],
            entry["haystack_sessions"],
            strict=True,
        ):
            turns = _user_turns(messages)
            sessions.setdefault(sid, (_lme_date(date), turns))
            relevant |= {(sid, i) for i, (_, marked) in enumerate(turns) if marked}
        if entry["question_id"].endswith("_abs") or not relevant:
            continue
        questions.append(
            {
                "id": entry["question_id"],
                "type": entry["question_type"],
                "question": entry["question"],
                "as_of": _lme_date(entry["question_date"]),
                "relevant": relevant,
            }
        )
    pool = Pool([], [], [], questions)
    for sid in sorted(sessions, key=lambda s: (sessions[s][0], s)):
        date, turns = sessions[sid]
        for index, (text, _) in enumerate(turns):
            pool.turns.append((sid, index))
            pool.texts.append(text)
            pool.dates.append(date)
    return pool


# --- Baselines ------------------------------------------------------------------------------


def baselines(pool: Pool, log: Any) -> dict[str, list[list[int]]]:
    """Each question's top K turn indices by BM25, MiniLM cosine, and their z-fusion."""
    began = time.monotonic()
    documents = embedded(pool.texts)
    queries = embedded([q["question"] for q in pool.questions])
    log(f"[lme] embedded {len(documents)} turns in-process in {time.monotonic() - began:.0f} s")
    bm25 = BM25(pool.texts)
    out: dict[str, list[list[int]]] = {"bm25": [], "dense": [], "zfusion": []}
    for question, vector in zip(pool.questions, queries, strict=True):
        lexical = bm25.scores(question["question"])
        dense = [float(value) for value in documents @ vector]  # unit vectors: cosine
        fused = [0.5 * a + 0.5 * b for a, b in zip(zscores(lexical), zscores(dense), strict=True)]
        out["bm25"].append(ranked(lexical, K))
        out["dense"].append(ranked(dense, K))
        out["zfusion"].append(ranked(fused, K))
    return out


# --- Protocol -------------------------------------------------------------------------------


def pool_items(pool: Pool, user: str) -> list[dict[str, Any]]:
    """The pool as `user`'s memory items: each turn an episodic memory in its session's
    thread, at its place in the pool and its session's date."""
    return [
        {
            "user_id": user,
            "type": "episodic",
            "content": text,
            "thread_key": f"session:{sid}",
            "thread_order": order,
            "occurred_at": date,
        }
        for order, ((sid, _), text, date) in enumerate(
            zip(pool.turns, pool.texts, pool.dates, strict=True)
        )
    ]


def ingest(client: httpx.Client, pool: Pool, user: str, log: Any) -> dict[str, set[Turn]]:
    """The pool stored as `user`'s memories; which turns each memory holds (a turn whose
    text another already has is merged into it)."""
    items = pool_items(pool, user)
    held: dict[str, set[Turn]] = defaultdict(set)
    for start in range(0, len(items), BULK):
        response = _ok(client.post("/api/v1/memories/bulk", json=items[start : start + BULK]))
        for result in response.json()["results"]:
            held[result["memory_id"]].add(pool.turns[start + result["index"]])
        log(f"[lme] stored {min(start + BULK, len(items))}/{len(items)} turns")
    return held


def search(
    client: httpx.Client, user: str, question: dict[str, Any], limit: int
) -> tuple[list[dict[str, Any]], float]:
    body = {"query": question["question"], "user_id": user, "limit": limit}
    if question["as_of"]:
        body["as_of"] = question["as_of"]
    began = time.perf_counter()
    response = _ok(client.post("/api/v1/memories/search", json=body))
    return response.json()["results"], (time.perf_counter() - began) * 1000


def recall(found: list[set[Turn]], relevant: set[Turn]) -> tuple[float, float]:
    """(recall_any, recall_all) of the ranked turn sets."""
    seen: set[Turn] = set().union(*found) if found else set()
    return float(bool(seen & relevant)), float(relevant <= seen)


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    systems = [key[:-4] for key in rows[0] if key.endswith("_any")]
    by_type: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_type[row["type"]].append(row)

    def means(group: list[dict[str, Any]]) -> dict[str, float]:
        return {
            f"{name}_{kind}": round(sum(r[f"{name}_{kind}"] for r in group) / len(group), 4)
            for name in systems
            for kind in ("any", "all")
        }

    return {
        "questions": len(rows),
        "pooled": means(rows),
        "by_type": {
            kind: {"questions": len(group), **means(group)}
            for kind, group in sorted(by_type.items())
        },
    }


def lme_protocol(
    client: httpx.Client, pool: Pool, run_id: str, log: Any, dump: Path | None
) -> dict[str, Any]:
    user = f"lme-{run_id}"
    began = time.monotonic()
    held = ingest(client, pool, user, log)
    ingest_seconds = time.monotonic() - began
    log(f"[lme] {len(pool.turns)} turns stored as {len(held)} memories in {ingest_seconds:.0f} s")
    base = baselines(pool, log)
    rows, latencies = [], []
    for n, question in enumerate(pool.questions):
        hits, ms = search(client, user, question, K)
        latencies.append(ms)
        row: dict[str, Any] = {"id": question["id"], "type": question["type"]}
        found = [held.get(hit["memory"]["id"], set()) for hit in hits]
        row["engram_any"], row["engram_all"] = recall(found, question["relevant"])
        for name, lists in base.items():
            turns = [{pool.turns[i]} for i in lists[n]]
            row[f"{name}_any"], row[f"{name}_all"] = recall(turns, question["relevant"])
        rows.append(row)
        if dump is not None:
            _dump(dump, "lme", question, client, user, held)
        if (n + 1) % 50 == 0:
            log(f"[lme] {n + 1}/{len(pool.questions)} questions")
    out = summarise(rows)
    out |= {
        "memories": len(held),
        "turns": len(pool.turns),
        "sessions": len({sid for sid, _ in pool.turns}),
        "ingest_seconds": round(ingest_seconds, 1),
        "search_p50_ms": round(percentile(latencies, 50), 1),
        "search_p95_ms": round(percentile(latencies, 95), 1),
    }
    return out


def _dump(
    path: Path,
    dataset: str,
    question: dict[str, Any],
    client: httpx.Client,
    user: str,
    held: dict[str, set[Turn]] | None,
) -> None:
    """The question's top DUMP_LIMIT with their parts, for offline re-ranking."""
    hits, _ = search(client, user, question, DUMP_LIMIT)
    record = {
        "dataset": dataset,
        "id": question["id"],
        "type": question["type"],
        "question": question["question"],
        "relevant": sorted(map(list, question["relevant"])),
        "hits": [
            {
                "parts": hit["parts"],
                "score": hit["score"],
                "thread": hit["memory"]["thread_key"],
                "occurred_at": hit["memory"]["occurred_at"],
                "chars": len(hit["memory"]["content"]),
                "turns": (
                    sorted(map(list, held.get(hit["memory"]["id"], set())))
                    if held is not None
                    else [[tag, 0] for tag in hit["memory"]["tags"]]
                ),
            }
            for hit in hits
        ],
    }
    with path.open("a") as out:
        out.write(json.dumps(record) + "\n")


def locomo_dump(client: httpx.Client, path: Path, data: Path, run_id: str) -> None:
    """LoCoMo's questions again at DUMP_LIMIT (memory_protocol's users and tags)."""
    for conv in load(data):
        user = f"locomo-{run_id}-{conv.index}"
        for n, q in enumerate(conv.questions):
            question = {
                "id": f"{conv.index}-{n}",
                "type": str(q["category"]),
                "question": q["question"],
                "as_of": None,
                "relevant": {(dia, 0) for dia in _evidence(q)},
            }
            _dump(path, "locomo", question, client, user, None)


# --- Report ---------------------------------------------------------------------------------

NAMES = {
    "engram": "Engram (HTTP, production settings)",
    "bm25": "plain BM25 over the same turns (in-process)",
    "dense": "MiniLM dense alone (in-process)",
    "zfusion": "z-score fusion of BM25 and MiniLM, 0.5/0.5 (in-process)",
}


def markdown(lme: dict[str, Any] | None, locomo: dict[str, Any] | None, command: str) -> str:
    lines: list[str] = []
    if lme:
        pooled = lme["pooled"]
        lines += [
            f"LongMemEval dev half, pooled turn retrieval: {lme['questions']} questions over "
            f"{lme['turns']} user turns of {lme['sessions']} sessions in one user's memory "
            f"({lme['memories']} memories; ingest {lme['ingest_seconds']} s), `as_of` = the "
            f"question's date; search p50 / p95 **{lme['search_p50_ms']} / "
            f"{lme['search_p95_ms']} ms** over HTTP.",
            "",
            f"| | recall_any@{K} | recall_all@{K} |",
            "|---|---|---|",
        ]
        for key, name in NAMES.items():
            lines.append(f"| {name} | {pooled[f'{key}_any']:.3f} | {pooled[f'{key}_all']:.3f} |")
        lines += [
            "",
            f"By question type, recall_all@{K} (recall_any@{K}):",
            "",
            "| type | n | " + " | ".join(NAMES) + " |",
            "|---|---|" + "---|" * len(NAMES),
        ]
        for kind, row in lme["by_type"].items():
            cells = " | ".join(f"{row[f'{k}_all']:.3f} ({row[f'{k}_any']:.3f})" for k in NAMES)
            lines.append(f"| {kind} | {row['questions']} | {cells} |")
        lines.append("")
    if locomo:
        lines += [
            f"LoCoMo dev, memory protocol (`bench.locomo_eval`): {locomo['questions']} "
            f"questions over {locomo['memories']} turns.",
            "",
            "| | R@5 | R@10 | search p50 / p95 |",
            "|---|---|---|---|",
            f"| Engram (HTTP) | {locomo['engram_r@5']:.3f} | {locomo['engram_r@10']:.3f} | "
            f"{locomo['search_p50_ms']} / {locomo['search_p95_ms']} ms |",
            f"| plain BM25 | {locomo['bm25_r@5']:.3f} | {locomo['bm25_r@10']:.3f} | |",
            "",
            f"Engram R@10 by category: {locomo['engram_r@10_by_category']}",
            "",
        ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.longmemeval_retrieval", description=__doc__
    )
    parser.add_argument("--longmemeval", type=Path, help="longmemeval-dev.json")
    parser.add_argument("--locomo", type=Path, help="locomo-dev.json")
    parser.add_argument("--no-record", action="store_true", help="Do not touch RESULTS.md.")
    parser.add_argument("--dump", type=Path, help="Write each question's top 50 here (JSONL).")
    args = parser.parse_args(argv)
    command = command_line("bench.longmemeval_retrieval", argv)
    if not (args.longmemeval or args.locomo):
        parser.error("give --longmemeval and/or --locomo")
    from bench.run import raise_on_sigterm

    signal.signal(signal.SIGTERM, raise_on_sigterm)
    if args.dump and args.dump.exists():
        args.dump.unlink()

    from bench.harness import BenchResult, log, record
    from bench.run import api_on_gunicorn

    lme = locomo = None
    with api_on_gunicorn(log, tenant_name="lme", timeout=300) as (client, run_id):
        _ok(client.post("/api/v1/memories/search", json={"query": "warm up", "user_id": "x"}))
        if args.longmemeval:
            log("[lme] pooled turn retrieval")
            lme = lme_protocol(client, load_pool(args.longmemeval), run_id, log, args.dump)
            log(f"[lme] {json.dumps(lme)}")
        if args.locomo:
            log("[locomo] memory protocol")
            locomo = memory_protocol(client, load(args.locomo), run_id)
            log(f"[locomo] {json.dumps(locomo)}")
            if args.dump:
                locomo_dump(client, args.dump, args.locomo, run_id)
        # Recorded before the servers stop: the section names their versions.
        result = BenchResult(
            ID, TITLE, markdown(lme, locomo, command), {"longmemeval": lme, "locomo": locomo}
        )
        path = record(result, command, update=not args.no_record)
        log(f"[lme] raw: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
