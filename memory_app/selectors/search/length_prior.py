"""A small prior for the length of a memory, relative to the pool it competes in.

A short line ("Yes!", "Thanks, will do") matches a query on the one or two words it
has and holds little to answer with; a longer memory that matches as well says more.
Each candidate's score moves by LENGTH_WEIGHT times the natural log of its length over
the pool's geometric mean length (part `length`): about 0.014 for a memory twice the
pool's typical length, -0.014 for one half as long. Against the 0.6 weight of relevance
this decides near ties, never a clear gap. Lengths below MIN_BYTES count as MIN_BYTES,
so an empty or one-word memory is not pushed down without bound.

Chosen on both dev sets together (LongMemEval's long messages, LoCoMo's short lines);
docs/decisions/search-ranking-as-of-and-length.md has the figures.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memory_app.selectors.search.fusion import Scored
    from memory_app.selectors.search.pool import Candidate

LENGTH_WEIGHT = 0.02
MIN_BYTES = 20


def apply_length_prior(
    scored: list[Scored], candidates: Mapping[uuid.UUID, Candidate]
) -> list[Scored]:
    """`scored` with the length term added to each score and kept as part `length`."""
    logs = {
        pk: math.log(max(candidates[pk].size, MIN_BYTES)) for pk, _, _ in scored if pk in candidates
    }
    if not logs:
        return scored
    mean = sum(logs.values()) / len(logs)
    out: list[Scored] = []
    for pk, score, parts in scored:
        term = LENGTH_WEIGHT * (logs[pk] - mean) if pk in logs else 0.0
        out.append((pk, round(score + term, 6), {**parts, "length": round(term, 6)}))
    return out
