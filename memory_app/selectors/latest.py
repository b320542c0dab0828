"""The newer first, for a question about the current state.

"Where do I live now?" is answered by the latest of what the user said about it. The
current-state weighting (memory_app.selectors.currency) keeps a superseded memory below
its successor, but only memories that state a subject are superseded: a line of a
conversation ("I just moved into a flat in Lisbon", in March) states none, and neither
does a fact in words no subject rule reads. So each hit of such a question gets a
credit for how late its time is among the hits': its rank in their order of time, 0 for
the earliest and 1 for the latest (equal times share their mean rank), LATEST_WEIGHT
times it added to its score (part `latest`). A rank, not the time's place in the
hits' span: one memory of long ago would squeeze every other into the span's end. A
hit's time is when what it tells began (memory_app.selectors.validity); a time after the
moment the question is asked about counts as that moment. Between hits of about the
same relevance the newer ranks first; one clearly more relevant (by more than
LATEST_WEIGHT / 0.6 = 1/6 of the pool's relevance range) still ranks above it.

Chosen on both dev sets together (docs/decisions/search-latest-for-now.md has the
figures).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime

LATEST_WEIGHT = 0.1


def latest_credits(
    began: Mapping[uuid.UUID, datetime], present: datetime
) -> dict[uuid.UUID, float]:
    """Each hit's rank in the hits' order of time, 0 (earliest) to 1 (latest), equal
    times at their mean rank, a time taken at most `present`; all 0 when they share one
    time."""
    times = {pk: min(at, present) for pk, at in began.items()}
    ordered = sorted(times.values())
    if not ordered or ordered[0] == ordered[-1]:
        return dict.fromkeys(times, 0.0)
    first: dict[datetime, int] = {}
    last: dict[datetime, int] = {}
    for index, at in enumerate(ordered):
        first.setdefault(at, index)
        last[at] = index
    top = len(ordered) - 1
    return {pk: (first[at] + last[at]) / 2 / top for pk, at in times.items()}
