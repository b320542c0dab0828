"""The memories that state what the question asks for rank higher.

"Where do I live?" asks for the user's home (memory_app.asked_subjects), and "I moved to
Porto last week for the new job." states it (memory_app.subjects, the memory's
`subject`); the two share no word and their cosine is low, so a line that merely sounds
like the question ("I take the metro to the office") can rank above the answer. Each
candidate whose subject is the one the question asks for gets ASKED_WEIGHT added to its
score (part `asked` = 1; halved with the score when it began after the time the query
names, part `began_after`). Both sides are read by deterministic rules, so a match is
near-certain evidence: the weight lifts the answer over a line that sounds like the
question, half the pool's relevance range above it (0.6 * 0.5), as over the newer lines
a question about now credits (part `latest`, at most 0.1). A superseded memory of that
subject is credited too: the current-state weighting, which comes after, still keeps it
below its successor. A question that names a time asks for the subject at that time:
"where did I live in March?" is not answered by a move told in May, so then only a
memory of that time (part `time` above 0, search_time) is credited; the line of March
that tells of the flat in Lisbon keeps its lead.

A question that asks for no subject, and most do not, costs nothing; one that does
costs one statement: which of the pool's members state it.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from psycopg import sql

from memory_app.asked_subjects import asked_subject
from memory_app.selectors.search_time import BEGAN_AFTER_FACTOR

if TYPE_CHECKING:
    from memory_app.selectors.search.fusion import Scored

ASKED_WEIGHT = 0.3

STATING_SQL = sql.SQL(
    "SELECT m.id FROM memory m WHERE m.id = ANY(%(ids)s::uuid[]) AND m.subject = %(subject)s"
)


def apply_asked_subject(
    cursor: Any, query: str, scored: list[Scored], *, timed: bool = False
) -> list[Scored]:
    """`scored` with part `asked` in every hit's parts (1 when the memory states the
    subject the query asks for, and with `timed`, a query that names a time, is of that
    time) and ASKED_WEIGHT times it added to the score."""
    subject = asked_subject(query) if scored else None
    # Only the members of the named time may be credited: only they are read.
    eligible = [pk for pk, _, parts in scored if not timed or parts.get("time", 0.0) > 0]
    stating: set[uuid.UUID] = set()
    if subject is not None and eligible:
        cursor.execute(STATING_SQL, {"ids": eligible, "subject": subject})
        stating = {pk for (pk,) in cursor.fetchall()}
    out: list[Scored] = []
    for pk, score, parts in scored:
        asked = 1.0 if pk in stating else 0.0
        credit = ASKED_WEIGHT * asked * (BEGAN_AFTER_FACTOR if parts.get("began_after") else 1.0)
        out.append((pk, round(score + credit, 6), {**parts, "asked": asked}))
    return out
