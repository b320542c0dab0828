"""`python -m bench.search_pool_dump --longmemeval PATH --locomo PATH --out FILE
[--features]`: each question's whole candidate pool with its features, for re-ranking
offline in seconds.

Both dev sets are stored as `bench.longmemeval_retrieval` and `bench.locomo_eval` store
them (same contents, threads, orders, dates), through the API in this process (Django's
test client, no HTTP server). `--vectors FILE` (JSON list of {content, emb}) reuses
vectors of earlier runs for the texts it holds; the others are embedded by the
configured model. Then every question's pool is read with the search's own statement at
`--candidates` per side (ranks kept, so a smaller pool is a filter offline), with per
candidate: both ranks, cosine, BM25, the time and superseded parts the search adds, the
thread, its order, the date, the length and which turns the memory holds. One JSON line
per question.

`--features` also writes, beside FILE, every stored memory's vector and lexemes
(FILE.memories.jsonl: id, user, the lexemes of `lexical_vector` and of its own text, the
number of lexemes, the embedding) and each user's document frequencies
(FILE.df.json: the statistics the search's IDF reads), for offline experiments with
signals the pool's rows do not carry (feedback from a line's words or vector).

An experiment tool: it records nothing in RESULTS.md. `python -m bench.pool_rerank FILE`
replays the shipped ranking over such a file.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from bench.longmemeval_retrieval import load_pool, pool_items


def _patch_vectors(path: Path | None) -> None:
    if path is None:
        return
    import memory_app.passage_vectors.vectors as documents

    known = {m["content"]: m["emb"] for m in json.loads(path.read_text())}
    real = documents.embed_texts

    def embed_texts(texts: list[str]) -> list[list[float]]:
        missing = [t for t in texts if t not in known]
        if missing:
            known.update(zip(missing, real(missing), strict=True))
        return [list(known[t]) for t in texts]

    documents.embed_texts = embed_texts  # type: ignore[assignment]


def _store(client: Any, items: list[dict[str, Any]]) -> list[tuple[int, str]]:
    out = []
    for start in range(0, len(items), 200):
        response = client.post(
            "/api/v1/memories/bulk",
            data=items[start : start + 200],
            content_type="application/json",
        )
        assert response.status_code in (200, 201), response.content[:500]
        out += [(start + r["index"], r["memory_id"]) for r in response.json()["results"]]
    return out


def _scored_pool(
    tenant: Any, query: str, user: str, as_of: datetime | None, candidates: int
) -> tuple[Any, list[Any]]:
    """The search's pool of `query` for `user` at `candidates` per side, and its members
    scored as the search scores them (fusion, time scope, speaker, asked subject,
    currency), best first."""
    from django.db import connection
    from django.utils import timezone

    from memory_app.embedding import embed_query, vector_literal
    from memory_app.selectors.currency import apply_currency
    from memory_app.selectors.memories import Actor
    from memory_app.selectors.search.asked_subject import apply_asked_subject
    from memory_app.selectors.search.engine import _pool
    from memory_app.selectors.search.feedback import apply_feedback
    from memory_app.selectors.search.filters import search_where
    from memory_app.selectors.search.fusion import score_pool
    from memory_app.selectors.search.lexical import lexical_query
    from memory_app.selectors.search.speaker import apply_speaker_match
    from memory_app.selectors.search_time import apply_time_scope, query_time_scope

    actor = Actor(user_id=user)
    now = as_of or timezone.now()
    where, params = search_where(
        tenant=tenant, actor=actor, user_id=user, agent_id=None, types=None, tags=None,
        filters=None,
    )  # fmt: skip
    params["q"] = vector_literal(embed_query(query))
    with connection.cursor() as cursor:
        own = actor.user_id if where.own_branch is not None else None
        lexical = lexical_query(cursor, tenant=tenant, user_id=user, text=query, own_user_id=own)
        pool = _pool(cursor, where, params, lexical, query, candidates=candidates, lexemes=True)
        scored = score_pool(pool, mode="hybrid", now=now)
        scope = query_time_scope(query, as_of)
        scored = apply_time_scope(cursor, scope, scored)
        scored = apply_feedback(scored, pool.candidates, hybrid=True, semantic_weight=0.5)
        scored = apply_speaker_match(scored, pool.candidates)
        scored = apply_asked_subject(
            cursor, query, scored, timed=scope is not None and scope.has_interval
        )
        scored = apply_currency(cursor, query, now, scored)
    return pool, scored


def _features(
    pk: Any, memory: Any, parts: dict[str, float], vrank: int | None, lrank: int | None
) -> dict[str, Any]:
    """One pool member's ranks, score parts and what the memory is."""
    return {
        "id": str(pk),
        "vrank": vrank,
        "lrank": lrank,
        "semantic": parts["semantic"],
        "lexical": parts["lexical"],
        "importance": parts["importance"],
        "access": parts["access"],
        "recency": parts["recency"],
        "time": parts.get("time", 0.0),
        "began_after": parts.get("began_after", 0.0),
        "superseded": parts.get("superseded", 0.0),
        "speaker": parts.get("speaker", 0.0),
        "latest": parts.get("latest", 0.0),
        "asked": parts.get("asked", 0.0),
        "feedback": parts.get("feedback", 0.0),
        "thread": memory.thread_key,
        "order": memory.thread_order,
        "occurred_at": memory.occurred_at.isoformat() if memory.occurred_at else None,
        "chars": len(memory.content),
        "bytes": len(memory.content.encode()),
        "tags": list(memory.tags or []),
    }


def pool_features(
    tenant: Any, query: str, user: str, as_of: datetime | None, candidates: int
) -> list[dict[str, Any]]:
    """The pool of `query` as the search reads it, every member with its features."""
    from memory_app.models import Memory

    pool, scored = _scored_pool(tenant, query, user, as_of, candidates)
    rows = Memory.objects.in_bulk([pk for pk, _, _ in scored])
    vrank = {pk: i + 1 for i, pk in enumerate(pool.vector_ranking)}
    lrank = {pk: i + 1 for i, pk in enumerate(pool.lexical_ranking)}
    return [_features(pk, rows[pk], parts, vrank.get(pk), lrank.get(pk)) for pk, _, parts in scored]


def _dump_longmemeval(
    client: Any, tenant: Any, path: Path, candidates: int, out: Any, began: float
) -> None:
    """LongMemEval's pooled user turns stored in one user's memory, then every
    question's pool, asked at the question's date."""
    from bench.harness import log

    pool = load_pool(path)
    items = pool_items(pool, "lme")
    held: dict[str, list[list[Any]]] = {}
    for index, memory_id in _store(client, items):
        held.setdefault(memory_id, []).append(list(pool.turns[index]))
    log(f"[dump] LME stored in {time.monotonic() - began:.0f} s")
    for question in pool.questions:
        as_of = datetime.fromisoformat(question["as_of"].replace("Z", "+00:00"))
        members = pool_features(tenant, question["question"], "lme", as_of, candidates)
        for member in members:
            member["turns"] = held.get(member["id"], [])
        record = {
            "dataset": "lme", "id": question["id"], "type": question["type"],
            "question": question["question"], "as_of": question["as_of"],
            "relevant": sorted(map(list, question["relevant"])), "pool": members,
        }  # fmt: skip
        out.write(json.dumps(record) + "\n")
    log(f"[dump] LME searched at {time.monotonic() - began:.0f} s")


def _dump_locomo(
    client: Any, tenant: Any, path: Path, candidates: int, out: Any, began: float
) -> None:
    """Each LoCoMo conversation stored for a user of its own, then each of its
    questions' pools, asked now (as the API asks a search that sends no `as_of`)."""
    from django.utils import timezone

    from bench.harness import log
    from bench.locomo_data import _evidence, load
    from bench.locomo_eval import memory_items

    for conv in load(path):
        user = f"locomo-{conv.index}"
        items = memory_items(conv, user)
        dias: dict[str, list[list[Any]]] = {}
        for index, memory_id in _store(client, items):
            dias.setdefault(memory_id, []).append([conv.turns[index].dia_id, 0])
        now = timezone.now()
        for n, q in enumerate(conv.questions):
            members = pool_features(tenant, q["question"], user, now, candidates)
            for member in members:
                member["turns"] = dias.get(member["id"], [])
            record = {
                "dataset": "locomo", "id": f"{conv.index}-{n}", "type": str(q["category"]),
                "question": q["question"], "as_of": now.isoformat(),
                "relevant": sorted([e, 0] for e in _evidence(q)), "pool": members,
            }  # fmt: skip
            out.write(json.dumps(record) + "\n")
        log(f"[dump] LoCoMo conversation {conv.index} at {time.monotonic() - began:.0f} s")


_MEMORY_FEATURES = """
    SELECT id::text, user_id, tsvector_to_array(lexical_vector),
           tsvector_to_array(to_tsvector('english', content)), length(lexical_vector),
           embedding::text, thread_key, thread_order
    FROM memory WHERE tenant_id = %s ORDER BY id"""
_DOCUMENT_FREQUENCIES = """
    SELECT user_id, lexeme, sum(df) FROM memory_term_stat WHERE tenant_id = %s
    GROUP BY user_id, lexeme"""
_USER_TOTALS = """
    SELECT user_id, sum(documents), sum(lexemes) FROM memory_lexicon_stat
    WHERE tenant_id = %s GROUP BY user_id"""


def _dump_features(tenant: Any, out: Path) -> None:
    """Every memory's lexemes and vector, and each user's document frequencies."""
    from django.db import connection

    with connection.cursor() as cursor, Path(f"{out}.memories.jsonl").open("w") as memories:
        cursor.execute(_MEMORY_FEATURES, [tenant.pk])
        for pk, user, lexemes, own, length, vector, thread, order in cursor.fetchall():
            row = {"id": pk, "user": user, "lexemes": lexemes, "own_lexemes": own,
                   "length": length, "embedding": json.loads(vector), "thread": thread,
                   "order": order}  # fmt: skip
            memories.write(json.dumps(row) + "\n")
        frequencies: dict[str, dict[str, int]] = {}
        cursor.execute(_DOCUMENT_FREQUENCIES, [tenant.pk])
        for user, lexeme, df in cursor.fetchall():
            frequencies.setdefault(user, {})[lexeme] = int(df)
        cursor.execute(_USER_TOTALS, [tenant.pk])
        totals = {user: [int(docs), int(lexemes)] for user, docs, lexemes in cursor.fetchall()}
    Path(f"{out}.df.json").write_text(json.dumps({"df": frequencies, "totals": totals}))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.search_pool_dump", description=__doc__)
    parser.add_argument("--longmemeval", type=Path, required=True)
    parser.add_argument("--locomo", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--vectors", type=Path)
    parser.add_argument("--candidates", type=int, default=60)
    parser.add_argument("--features", action="store_true")
    args = parser.parse_args(argv)

    from bench.harness import log
    from bench.run import django_on_data_services

    with django_on_data_services(log):
        from django.test import Client

        from sessions_app.models import Tenant
        from sessions_app.services.api_keys import api_key_create

        _patch_vectors(args.vectors)
        tenant = Tenant.objects.create(name="pool-dump")
        secret = api_key_create(tenant=tenant, name="dump").secret
        client = Client(headers={"Authorization": f"Bearer {secret}"}, SERVER_NAME="localhost")
        out = args.out.open("w")
        began = time.monotonic()
        _dump_longmemeval(client, tenant, args.longmemeval, args.candidates, out, began)
        _dump_locomo(client, tenant, args.locomo, args.candidates, out, began)
        out.close()
        if args.features:
            _dump_features(tenant, args.out)
        from django.db import connections

        connections.close_all()
    return 0


if __name__ == "__main__":
    sys.exit(main())
