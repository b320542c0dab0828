"""Memories that occurred after a question asked in the past rank lower.

A search given `as_of` (the moment the question is asked) reads the memories as they
stood then: a memory whose `occurred_at` is later had not happened yet, so it cannot be
what the question remembers, however well its words match. Its score is multiplied by
AFTER_QUESTION_FACTOR (part `after_question` = 1): it stays findable, below what was
there at the time. A memory without `occurred_at` keeps its score.

Only a question asked in the past (`as_of` more than CLOCK_TOLERANCE before the present)
weighs this way. Asked now (the API's default `as_of`), a memory dated later is a plan
someone stored with its date ("the flight on the 3rd"), and a question about it must
still find it first. A caller without `as_of` (None) keeps every score.

CLOCK_TOLERANCE: `occurred_at` and `as_of` come from different clocks, often a date
without a zone read as UTC (up to 14 hours off) or the start of a conversation that went
on after the question's time; within a day after `as_of` a memory still counts as
before it.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from django.utils import timezone

if TYPE_CHECKING:
    from memory_app.selectors.search.fusion import Scored
    from memory_app.selectors.search.pool import Candidate

AFTER_QUESTION_FACTOR = 0.5
CLOCK_TOLERANCE = timedelta(days=1)


def weigh_after_question(
    scored: list[Scored], candidates: Mapping[uuid.UUID, Candidate], as_of: datetime | None
) -> list[Scored]:
    """`scored` with part `after_question` in every hit's parts and, for a question asked
    in the past, the hits that occurred after `as_of` (beyond CLOCK_TOLERANCE)
    down-weighted."""
    cutoff = happened_by(as_of)
    out: list[Scored] = []
    for pk, score, parts in scored:
        occurred = candidates[pk].occurred_at if pk in candidates else None
        after = cutoff is not None and occurred is not None and occurred > cutoff
        if after:
            score = round(score * AFTER_QUESTION_FACTOR, 6)
        out.append((pk, score, {**parts, "after_question": 1.0 if after else 0.0}))
    return out


def happened_by(as_of: datetime | None) -> datetime | None:
    """The moment after which a memory had not happened when the question was asked, or
    None for a question asked now (a later date is a plan, not a memory yet to come).
    Compared before adding, so an `as_of` at the calendar's end adds nothing. The
    context leaves out what occurred after it (`MemoryFilters.occurred_by`)."""
    if as_of is None or as_of >= timezone.now() - CLOCK_TOLERANCE:
        return None
    return as_of + CLOCK_TOLERANCE
