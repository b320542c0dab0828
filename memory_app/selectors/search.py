"""Hybrid memory search: vector top-k + full-text top-k, reciprocal rank fusion, then
seed 004's final score.

1. Vector: HNSW over `embedding::halfvec(384)` with `hnsw.iterative_scan = relaxed_order`
   (SET LOCAL, this transaction only), so the hard filters (tenant, visibility, user, type,
   tags) applied after the index scan never starve the result; a MATERIALIZED CTE then
   restores exact distance order.
2. Lexical: `search_vector @@ query` where the query ORs the English lexemes of the text
   (stop words dropped) with the 'simple' tokens of its ids and numbers, so "A-73812"
   matches as typed. Ranked with `ts_rank_cd(..., 32)`, which maps into [0, 1).
3. Fusion: RRF over the two rankings, normalised so that first in both lists is 1.
4. Score: 0.6 * relevance (the fused rank) + 0.2 * recency (half-life) + 0.1 * importance
   + 0.1 * access signal. Semantic and lexical similarities are returned as the parts
   they are, but rank only through RRF: raw cosine and ts_rank are not on one scale.

Access statistics move in one UPDATE after the query: the view calls
`memory_record_access` with the ids it returns.
"""

from __future__ import annotations

import math
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from memory_app.embedding import embed_text
from memory_app.models import Memory
from memory_app.selectors.memories import Actor, visibility_sql

if TYPE_CHECKING:
    from sessions_app.models import Tenant

SearchMode = Literal["hybrid", "vector", "lexical"]

WEIGHTS = {"relevance": 0.6, "recency": 0.2, "importance": 0.1, "access": 0.1}
ACCESS_SATURATION = 20  # reads after which the access signal is full
_ID_QUERY_TOKEN = re.compile(r"[\w][\w./-]*\d[\w./-]*|\d[\w./-]*")
# Lexical weights for {D, C, B, A}: English content A, English summary B, simple content
# C, simple summary D. Simple tokens weigh as much as English ones: they carry the ids.
RANK_WEIGHTS = "{0.5, 1.0, 0.5, 1.0}"
# HNSW candidate list. pgvector's default (40) gave recall@10 0.84 unfiltered and 0.92-0.94
# under the tenant + visibility filter at 100k clustered memories; 200 gives 0.97 for
# the same vector-step time (~4.5 ms: under a selective filter the iterative scan visits
# that many tuples anyway). bench/RESULTS.md, "B2 notes".
EF_SEARCH = 200


@dataclass
class SearchHit:
    memory: Memory
    score: float
    parts: dict[str, float]


@dataclass
class SearchOutcome:
    hits: list[SearchHit]
    vector_ranking: list[uuid.UUID] = field(default_factory=list)
    lexical_ranking: list[uuid.UUID] = field(default_factory=list)


def _filters_sql(
    *,
    tenant: Tenant,
    actor: Actor,
    user_id: str | None,
    agent_id: str | None,
    types: Sequence[str] | None,
    tags: Sequence[str] | None,
) -> tuple[str, dict[str, Any]]:
    visible, params = visibility_sql(actor)
    clauses = ["m.tenant_id = %(tenant)s", visible]
    params["tenant"] = tenant.pk
    if user_id:
        clauses.append("m.user_id = %(user_id)s")
        params["user_id"] = user_id
    if agent_id:
        clauses.append("m.agent_id = %(agent_id)s")
        params["agent_id"] = agent_id
    if types:
        clauses.append("m.type = ANY(%(types)s::varchar[])")
        params["types"] = list(types)
    if tags:
        clauses.append("m.tags && %(tags)s::varchar[]")
        params["tags"] = list(tags)
    return " AND ".join(clauses), params


# The lexical query: English lexemes ORed, plus each id-like token as a 'simple' phrase.
_TSQUERY_SQL = (
    "(CASE WHEN numnode(plainto_tsquery('english', %(text)s)) = 0 THEN ''::tsquery"
    " ELSE replace(plainto_tsquery('english', %(text)s)::text, ' & ', ' | ')::tsquery END)"
)


def _tsquery(text: str, params: dict[str, Any]) -> str:
    params["text"] = text
    sql = _TSQUERY_SQL
    for index, token in enumerate(dict.fromkeys(_ID_QUERY_TOKEN.findall(text))):
        key = f"id_token_{index}"
        params[key] = token
        sql = f"({sql} || plainto_tsquery('simple', %({key})s))"
    return sql


def memory_search(
    *,
    tenant: Tenant,
    actor: Actor,
    query: str,
    user_id: str | None = None,
    agent_id: str | None = None,
    types: Sequence[str] | None = None,
    tags: Sequence[str] | None = None,
    limit: int = 10,
    mode: SearchMode = "hybrid",
    now: datetime | None = None,
    query_embedding: list[float] | None = None,
) -> SearchOutcome:
    """The memories that best answer `query`, visible to `actor`, best first. A read
    only: the caller records the access (`memory_record_access`) for the hits it uses."""
    now = now or timezone.now()
    candidates = max(3 * limit, 30)
    where, params = _filters_sql(
        tenant=tenant, actor=actor, user_id=user_id, agent_id=agent_id, types=types, tags=tags
    )
    params["k"] = candidates
    vector_ranking: list[uuid.UUID] = []
    lexical_ranking: list[uuid.UUID] = []
    vector: list[float] | None = None
    if mode in ("hybrid", "vector"):
        vector = query_embedding if query_embedding is not None else embed_text(query)
        params["q"] = str(vector)
    tsquery = _tsquery(query, params)

    with transaction.atomic(), connection.cursor() as cursor:
        if vector is not None:
            cursor.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
            cursor.execute(f"SET LOCAL hnsw.ef_search = {max(EF_SEARCH, candidates)}")
            cursor.execute(
                f"""
                WITH nearest AS MATERIALIZED (
                    SELECT m.id, m.embedding::halfvec(384) <=> %(q)s::halfvec(384) AS distance
                    FROM memory m WHERE {where}
                    ORDER BY m.embedding::halfvec(384) <=> %(q)s::halfvec(384)
                    LIMIT %(k)s
                )
                SELECT id FROM nearest ORDER BY distance
                """,  # noqa: S608 - `where` is built from fixed clauses; values are params
                params,
            )
            vector_ranking = [row[0] for row in cursor.fetchall()]
        if mode in ("hybrid", "lexical"):
            cursor.execute(
                f"""
                WITH q AS (SELECT {tsquery} AS query)
                SELECT m.id FROM memory m, q
                WHERE {where} AND m.search_vector @@ q.query
                ORDER BY ts_rank_cd(%(rank_weights)s::float4[], m.search_vector, q.query, 32)
                    DESC, m.created_at DESC
                LIMIT %(k)s
                """,  # noqa: S608
                {**params, "rank_weights": RANK_WEIGHTS},
            )
            lexical_ranking = [row[0] for row in cursor.fetchall()]

    rankings = {"hybrid": [vector_ranking, lexical_ranking], "vector": [vector_ranking]}
    fused = _rrf(rankings.get(mode, [lexical_ranking]))
    if not fused:
        return SearchOutcome([], vector_ranking, lexical_ranking)
    signals = _signals(list(fused), vector, query, tsquery, params)
    memories = Memory.objects.defer("search_vector").in_bulk(list(fused))
    hits = []
    for pk, relevance in fused.items():
        memory = memories.get(pk)
        if memory is None:  # deleted between the two queries
            continue
        semantic, lexical = signals.get(pk, (0.0, 0.0))
        hits.append(_score(memory, relevance, semantic, lexical, now))
    hits.sort(key=lambda hit: (-hit.score, -hit.parts["rrf"], str(hit.memory.pk)))
    hits = hits[:limit]
    return SearchOutcome(hits, vector_ranking, lexical_ranking)


def _rrf(rankings: list[list[uuid.UUID]]) -> dict[uuid.UUID, float]:
    """Reciprocal rank fusion, normalised: 1.0 = first in every list that ran."""
    k = int(settings.ENGRAM_MEMORY_RRF_K)
    best = len(rankings) / (k + 1)
    fused: dict[uuid.UUID, float] = {}
    for ranking in rankings:
        for rank, pk in enumerate(ranking, start=1):
            fused[pk] = fused.get(pk, 0.0) + 1.0 / (k + rank)
    return {pk: value / best for pk, value in fused.items()}


def _signals(
    ids: list[uuid.UUID],
    vector: list[float] | None,
    query: str,
    tsquery: str,
    params: dict[str, Any],
) -> dict[uuid.UUID, tuple[float, float]]:
    """Full-precision cosine and lexical rank of each candidate, for the score's parts."""
    semantic_sql = "1 - (m.embedding <=> %(q)s::vector)" if vector is not None else "0"
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            WITH q AS (SELECT {tsquery} AS query)
            SELECT m.id, {semantic_sql},
                   ts_rank_cd(%(rank_weights)s::float4[], m.search_vector, q.query, 32)
            FROM memory m, q WHERE m.id = ANY(%(ids)s::uuid[])
            """,  # noqa: S608
            {**params, "ids": [str(pk) for pk in ids], "rank_weights": RANK_WEIGHTS},
        )
        return {row[0]: (float(row[1]), float(row[2])) for row in cursor.fetchall()}


def _score(
    memory: Memory, relevance: float, semantic: float, lexical: float, now: datetime
) -> SearchHit:
    half_life = float(settings.ENGRAM_MEMORY_RECENCY_HALF_LIFE_DAYS)
    age_days = max(0.0, (now - memory.updated_at).total_seconds() / 86400)
    recency = 0.5 ** (age_days / half_life)
    access = min(1.0, math.log1p(memory.access_count) / math.log1p(ACCESS_SATURATION))
    parts = {
        "semantic": round(semantic, 6),
        "lexical": round(lexical, 6),
        "rrf": round(relevance, 6),
        "recency": round(recency, 6),
        "importance": round(memory.importance, 6),
        "access": round(access, 6),
    }
    score = (
        WEIGHTS["relevance"] * relevance
        + WEIGHTS["recency"] * recency
        + WEIGHTS["importance"] * memory.importance
        + WEIGHTS["access"] * access
    )
    return SearchHit(memory, round(score, 6), parts)
