"""`python -m bench.pool_rerank POOL.jsonl [--per-side N]`: the search's ranking replayed
over a pool dump (`bench.search_pool_dump`), in seconds, with the search's own ranking
functions: fusion (`fuse_scores`) of the cosine, BM25 and the lead's words as the dump
recorded them, the final score's weights, the time, began-after, speaker, latest, asked
and superseded parts as the dump recorded them, the lead's thread neighbours
(`apply_thread_neighbours`), the memories dated after the question
(`weigh_after_question`) and the length prior (`apply_length_prior`). Prints recall on
both dev sets: LongMemEval recall_any / recall_all @10 pooled and by type, LoCoMo R@5 /
R@10. A base for offline experiments: copy `rank` and change one step.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import uuid
from collections import defaultdict
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

K = 10
Row = dict[str, Any]


def _time(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text.replace("Z", "+00:00")) if text else None


def members(row: Row, per_side: int) -> list[Row]:
    """The pool the search reads at `per_side` candidates a side (the dump holds more)."""
    return [
        m
        for m in row["pool"]
        if (m["vrank"] or per_side + 1) <= per_side or (m["lrank"] or per_side + 1) <= per_side
    ]


def rank(row: Row, per_side: int = 60, feedback_weight: float | None = None) -> list[Row]:
    """The pool's members in the order the search returns them; `feedback_weight`, the
    lead's words' weight in the fusion (FEEDBACK_WEIGHT unless given; the dump recorded
    each member's BM25 of the words of the lead the search chose)."""
    from memory_app.selectors.latest import LATEST_WEIGHT
    from memory_app.selectors.search.after_question import weigh_after_question
    from memory_app.selectors.search.asked_subject import ASKED_WEIGHT
    from memory_app.selectors.search.feedback import FEEDBACK_WEIGHT
    from memory_app.selectors.search.fusion import WEIGHTS, best_first, fuse_scores
    from memory_app.selectors.search.length_prior import apply_length_prior
    from memory_app.selectors.search.pool import Candidate
    from memory_app.selectors.search.speaker import SPEAKER_WEIGHT
    from memory_app.selectors.search.thread_neighbours import apply_thread_neighbours
    from memory_app.selectors.search_time import BEGAN_AFTER_FACTOR, TIME_WEIGHT

    pool = {uuid.UUID(m["id"]): m for m in members(row, per_side)}
    weight = FEEDBACK_WEIGHT if feedback_weight is None else feedback_weight
    relevance = fuse_scores(
        {pk: (m["semantic"], m["lexical"], m.get("feedback", 0.0)) for pk, m in pool.items()},
        ((1 - weight) * 0.5, (1 - weight) * 0.5, weight),
    )
    candidates = {
        pk: Candidate(
            m["semantic"], m["lexical"], datetime.min, 0.5, 0, _time(m["occurred_at"]),
            m["bytes"] if "bytes" in m else m["chars"], thread_key=m["thread"],
            thread_order=m["order"],
        )
        for pk, m in pool.items()
    }  # fmt: skip
    scored = []
    for pk, m in pool.items():
        score = (
            WEIGHTS["relevance"] * relevance[pk]
            + WEIGHTS["recency"] * m.get("recency", 1.0)
            + WEIGHTS["importance"] * m.get("importance", 0.5)
            + WEIGHTS["access"] * m.get("access", 0.0)
            + TIME_WEIGHT * m["time"]
        )
        if m.get("began_after"):
            score *= BEGAN_AFTER_FACTOR
        parts = {"relevance": relevance[pk], "began_after": float(m.get("began_after") or 0.0)}
        scored.append((pk, score, parts))
    scored = apply_thread_neighbours(scored, candidates)
    scored = [(pk, s + SPEAKER_WEIGHT * pool[pk].get("speaker", 0.0), p) for pk, s, p in scored]
    scored = weigh_after_question(scored, candidates, _time(row["as_of"]))
    scored = apply_length_prior(scored, candidates)
    scored = [
        (
            pk,
            (
                s
                + LATEST_WEIGHT * pool[pk].get("latest", 0.0)
                + ASKED_WEIGHT * pool[pk].get("asked", 0.0)
            )
            * (0.5 if pool[pk]["superseded"] else 1.0),
            p,
        )
        for pk, s, p in scored
    ]
    scored.sort(key=best_first)
    return [pool[pk] for pk, _, _ in scored]


def evaluate(rows: list[Row], ranker: Callable[[Row], list[Row]]) -> dict[str, float]:
    """Recall of `ranker` on both sets."""
    out: dict[str, list[float]] = defaultdict(list)
    for row in rows:
        ranked = ranker(row)
        relevant = {tuple(r) for r in row["relevant"]}
        if row["dataset"] == "lme":
            seen = {tuple(t) for m in ranked[:K] for t in m["turns"]}
            out["lme_any@10"].append(float(bool(seen & relevant)))
            out["lme_all@10"].append(float(relevant <= seen))
            out[f"lme_all@10:{row['type']}"].append(float(relevant <= seen))
        else:
            for k in (5, 10):
                seen = {tuple(t) for m in ranked[:k] for t in m["turns"]}
                out[f"locomo_R@{k}"].append(len(seen & relevant) / len(relevant))
    return {key: round(sum(v) / len(v), 3) for key, v in sorted(out.items())}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.pool_rerank", description=__doc__)
    parser.add_argument("pool", type=Path)
    parser.add_argument("--per-side", type=int, default=60)
    args = parser.parse_args(argv)
    # The ranking functions import the models; no database is opened.
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.base")
    os.environ.setdefault("DATABASE_URL", "postgres://replay@127.0.0.1:1/none")
    os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:1")
    import django

    django.setup()
    rows = [json.loads(line) for line in args.pool.read_text().splitlines()]
    figures = evaluate(rows, lambda row: rank(row, args.per_side))
    print(json.dumps(figures, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
