"""Context candidates from the sessions a rotated session continues.

Rotation (`sessions_app.services.rotation`) archives a long session and records the next
turn in a successor linked by `previous_session`. The successor starts with no turns and
no summaries of its own; what was said before lives in its predecessors. Their active
summaries, milestones and open (never compacted) turns are offered here, as lines of the
summaries and milestones sections placed before the successor's own, so they compete for
the budget like any other candidate and the breakdown names them (`kind`
`previous_summary`, `previous_milestone`, `previous_turn`). Asked in the past, each
predecessor is read as the session's own turns are (`candidates.said`): nothing it said
after `as_of`, no summary reaching past it, the turns of such a summary verbatim.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memory_app.selectors.context.candidate import Candidate, content_tokens, turn_ref
from memory_app.selectors.context.candidates.said import SessionAt, session_at
from memory_app.selectors.context.candidates.summaries import summary_candidates
from memory_app.selectors.context.lines import line
from memory_app.window.selectors import active_summaries
from sessions_app.selectors.sessions import session_previous
from sessions_app.selectors.turns import turns_live, turns_open

if TYPE_CHECKING:
    from django.db.models import QuerySet

    from memory_app.window.models import ContextSummary
    from sessions_app.models import ChatSession, ChatTurn

MAX_OPEN_TURNS = 20  # a predecessor's newest open turns offered, per session
OPEN_TURN_SIGNAL = 0.3  # as for an open turn outside the window
AFTER_SUMMARIES = 10**9  # a predecessor's turns render after its summaries


def predecessor_candidates(
    session: ChatSession,
    *,
    compression: bool,
    depth: int,
    budget: int | None = None,
    said_by: datetime | None = None,
) -> list[Candidate]:
    """Candidates from up to `depth` sessions back (the context policy's
    `predecessor_depth`, ENGRAM_CONTEXT_PREDECESSOR_DEPTH by default); their summaries
    only with `compression` on, read exactly as the session's own would be, and for a
    context asked in the past only what was said by `said_by` (`candidates.said`). The walk
    also stops once the lines gathered so far take more than `budget` tokens: the packer
    could not fit an older session's lines anyway, and each step back costs queries.
    Their section order is negative (depth first), so they render before the session's
    own lines, oldest session first."""
    out: list[Candidate] = []
    current = session
    for level in range(1, depth + 1):
        if current.previous_session_id is None:
            break
        if budget is not None and sum(content_tokens(c) for c in out) >= budget:
            break
        previous = session_previous(current)
        if previous is None:
            break
        summaries, at = session_at(
            previous.pk, active_summaries(previous) if compression else [], said_by
        )
        out.extend(_previous_summaries(previous, level, summaries))
        out.extend(_previous_open_turns(previous, level, at, compression))
        current = previous
    return out


def _previous_summaries(
    previous: ChatSession, level: int, summaries: list[ContextSummary]
) -> list[Candidate]:
    """The predecessor's `summaries` and their milestones, keyed and kinded as its own."""
    prefix = f"previous:{previous.pk}:"
    return [
        replace(
            candidate,
            key=prefix + candidate.key,
            kind=f"previous_{candidate.kind}",
            order=(-level, *candidate.order),
        )
        for candidate in summary_candidates(previous, summaries)
    ]


def _previous_open_turns(
    previous: ChatSession, level: int, then: SessionAt | None, compression: bool
) -> list[Candidate]:
    """The predecessor's newest MAX_OPEN_TURNS open turns, one line each; for a context
    asked in the past, its turns as they stood then (`then`)."""
    return [
        Candidate(
            key=f"previous:{previous.pk}:turn:{number}",
            kind="previous_turn",
            section="summaries",
            text=line(f"[previous session, turn {number}] user: {user} | agent: {assistant}"),
            role="user",
            at=at,
            signal=OPEN_TURN_SIGNAL,
            order=(-level, AFTER_SUMMARIES + number),
            shows=turn_ref(previous.pk, number),
            shows_whole=False,  # one line, cut to its size
        )
        for number, user, assistant, at in previous_open_turns_query(previous.pk, then, compression)
    ]


def previous_open_turns_query(
    session_id: Any, at: SessionAt | None = None, compression: bool = True
) -> QuerySet[ChatTurn, tuple[Any, ...]]:
    """The statement `_previous_open_turns` reads (snapshot-tested without `at`). With
    `at`, the live turns said by its moment that no summary kept for it restates (with
    `compression` off no summary stands in for a turn, and compacted ones stay out as
    they do asked now)."""
    if at is None:
        turns = turns_open(session_id=session_id)
    else:
        turns = turns_live(session_id=session_id).filter(
            occurred_at__lte=at.moment, turn_number__gt=at.summarised_through
        )
        if not compression:
            turns = turns.filter(compacted=False)
    return turns.order_by("-turn_number").values_list(
        "turn_number", "user_message", "assistant_response", "created_at"
    )[:MAX_OPEN_TURNS]
