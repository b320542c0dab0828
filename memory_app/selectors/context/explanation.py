"""What a context says about itself: each included and excluded candidate with its
tokens and score parts, and `parts`, the tokens and counts by kind."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memory_app.selectors.context.candidate import Candidate, content_tokens
from memory_app.selectors.context.eligibility import Eligible
from memory_app.selectors.context.packing import Excluded, Packed
from memory_app.selectors.context.scoring import Score

FRAMING = "framing"  # the part for section headers, joining newlines, message overhead


def candidate_row(candidate: Candidate, score: Score, tokens: int) -> dict[str, Any]:
    """One candidate as `included`/`excluded` list it."""
    return {
        "key": candidate.key,
        "kind": candidate.kind,
        "tokens": tokens,
        "score": round(score.total, 4),
        "score_parts": {
            "recency": round(score.recency, 4),
            "semantic": round(score.semantic, 4),
            "role": score.role,
            "signal": round(score.signal, 4),
        },
    }


@dataclass
class Explanation:
    """`included` and `excluded` as the context lists them, and `parts` by kind."""

    included: list[dict[str, Any]]
    excluded: list[dict[str, Any]]
    parts: dict[str, dict[str, int]]


def explain(
    candidates: list[Candidate], packed: Packed, split: Eligible, scores: dict[str, Score]
) -> Explanation:
    """The packed candidates in packing order, each with its own tokens and whether the
    window's reservation packed it; then what was left out, with why: the part cut from
    a turn that went in cut (`truncated`, its tokens those cut; the turn counts as
    included in `parts`), by the packer (by rank), by the relevance floor
    (`not_relevant`), by the page-out."""
    own = {c.key: content_tokens(c) for c, _, _ in packed.included}
    cut: list[Excluded] = [
        (c, s, packed.truncated[c.key], "truncated")
        for c, s, _ in packed.included
        if c.key in packed.truncated
    ]
    left_out: list[Excluded] = [
        *packed.excluded,
        *((c, scores[c.key], content_tokens(c), "not_relevant") for c in split.unrelated),
        *((c, scores[c.key], content_tokens(c), reason) for c, reason in split.evicted),
    ]
    return Explanation(
        included=[
            {**candidate_row(c, s, own[c.key]), "reserved": c.key in packed.reserved}
            for c, s, _ in packed.included
        ],
        excluded=[
            {**candidate_row(c, s, t), "reason": reason} for c, s, t, reason in cut + left_out
        ],
        parts=_parts_by_kind(candidates, packed, [row[0] for row in left_out], own),
    )


def _parts_by_kind(
    candidates: list[Candidate],
    packed: Packed,
    left_out: list[Candidate],
    own: dict[str, int],
) -> dict[str, dict[str, int]]:
    """Per kind of candidate, how many went in, how many not, and the tokens of those
    that did (`own`, by key). The parts add up to the context's total tokens exactly:
    each candidate's own text, then FRAMING (section headers, joining newlines,
    per-message overhead, reply priming)."""
    parts: dict[str, dict[str, int]] = {}
    for candidate in candidates:
        parts.setdefault(candidate.kind, {"included": 0, "excluded": 0, "tokens": 0})
    for candidate, _, _ in packed.included:
        parts[candidate.kind]["included"] += 1
        parts[candidate.kind]["tokens"] += own[candidate.key]
    for candidate in left_out:
        parts[candidate.kind]["excluded"] += 1
    framing = packed.total_tokens - sum(own.values())
    parts[FRAMING] = {"included": 0, "excluded": 0, "tokens": framing}
    return parts
