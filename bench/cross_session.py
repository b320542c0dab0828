"""`python -m bench.cross_session --locomo PATH --longmemeval PATH`: does a new session
remember what the user said in earlier ones? Both "context across sessions" protocols of
../shared/eval-data/README.md, through the public HTTP API, against a gunicorn this module
starts with production settings on throwaway embedded PostgreSQL + Valkey (background
work inline: CELERY_TASK_ALWAYS_EAGER, as a deployment without a worker backlog sees it).

- LoCoMo: per conversation one user; each LoCoMo session recorded as its own Engram
  session of that user, in order (A's line as the user message, B's as the reply), with
  the session's date as the turns' `occurred_at`; every question whose answer is verbatim
  in the whole history asked from a NEW session of that user
  (`GET …/context?query=<question>&budget=2000`).
- LongMemEval: per question (not `_abs`, answer verbatim in its evidence sessions, up to
  `--per-type` of each type) a fresh user; its evidence sessions plus 10 other sessions
  of the file (a fixed seed) in date order, each an Engram session (a turn per
  user/assistant pair, the session's date as the turns' time); then the question from a
  new session.

Kept = the gold answer (lower-cased, punctuation removed) appears in the returned
messages. Baseline in the same run: BM25 over the user's raw lines (every message), best
first, packed into the same budget at 4 characters a token. A session's turns are sent
in one `POST /turns/batch` (the same service as the single route; `--single` sends them
one by one). The data is read from the paths given; nothing of it is written into the
repository. Figures go to bench/RESULTS.md (section CROSS_SESSION) and raw JSON to
bench/out/.
"""

from __future__ import annotations

import argparse
import json
import random
import signal
import statistics
import sys
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

from bench.harness import command_line
from bench.locomo_data import Conversation, _date, _turn_pairs, load
from bench.locomo_eval import _ok, normalise, session_context
from bench.percentiles import percentile
from bench.retrieval_baselines import BM25

ID = "CROSS_SESSION"
TITLE = "A new session remembers earlier sessions (LoCoMo, LongMemEval; HTTP)"
BUDGET = 2000
CHARS_PER_TOKEN = 4
DISTRACTORS = 10
SEED = 7
MISSES: Path | None = None  # --misses: where the questions Engram missed are written


@dataclass
class Session:
    date: str  # ISO 8601 with a time zone
    pairs: list[tuple[str, str]]


@dataclass
class Case:
    """One user's history and the questions asked of it."""

    name: str
    sessions: list[Session]
    questions: list[dict[str, Any]]  # {question, answer, type}


# --- Data -----------------------------------------------------------------------------------


def locomo_cases(path: Path) -> list[Case]:
    cases = []
    for conv in load(path):
        by_session: dict[int, list[Any]] = defaultdict(list)
        for turn in conv.turns:
            by_session[turn.session].append(turn)
        sessions = []
        for number in sorted(by_session):
            turns = by_session[number]
            part = Conversation(conv.index, conv.speaker_a, conv.speaker_b, turns)
            sessions.append(Session(_date(turns[0].date) or "", list(_turn_pairs(part))))
        questions = [
            {"question": q["question"], "answer": str(q["answer"]), "type": str(q["category"])}
            for q in conv.questions
        ]
        cases.append(Case(f"locomo-{conv.index}", sessions, questions))
    return cases


def _lme_date(text: str) -> str:
    return datetime.strptime(text[:10] + text[-6:], "%Y/%m/%d %H:%M").isoformat() + "Z"


def _lme_pairs(messages: list[dict[str, Any]]) -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = []
    pending: str | None = None
    for message in messages:
        content = message.get("content") or ""
        if message["role"] == "user":
            if pending is not None:
                pairs.append((pending, ""))
            pending = content
        else:
            pairs.append((pending or "", content))
            pending = None
    if pending is not None:
        pairs.append((pending, ""))
    return pairs


def longmemeval_cases(path: Path, per_type: int) -> list[Case]:
    """Questions not `_abs` whose answer is verbatim in their evidence, up to `per_type`
    of each type (file order), each with 10 distractor sessions of other questions."""
    entries = json.loads(path.read_text())
    pool: dict[str, tuple[str, list[dict[str, Any]]]] = {}
    for entry in entries:
        for sid, date, messages in zip(
            entry["haystack_session_ids"],
            entry["haystack_dates"],
            entry["haystack_sessions"],
            strict=True,
        ):
            pool[sid] = (date, messages)
    rng = random.Random(SEED)
    taken: Counter[str] = Counter()
    cases = []
    for entry in entries:
        kind = entry["question_type"]
        if entry["question_id"].endswith("_abs") or taken[kind] >= per_type:
            continue
        own = list(entry["haystack_session_ids"])
        history = " ".join(m.get("content") or "" for sid in own for m in pool[sid][1])
        answer = str(entry["answer"])
        if not normalise(answer) or normalise(answer) not in normalise(history):
            continue
        taken[kind] += 1
        others = sorted(sid for sid in pool if sid not in own)
        chosen = own + rng.sample(others, DISTRACTORS)
        chosen.sort(key=lambda sid: (pool[sid][0], sid))
        sessions = [Session(_lme_date(pool[sid][0]), _lme_pairs(pool[sid][1])) for sid in chosen]
        question = {"question": entry["question"], "answer": answer, "type": kind}
        cases.append(Case(f"lme-{entry['question_id']}", sessions, [question]))
    return cases


# --- Protocol -------------------------------------------------------------------------------


def _lines(case: Case) -> list[str]:
    return [text for session in case.sessions for pair in session.pairs for text in pair if text]


def bm25_packed(lines: list[str], bm25: BM25, query: str) -> str:
    """The user's raw lines, best BM25 first, while they fit the budget."""
    room = BUDGET * CHARS_PER_TOKEN
    kept = []
    for index in bm25.top(query, len(lines)):
        if len(lines[index]) <= room:
            kept.append(lines[index])
            room -= len(lines[index]) + 1
    return "\n".join(kept)


def _record(client: httpx.Client, session_id: str, session: Session, single: bool) -> None:
    turns = [
        {
            "session_id": session_id,
            "user_message": user,
            "assistant_response": reply,
            "occurred_at": session.date,
            "steps": [{"step_type": "response", "input_tokens": 0, "output_tokens": 0}],
        }
        for user, reply in session.pairs
    ]
    if single:
        for turn in turns:
            body = {k: v for k, v in turn.items() if k != "session_id"}
            _ok(client.post(f"/api/v1/sessions/{session_id}/turns", json=body))
        return
    for start in range(0, len(turns), 200):
        response = _ok(
            client.post("/api/v1/turns/batch", json={"turns": turns[start : start + 200]})
        )
        bad = [r for r in response.json()["results"] if r["status"] != 201]
        if bad:
            raise RuntimeError(f"batch items refused: {bad[:3]}")


def _new_session(client: httpx.Client, user: str) -> str:
    response = _ok(client.post("/api/v1/sessions", json={"user_id": user, "agent_id": "bench"}))
    return response.json()["id"]


def _write_miss(
    path: Path, question: dict[str, Any], bm25_kept: bool, body: dict[str, Any]
) -> None:
    """A question whose answer Engram's context missed, with what the context held."""
    with path.open("a") as misses:
        misses.write(
            json.dumps(
                {
                    "question": question["question"],
                    "answer": question["answer"],
                    "bm25_kept": bm25_kept,
                    "included": body["included"],
                    "excluded": body["excluded"][:40],
                    "messages": body["messages"],
                }
            )
            + "\n"
        )


def run_case(client: httpx.Client, case: Case, run_id: str, single: bool) -> list[dict[str, Any]]:
    from memory_app.window.tokens import count_tokens

    user = f"{case.name}-{run_id}"
    for session in case.sessions:
        _record(client, _new_session(client, user), session, single)
    lines = _lines(case)
    history = "\n".join(lines)
    history_norm = normalise(history)
    history_tokens = count_tokens(history)
    bm25 = BM25(lines)
    out = []
    for question in case.questions:
        answer = normalise(question["answer"])
        if not answer or answer not in history_norm:
            continue
        session_id = _new_session(client, user)
        body, elapsed = session_context(client, session_id, question["question"], BUDGET)
        text = normalise(" ".join(m["content"] for m in body["messages"]))
        baseline = normalise(bm25_packed(lines, bm25, question["question"]))
        if MISSES is not None and answer not in text:
            _write_miss(MISSES, question, answer in baseline, body)
        out.append(
            {
                "type": question["type"],
                "kept": answer in text,
                "bm25_kept": answer in baseline,
                "tokens": body["total_tokens"],
                "history_tokens": history_tokens,
                "ms": elapsed,
                "parts": {k: v["tokens"] for k, v in body["parts"].items()},
            }
        )
    return out


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    if not rows:
        return {"questions": 0}
    by_type: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_type[row["type"]].append(row)
    parts: Counter[str] = Counter()
    for row in rows:
        parts.update(row["parts"])
    mean_tokens = statistics.fmean(row["tokens"] for row in rows)
    mean_history = statistics.fmean(row["history_tokens"] for row in rows)
    return {
        "questions": len(rows),
        "kept_share": round(sum(r["kept"] for r in rows) / len(rows), 4),
        "bm25_kept_share": round(sum(r["bm25_kept"] for r in rows) / len(rows), 4),
        "mean_context_tokens": round(mean_tokens, 1),
        "mean_history_tokens": round(mean_history, 1),
        "context_share_of_history": round(mean_tokens / mean_history, 4),
        "context_p50_ms": round(percentile([r["ms"] for r in rows], 50), 1),
        "context_p95_ms": round(percentile([r["ms"] for r in rows], 95), 1),
        "by_type": {
            kind: {
                "questions": len(group),
                "kept_share": round(sum(r["kept"] for r in group) / len(group), 4),
                "bm25_kept_share": round(sum(r["bm25_kept"] for r in group) / len(group), 4),
            }
            for kind, group in sorted(by_type.items())
        },
        "mean_tokens_by_kind": {k: round(v / len(rows), 1) for k, v in parts.most_common()},
    }


def markdown(results: dict[str, dict[str, Any]], command: str) -> str:
    lines = [
        f"A new session's context (budget {BUDGET}) holds the gold answer; questions whose "
        "answer is verbatim in the history. Baseline: BM25 over the user's raw lines packed "
        "into the same budget (4 characters a token), same run.",
        "",
        "| set | questions | Engram kept | BM25 kept | mean context / history tokens | "
        "context p50 / p95 |",
        "|---|---|---|---|---|---|",
    ]
    for name, summary in results.items():
        if not summary.get("questions"):
            continue
        lines.append(
            f"| {name} | {summary['questions']} | **{summary['kept_share']:.1%}** | "
            f"{summary['bm25_kept_share']:.1%} | {summary['mean_context_tokens']} / "
            f"{summary['mean_history_tokens']} ({summary['context_share_of_history']:.1%}) | "
            f"{summary['context_p50_ms']} / {summary['context_p95_ms']} ms |"
        )
    for name, summary in results.items():
        if not summary.get("questions"):
            continue
        types = ", ".join(
            f"{kind} {row['kept_share']:.0%} vs {row['bm25_kept_share']:.0%} (n={row['questions']})"
            for kind, row in summary["by_type"].items()
        )
        lines += ["", f"{name} by type (Engram vs BM25): {types}"]
        lines += ["", f"{name} mean context tokens by kind: {summary['mean_tokens_by_kind']}"]
    return "\n".join(lines) + "\n"


def _cases(args: argparse.Namespace) -> Iterator[tuple[str, list[Case]]]:
    if args.locomo:
        cases = locomo_cases(args.locomo)
        yield "LoCoMo dev", cases[: args.conversations or None]
    if args.longmemeval:
        yield "LongMemEval dev", longmemeval_cases(args.longmemeval, args.per_type)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.cross_session", description=__doc__)
    parser.add_argument("--locomo", type=Path, help="locomo-dev.json")
    parser.add_argument("--longmemeval", type=Path, help="longmemeval-dev.json")
    parser.add_argument("--conversations", type=int, default=0, help="LoCoMo: first N (0 = all)")
    parser.add_argument("--per-type", type=int, default=10, help="LongMemEval questions a type")
    parser.add_argument("--single", action="store_true", help="One request per turn.")
    parser.add_argument("--no-record", action="store_true", help="Do not touch RESULTS.md.")
    parser.add_argument("--misses", type=Path, help="Write the missed questions here (JSONL).")
    args = parser.parse_args(argv)
    global MISSES
    MISSES = args.misses
    command = command_line("bench.cross_session", argv)
    from bench.run import raise_on_sigterm

    signal.signal(signal.SIGTERM, raise_on_sigterm)

    from bench.harness import BenchResult, log, record
    from bench.run import api_on_gunicorn

    results: dict[str, dict[str, Any]] = {}
    with api_on_gunicorn(log, tenant_name="cross", timeout=300) as (client, run_id):
        for name, cases in _cases(args):
            rows: list[dict[str, Any]] = []
            for index, case in enumerate(cases, 1):
                rows += run_case(client, case, run_id, args.single)
                kept = sum(r["kept"] for r in rows)
                base = sum(r["bm25_kept"] for r in rows)
                log(f"[{name}] {index}/{len(cases)} users, kept {kept}/{len(rows)}, bm25 {base}")
            results[name] = summarise(rows)
            log(f"[{name}] {json.dumps(results[name])}")
        # Recorded before the servers stop: the section names their versions.
        result = BenchResult(ID, TITLE, markdown(results, command), {"results": results})
        path = record(result, command, update=not args.no_record)
        log(f"[cross-session] raw: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
