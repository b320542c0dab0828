"""The search's final order (`best_first`): higher score first, then higher relevance,
then the lower id. The id is compared as its integer, which must order ids as their text
does: the order equal scores have always come in."""

from __future__ import annotations

import random
import uuid

from memory_app.selectors.search.fusion import best_first

EDGES = [
    uuid.UUID(int=0),
    uuid.UUID(int=2**128 - 1),
    uuid.UUID("0000000a-0000-0000-0000-000000000000"),
    uuid.UUID("00000000-0000-0000-0000-00000000000a"),
    uuid.UUID("f0000000-0000-0000-0000-000000000000"),
    uuid.UUID("0fffffff-ffff-ffff-ffff-ffffffffffff"),
]


def test_equal_hits_come_in_the_order_of_their_ids_text() -> None:
    ids = [uuid.UUID(int=random.getrandbits(128)) for _ in range(2000)] + EDGES
    hits = [(pk, 0.5, {"relevance": 0.7}) for pk in ids]
    assert [hit[0] for hit in sorted(hits, key=best_first)] == sorted(ids, key=str)


def test_score_then_relevance_come_before_the_id() -> None:
    low, high = uuid.UUID(int=1), uuid.UUID(int=2)
    hits = [
        (low, 0.5, {"relevance": 0.6}),
        (high, 0.5, {"relevance": 0.9}),
        (low, 0.4, {"relevance": 1.0}),
        (high, 0.9, {"relevance": 0.0}),
    ]
    ordered = sorted(hits, key=best_first)
    assert [(pk.int, score) for pk, score, _ in ordered] == [(2, 0.9), (2, 0.5), (1, 0.5), (1, 0.4)]
