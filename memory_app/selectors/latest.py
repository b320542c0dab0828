"""The newer first, for a question about the current state.

"Where do I live now?" is answered by the latest of what the user said about it. The
current-state weighting (memory_app.selectors.currency) keeps a superseded memory below
its successor, but only memories that state a subject are superseded: a line of a
conversation ("I just moved into a flat in Lisbon", in March) states none, and neither
does a fact in words no subject rule reads. So each hit of such a question gets a
credit for how late its time is against the hits that answer it best, those of relevance
at least REFERENCE_RELEVANCE (the upper half of the pool's range): where its time lies
in their span of time, 0 at (or before) the earliest, 1 at (or after) the latest, linear
between (part `latest`); LATEST_WEIGHT times it is added to its score. The span is
theirs, not every hit's: a fact of long ago that does not answer, or a line of last
night about something else, would squeeze the answers' credits together. A hit's time
is when what it tells began (memory_app.selectors.validity); a time after the moment the
question is asked about counts as that moment. Between hits of about the same relevance
the newer ranks first; one clearly more relevant (by more than LATEST_WEIGHT / 0.6 = 1/6
of the pool's relevance range) still ranks above it.

Chosen on both dev sets together (docs/decisions/search-latest-for-now.md has the
figures).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime

LATEST_WEIGHT = 0.1
REFERENCE_RELEVANCE = 0.5


def latest_credits(
    began: Mapping[uuid.UUID, datetime],
    relevance: Mapping[uuid.UUID, float],
    present: datetime,
) -> dict[uuid.UUID, float]:
    """Each hit's time placed in the span of the times of the hits of `relevance` at least
    REFERENCE_RELEVANCE, 0 (at or before its start) to 1 (at or after its end), a time
    taken at most `present`; all 0 when that span is one instant."""
    times = {pk: min(at, present) for pk, at in began.items()}
    reference = [at for pk, at in times.items() if relevance.get(pk, 0.0) >= REFERENCE_RELEVANCE]
    if not reference or min(reference) == max(reference):
        return dict.fromkeys(times, 0.0)
    earliest, latest = min(reference), max(reference)
    span = (latest - earliest).total_seconds()
    return {
        pk: min(1.0, max(0.0, (at - earliest).total_seconds() / span)) for pk, at in times.items()
    }
