"""The baselines Engram's search is measured against, computed in the bench's own
process over the same texts: plain BM25, the configured embedding model's vectors (kept
on disk between runs), z-scores to fuse the two, and the top k of a list of scores."""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Any

_WORD = re.compile(r"[a-z0-9]+")


def bm25_terms(text: str) -> list[str]:
    """Lower-cased word tokens, no stemming, no stop words."""
    return _WORD.findall(text.lower())


class BM25:
    """Okapi BM25 (k1 = 1.5, b = 0.75) over `bm25_terms`: the baseline any search should
    beat."""

    def __init__(self, documents: list[str], k1: float = 1.5, b: float = 0.75) -> None:
        self.docs = [Counter(bm25_terms(doc)) for doc in documents]
        self.lengths = [sum(doc.values()) for doc in self.docs]
        self.avg = sum(self.lengths) / max(1, len(self.docs))
        df: Counter[str] = Counter()
        for doc in self.docs:
            df.update(doc.keys())
        n = len(self.docs)
        self.idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}
        self.k1, self.b = k1, b

    def scores(self, query: str) -> list[float]:
        """The score of every document, in order (0 without a query term)."""
        terms = set(bm25_terms(query))
        out = []
        for index, doc in enumerate(self.docs):
            norm = self.k1 * (1 - self.b + self.b * self.lengths[index] / self.avg)
            out.append(
                sum(
                    self.idf[t] * doc[t] * (self.k1 + 1) / (doc[t] + norm)
                    for t in terms
                    if t in doc
                )
            )
        return out

    def top(self, query: str, k: int) -> list[int]:
        """The indices of the best `k` documents with a query term, best first."""
        scores = [(score, index) for index, score in enumerate(self.scores(query)) if score > 0]
        scores.sort(key=lambda pair: (-pair[0], pair[1]))
        return [index for _, index in scores[:k]]


def zscores(values: list[float]) -> list[float]:
    mean = sum(values) / len(values)
    spread = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
    return [(v - mean) / spread if spread > 1e-12 else 0.0 for v in values]


def ranked(scores: list[float], k: int) -> list[int]:
    return sorted(range(len(scores)), key=lambda i: (-scores[i], i))[:k]


def embedded(texts: list[str]) -> Any:
    """The configured model's vectors of `texts` (a numpy array), kept under bench/out
    by a hash of the model and the texts so a rerun does not embed them again."""
    import hashlib

    import numpy as np
    from django.conf import settings

    from bench.harness import OUT_DIR
    from memory_app.embedding import embed_texts

    digest = hashlib.sha256(settings.ENGRAM_EMBEDDING_MODEL.encode())
    for text in texts:
        digest.update(text.encode() + b"\0")
    path = OUT_DIR / f"embeddings-{digest.hexdigest()[:16]}.npy"
    if path.exists():
        return np.load(path)
    vectors = np.array(embed_texts(texts), dtype=np.float32)
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    np.save(path, vectors)
    return vectors
