"""Scoring of context candidates (seed 004).

score = 0.35·recency + 0.45·semantic + 0.10·role + 0.10·signal, where recency halves
every ENGRAM_CONTEXT_HALF_LIFE_MINUTES, semantic is the cosine of query and candidate
embeddings (0 without a query), role is 1.0 for system and milestone candidates and 0.7
otherwise, and signal is a candidate's own evidence of usefulness (in the cart, in
focus, an important memory…), clipped to [0, 1].
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime

import numpy as np
from django.conf import settings

from memory_app.embedding import embed_query, embed_texts
from memory_app.selectors.context.candidate import Candidate

W_RECENCY = 0.35
W_SEMANTIC = 0.45
W_ROLE = 0.10
W_SIGNAL = 0.10
BOOSTED_ROLES = frozenset({"system", "milestone"})

_VECTOR_CACHE: OrderedDict[str, np.ndarray] = OrderedDict()
_VECTOR_CACHE_SIZE = 8192  # ~12 MB of float32 vectors; texts repeat across requests


@dataclass(frozen=True)
class Score:
    recency: float
    semantic: float
    role: float
    signal: float

    @property
    def total(self) -> float:
        return (
            W_RECENCY * self.recency
            + W_SEMANTIC * self.semantic
            + W_ROLE * self.role
            + W_SIGNAL * self.signal
        )


def score_candidate(
    candidate: Candidate, *, now: datetime, semantic: float, half_life_minutes: float
) -> Score:
    if candidate.at is None:
        recency = 1.0
    else:
        age_minutes = max(0.0, (now - candidate.at).total_seconds() / 60.0)
        recency = math.exp(-math.log(2) * age_minutes / half_life_minutes)
    return Score(
        recency=recency,
        semantic=max(0.0, min(1.0, semantic)),
        role=1.0 if candidate.role in BOOSTED_ROLES else 0.7,
        signal=max(0.0, min(1.0, candidate.signal)),
    )


def candidate_scores(
    candidates: list[Candidate], semantic: dict[str, float], now: datetime
) -> dict[str, Score]:
    """Each candidate's score by key, recency measured at `now`."""
    half_life = settings.ENGRAM_CONTEXT_HALF_LIFE_MINUTES
    return {
        c.key: score_candidate(
            c, now=now, semantic=semantic.get(c.key, 0.0), half_life_minutes=half_life
        )
        for c in candidates
    }


def semantic_scores(
    candidates: list[Candidate], query: str, known: dict[str, float]
) -> dict[str, float]:
    """The cosine of `query` and each candidate, by key: `known` as given (the recalled
    turns carry the search's), the others embedded here (text and reply together).
    Without a query, `known` alone."""
    if not query.strip():
        return dict(known)
    to_embed = [c for c in candidates if c.key not in known]
    vectors = _vectors([_embedded_text(c) for c in to_embed])
    # The query's vector from the query cache, which the turn recall and the memory
    # search have filled, not from `_vectors` (whose cache holds the session's texts;
    # the query is new).
    query_vector = np.asarray(embed_query(query), dtype=np.float32)
    return known | {c.key: float(vectors[_embedded_text(c)] @ query_vector) for c in to_embed}


def _embedded_text(candidate: Candidate) -> str:
    return f"{candidate.text}\n{candidate.reply}".strip() if candidate.reply else candidate.text


def _vectors(texts: list[str]) -> dict[str, np.ndarray]:
    """Embeddings of distinct texts in one batch; cached per process (LRU), since a
    session's summaries and milestones come back on every request."""
    out: dict[str, np.ndarray] = {}
    missing: list[str] = []
    for text in dict.fromkeys(texts):
        cached = _VECTOR_CACHE.get(text)
        if cached is None:
            missing.append(text)
        else:
            _VECTOR_CACHE.move_to_end(text)
            out[text] = cached
    if missing:
        for text, vector in zip(missing, embed_texts(missing), strict=True):
            array = np.asarray(vector, dtype=np.float32)
            out[text] = array
            _VECTOR_CACHE[text] = array
        while len(_VECTOR_CACHE) > _VECTOR_CACHE_SIZE:
            _VECTOR_CACHE.popitem(last=False)
    return out
