"""`python -m bench.locomo_ablation --data ../shared/eval-data/locomo-dev.json`: the
scoring settings tried for LoCoMo recall, each scored on the same data in one
run, so that a choice can be reported beside every alternative that was tried.

The HTTP run (`bench.locomo_eval`) takes minutes per setting (every turn embedded and
indexed through the API). This replays the memory protocol's scoring in process instead:
the lexemes come from PostgreSQL's own `to_tsvector('english', ...)` (one throwaway
embedded server), the vectors from the configured embedder, and the ranking is
`memory_app.selectors.search`'s, written out over arrays: thread windows (two previous
lines, the line, the next, within one LoCoMo session), BM25(F) with per-user document
frequencies, both candidate lists, z-score fusion, and the final score's access term fed
by the searches before (every returned hit counts as an access, as the search view
records it). Recency and importance are the same for every turn here and drop out. The
vector list is exact where the server uses HNSW; with the shipped settings the replay
matched the HTTP run's R@1..R@20 to the third decimal.

Nothing of the data is written into the repository; the table goes to stdout.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from bench.locomo_data import Conversation, _evidence, load
from bench.locomo_eval import KS

POOL_LIMIT = 20  # the protocol searches with limit 20
ACCESS_SATURATION = 20  # memory_app.selectors.search.fusion


@dataclass(frozen=True)
class Setting:
    name: str
    k1: float = 1.2
    b: float = 0.6
    before: int = 2  # window: lines before
    after: int = 1  # window: lines after
    own_weight: float = 2.0  # tf weight of the line's own words (neighbours: 1)
    semantic_weight: float = 0.5
    candidates: int = 60  # per list: max(3 * limit, 30) at limit 20
    access: bool = True  # the final score's access term, fed by earlier searches
    length: str = "distinct"  # document length: distinct lexemes (tsvector length) | total


SHIPPED = Setting("shipped: BM25F own x2, window 2/1, k1 1.2, b 0.6, fusion 0.5")
SETTINGS = [
    SHIPPED,
    replace(SHIPPED, name="before: one field (window only, own x1)", own_weight=1.0),
    replace(SHIPPED, name="own x1.5", own_weight=1.5),
    replace(SHIPPED, name="own x3", own_weight=3.0),
    replace(SHIPPED, name="window 1/1", before=1, after=1),
    replace(SHIPPED, name="window 2/2", after=2),
    replace(SHIPPED, name="k1 1.2, b 0.75", b=0.75),
    replace(SHIPPED, name="k1 1.5, b 0.75", k1=1.5, b=0.75),
    replace(SHIPPED, name="length = all positions", length="total"),
    replace(SHIPPED, name="fusion 0.4 semantic", semantic_weight=0.4),
    replace(SHIPPED, name="fusion 0.6 semantic", semantic_weight=0.6),
    replace(SHIPPED, name="100 candidates per list", candidates=100),
    replace(SHIPPED, name="no access term (searches do not feed the score)", access=False),
]


@dataclass
class Prepared:
    """One conversation's turns (lexeme counts, thread, vectors) and questions."""

    conversation: Conversation
    lexemes: list[Counter[str]]
    vectors: Any  # (turns, dims) float32
    questions: list[dict[str, Any]] = field(default_factory=list)
    query_vectors: Any = None


def prepare(convs: list[Conversation], cursor: Any, embed: Any) -> list[Prepared]:
    out = []
    for conv in convs:
        contents = [f"{turn.speaker}: {turn.text}" for turn in conv.turns]
        lexemes = []
        for content in contents:
            cursor.execute(
                "SELECT lexeme, cardinality(positions) FROM unnest(to_tsvector('english', %s))",
                [content],
            )
            lexemes.append(Counter({lexeme: int(n) for lexeme, n in cursor.fetchall()}))
        questions = []
        for question in conv.questions:
            cursor.execute(
                "SELECT DISTINCT unnest(tsvector_to_array(to_tsvector('english', %s)))",
                [question["question"]],
            )
            questions.append(
                {
                    "text": question["question"],
                    "evidence": _evidence(question),
                    "lexemes": [row[0] for row in cursor.fetchall()],
                }
            )
        out.append(
            Prepared(
                conv,
                lexemes,
                np.asarray(embed(contents), dtype=np.float32),
                questions,
                np.asarray(embed([q["text"] for q in questions]), dtype=np.float32),
            )
        )
    return out


def _windows(prepared: Prepared, setting: Setting) -> list[Counter[str]]:
    turns = prepared.conversation.turns
    out = []
    for i, turn in enumerate(turns):
        tf: Counter[str] = Counter()
        for j in range(i - setting.before, i + setting.after + 1):
            if 0 <= j < len(turns) and turns[j].session == turn.session:
                weight = setting.own_weight if j == i else 1.0
                for lexeme, n in prepared.lexemes[j].items():
                    tf[lexeme] += weight * n
        out.append(tf)
    return out


def _z(values: Any) -> Any:
    spread = values.std()
    return (values - values.mean()) / spread if spread > 1e-12 else values * 0


def evaluate(data: list[Prepared], setting: Setting) -> dict[str, float]:
    sums: Counter[int] = Counter()
    count = 0
    for prepared in data:
        turns = prepared.conversation.turns
        docs = _windows(prepared, setting)
        df: Counter[str] = Counter()
        for doc in docs:
            df.update(doc.keys())
        n_docs = len(docs)
        lengths = np.asarray(
            [len(doc) if setting.length == "distinct" else sum(doc.values()) for doc in docs]
        )
        average = lengths.mean()
        accesses = np.zeros(n_docs)
        for index, question in enumerate(prepared.questions):
            cosine = prepared.vectors @ prepared.query_vectors[index]
            vector_list = list(np.argsort(-cosine)[: setting.candidates])
            terms = [t for t in question["lexemes"] if df[t] > 0]
            idf = {t: math.log(1 + (n_docs - df[t] + 0.5) / (df[t] + 0.5)) for t in terms}
            norm = setting.k1 * (1 - setting.b + setting.b * lengths / average)
            bm25 = np.zeros(n_docs)
            for i, doc in enumerate(docs):
                bm25[i] = sum(
                    idf[t] * doc[t] * (setting.k1 + 1) / (doc[t] + norm[i])
                    for t in terms
                    if t in doc
                )
            lexical_list = [
                i for i in np.argsort(-bm25, kind="stable")[: setting.candidates] if bm25[i] > 0
            ]
            pool = list(dict.fromkeys([*vector_list, *lexical_list]))
            fused = setting.semantic_weight * _z(cosine[pool]) + (1 - setting.semantic_weight) * _z(
                bm25[pool]
            )
            spread = fused.max() - fused.min()
            relevance = (fused - fused.min()) / spread if spread > 1e-12 else np.ones(len(pool))
            score = 0.6 * relevance
            if setting.access:
                score = score + 0.1 * np.minimum(
                    1, np.log1p(accesses[pool]) / math.log1p(ACCESS_SATURATION)
                )
            ranked = [pool[i] for i in np.argsort(-score, kind="stable")][:POOL_LIMIT]
            accesses[ranked] += 1
            for k in KS:
                found = {turns[i].dia_id for i in ranked[:k]}
                sums[k] += len(found & question["evidence"]) / len(question["evidence"])
            count += 1
    return {f"r@{k}": sums[k] / count for k in KS}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.locomo_ablation", description=__doc__)
    parser.add_argument("--data", required=True, type=Path, help="locomo-dev.json")
    args = parser.parse_args(argv)
    convs = load(args.data)

    from bench.harness import log
    from bench.servers import data_services

    with data_services(log) as (database_url, redis_url):
        os.environ.update(DATABASE_URL=database_url, REDIS_URL=redis_url)
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
        import django

        django.setup()
        from django.db import connection, connections

        from memory_app.embedding import embed_texts

        log("[ablation] lexemes from PostgreSQL, vectors from the embedder")
        with connection.cursor() as cursor:
            data = prepare(convs, cursor, embed_texts)
        connections.close_all()
    print("| setting | R@1 | R@5 | R@10 | R@20 |")
    print("|---|---|---|---|---|")
    for setting in SETTINGS:
        figures = evaluate(data, setting)
        print(f"| {setting.name} | " + " | ".join(f"{figures[f'r@{k}']:.3f}" for k in KS) + " |")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
