"""Embedding memories with their passages: one call to the embedder for the texts and
every passage of them, so a batch (a bulk add, the drain of recorded turns) pays one
round of the model, not two."""

from __future__ import annotations

from dataclasses import dataclass

from memory_app.embedding import embed_texts
from memory_app.passage_vectors.text import passage_texts

Vector = list[float]


@dataclass(frozen=True)
class Embedded:
    """The vectors of some texts: `vectors[i]` of text i as a whole, `passages[i]` of
    its passages ([] for a text without passages)."""

    vectors: list[Vector]
    passages: list[list[Vector]]


def embed_documents(texts: list[str]) -> Embedded:
    """The vectors of `texts` and of their passages."""
    cuts = [passage_texts(text) for text in texts]
    flat = [passage for cut in cuts for passage in cut]
    computed = embed_texts([*texts, *flat]) if texts else []
    vectors, rest = computed[: len(texts)], iter(computed[len(texts) :])
    passages = [[next(rest) for _ in cut] for cut in cuts]
    return Embedded(vectors, passages)
