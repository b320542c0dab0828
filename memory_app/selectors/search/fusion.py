"""Ranking the pool: fusion of the two signals into a relevance, then the final score.

Fusion by score: the cosine and the BM25 of every candidate in the pool (the union of
both lists), each z-normalised over the pool, weighted ENGRAM_MEMORY_FUSION_SEMANTIC_WEIGHT
and its complement; the fused score is then min-max scaled to [0, 1] ("relevance", 1 =
best of the pool). Scores rank better than ranks: a query whose best lexical hit stands
far above the rest keeps that margin, which reciprocal rank fusion throws away (RRF is
still computed, part `rrf`, for comparison).

The final score: 0.6 * relevance + 0.2 * recency (half-life) + 0.1 * importance + 0.1 *
access signal. The parts are returned: semantic (cosine, the best of the memory and its
passages), lexical (BM25), relevance, rrf, recency, importance, access.

`score_pool` is the boundary: a pool in, (id, score, parts) per candidate out, unsorted;
the time boost and the current-state weighting apply after it.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Literal

from django.conf import settings

if TYPE_CHECKING:
    from memory_app.selectors.search.pool import Candidate, Pool

SearchMode = Literal["hybrid", "vector", "lexical"]
Scored = tuple[uuid.UUID, float, dict[str, float]]

WEIGHTS = {"relevance": 0.6, "recency": 0.2, "importance": 0.1, "access": 0.1}
ACCESS_SATURATION = 20  # reads after which the access signal is full


def score_pool(pool: Pool, *, mode: SearchMode, now: datetime) -> list[Scored]:
    """Every pool member's final score and its parts."""
    weight = float(settings.ENGRAM_MEMORY_FUSION_SEMANTIC_WEIGHT)
    if mode == "vector":
        weight = 1.0
    elif mode == "lexical":
        weight = 0.0
    members = list(pool.candidates.values())
    relevance = fuse_columns(
        [[c.semantic for c in members], [c.lexical for c in members]], (weight, 1 - weight)
    )
    rankings = [ranking for ranking in (pool.vector_ranking, pool.lexical_ranking) if ranking]
    fused_ranks = rrf(rankings)
    return [
        final_score(pk, candidate, value, fused_ranks.get(pk, 0.0), now)
        for (pk, candidate), value in zip(pool.candidates.items(), relevance, strict=True)
    ]


def fuse_scores(
    signals: Mapping[uuid.UUID, tuple[float, ...]], weights: tuple[float, ...]
) -> dict[uuid.UUID, float]:
    """`fuse_columns` of each member's signals, by id."""
    ids = list(signals)
    columns = [[signals[pk][index] for pk in ids] for index in range(len(weights))]
    return dict(zip(ids, fuse_columns(columns, weights), strict=True))


def fuse_columns(columns: list[list[float]], weights: tuple[float, ...]) -> list[float]:
    """Each signal's column (cosine, BM25, and the lead's words when `feedback` runs;
    the i-th value of each is one member's) z-normalised over the pool, weighted, summed,
    then scaled to [0, 1] (1 = the pool's best). A signal that does not vary over the
    pool contributes nothing."""
    if not columns or not columns[0]:
        return []
    fused = [0.0] * len(columns[0])
    for weight, column in zip(weights, columns, strict=True):
        mean = sum(column) / len(column)
        spread = math.sqrt(sum((v - mean) ** 2 for v in column) / len(column))
        if spread > 1e-12:
            fused = [
                total + weight * ((v - mean) / spread)
                for total, v in zip(fused, column, strict=True)
            ]
    low, high = min(fused), max(fused)
    if high - low <= 1e-12:
        return [1.0] * len(fused)
    return [(value - low) / (high - low) for value in fused]


def rrf(rankings: list[list[uuid.UUID]]) -> dict[uuid.UUID, float]:
    """Reciprocal rank fusion, normalised: 1.0 = first in every list that ran."""
    k = int(settings.ENGRAM_MEMORY_RRF_K)
    best = max(1, len(rankings)) / (k + 1)
    fused: dict[uuid.UUID, float] = {}
    for ranking in rankings:
        for rank, pk in enumerate(ranking, start=1):
            fused[pk] = fused.get(pk, 0.0) + 1.0 / (k + rank)
    return {pk: value / best for pk, value in fused.items()}


def best_first(hit: Scored) -> tuple[float, float, int]:
    """The search's final order as a sort key: higher score first, then higher
    relevance, then the lower id, so that equal scores always come in one order. The
    id is compared as its 128-bit integer, which orders ids as their text (fixed-width
    hex) does, without formatting each one for every sort of the pool."""
    pk, score, parts = hit
    return (-score, -parts.get("relevance", 0.0), pk.int)


def final_score(
    pk: uuid.UUID, candidate: Candidate, relevance: float, rrf: float, now: datetime
) -> Scored:
    """The final score of one candidate and its parts."""
    half_life = float(settings.ENGRAM_MEMORY_RECENCY_HALF_LIFE_DAYS)
    age_days = max(0.0, (now - candidate.updated_at).total_seconds() / 86400)
    recency = 0.5 ** (age_days / half_life)
    access = min(1.0, math.log1p(candidate.access_count) / math.log1p(ACCESS_SATURATION))
    parts = {
        "semantic": round(candidate.semantic, 6),
        "lexical": round(candidate.lexical, 6),
        "relevance": round(relevance, 6),
        "rrf": round(rrf, 6),
        "recency": round(recency, 6),
        "importance": round(candidate.importance, 6),
        "access": round(access, 6),
    }
    score = (
        WEIGHTS["relevance"] * relevance
        + WEIGHTS["recency"] * recency
        + WEIGHTS["importance"] * candidate.importance
        + WEIGHTS["access"] * access
    )
    return pk, round(score, 6), parts
