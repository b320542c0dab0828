"""The lead's words as a third signal of the fusion (pseudo-relevance feedback).

The line that ranks first (`search.lead`) says in its own words what the question is
about: "When did Melanie run a charity race?" is led by "That charity race sounds
great! Did you run it for the shelter?", and the lines that answer it share the lead's
rarer words ("shelter", "5k") more than the question's. So each pool member's BM25 of
the lead's FEEDBACK_TERMS rarest lexemes is fused with its cosine and its BM25 of the
query: z-normalised over the pool like them, weight FEEDBACK_WEIGHT beside the other
two's 1 - FEEDBACK_WEIGHT (part `feedback`, that BM25; the new relevance replaces the
old in the score, weighed as before). The lead itself shares all its words and rises by
little: it was first already.

The words are weighed within the pool (local feedback): a lexeme's IDF is over the
pool's members, and a member's length is its distinct lexemes against the pool's
average. A word most of the pool shares says nothing of which members answer, however
rare it is in the user's memories; and the members' lexemes come with the pool's own
statement (`Candidate.lexemes`), so the step costs no round trip. A lexeme counts once
a member (its positions are not read): the pool's lexemes are the distinct ones.

A hybrid search's step only (vector and lexical modes ask for one signal), when the
pool has a line of a conversation: memories outside threads (facts, free notes) have
no lead, and their search is unchanged.

Chosen on both dev sets together, read from their pools offline;
docs/decisions/search-lead-feedback.md has the figures.
"""

from __future__ import annotations

import math
import uuid
from collections import Counter
from collections.abc import Mapping
from typing import TYPE_CHECKING

from memory_app.selectors.search.bm25 import BM25_B, BM25_K1
from memory_app.selectors.search.fusion import WEIGHTS, fuse_columns
from memory_app.selectors.search.lead import lead_line, places_of
from memory_app.selectors.search_time import BEGAN_AFTER_FACTOR

if TYPE_CHECKING:
    from memory_app.selectors.search.fusion import Scored
    from memory_app.selectors.search.pool import Candidate

FEEDBACK_WEIGHT = 0.2
FEEDBACK_TERMS = 40


def apply_feedback(
    scored: list[Scored],
    candidates: Mapping[uuid.UUID, Candidate],
    *,
    hybrid: bool,
    semantic_weight: float,
) -> list[Scored]:
    """`scored` re-fused with the lead's words (module docstring): every hit's part
    `feedback` set (0 for a member sharing none of them, and for all in a search that is
    not `hybrid` or whose pool has no lead), its relevance and score moved with it."""
    lead = lead_line(scored, places_of(scored, candidates)) if hybrid else None
    if lead is None:
        return [(pk, score, {**parts, "feedback": 0.0}) for pk, score, parts in scored]
    members = [candidates[pk] for pk, _, _ in scored]
    signal = lead_words_bm25(candidates[lead[0]].lexemes, [m.lexemes for m in members])
    weights = (
        (1 - FEEDBACK_WEIGHT) * semantic_weight,
        (1 - FEEDBACK_WEIGHT) * (1 - semantic_weight),
        FEEDBACK_WEIGHT,
    )
    relevance = fuse_columns(
        [[m.semantic for m in members], [m.lexical for m in members], signal], weights
    )
    return [
        _refused(hit, fused, value)
        for hit, fused, value in zip(scored, relevance, signal, strict=True)
    ]


def lead_words_bm25(lead: tuple[str, ...], members: list[tuple[str, ...]]) -> list[float]:
    """Each member's BM25 of the lead's FEEDBACK_TERMS words of highest IDF over
    `members` (the lead among them), a lexeme counted once a member; 0 for a member
    sharing none."""
    words = set(lead)
    held = [words.intersection(lexemes) for lexemes in members]
    frequency = Counter(word for shared in held for word in shared)
    count = len(members)
    idf = {word: math.log(1 + (count - df + 0.5) / (df + 0.5)) for word, df in frequency.items()}
    chosen = set(sorted(idf, key=lambda word: (-idf[word], word))[:FEEDBACK_TERMS])
    average = max(sum(len(lexemes) for lexemes in members) / max(count, 1), 1.0)
    return [
        sum(idf[word] for word in shared & chosen)
        * (BM25_K1 + 1)
        / (1 + BM25_K1 * (1 - BM25_B + BM25_B * len(lexemes) / average))
        for shared, lexemes in zip(held, members, strict=True)
    ]


def _refused(hit: Scored, relevance: float, feedback: float) -> Scored:
    """One hit with its new relevance: its score moved by the relevance's weight times the
    change (halved with the rest of it when it began after the named time)."""
    pk, score, parts = hit
    change = WEIGHTS["relevance"] * (relevance - parts["relevance"])
    if parts.get("began_after"):
        change *= BEGAN_AFTER_FACTOR
    new_parts = {**parts, "relevance": round(relevance, 6), "feedback": round(feedback, 6)}
    return pk, round(score + change, 6), new_parts
