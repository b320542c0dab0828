"""Context candidates from the sessions a rotated session continues.

Rotation (`sessions_app.services.rotation`) archives a long session and records the next
turn in a successor linked by `previous_session`. The successor starts with no turns and
no summaries of its own; what was said before lives in its predecessors. Their active
summaries, milestones and open (never compacted) turns are offered here, as lines of the
summaries and milestones sections placed before the successor's own, so they compete for
the budget like any other candidate and the breakdown names them (`kind`
`previous_summary`, `previous_milestone`, `previous_turn`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from memory_app.window.models import ContextSummary
from memory_app.window.packing import Candidate, content_tokens
from sessions_app.selectors.sessions import session_previous
from sessions_app.selectors.turns import turns_open

if TYPE_CHECKING:
    from sessions_app.models import ChatSession

MAX_OPEN_TURNS = 20  # a predecessor's newest open turns offered, per session
OPEN_TURN_SIGNAL = 0.3  # as for an open turn outside the window


def predecessor_candidates(
    session: ChatSession,
    *,
    summary_candidates: Callable[[ChatSession, list[ContextSummary]], list[Candidate]],
    active_summaries: Callable[[ChatSession], list[ContextSummary]],
    line: Callable[[str], str],
    depth: int,
    budget: int | None = None,
) -> list[Candidate]:
    """Candidates from up to `depth` sessions back (the context policy's
    `predecessor_depth`, ENGRAM_CONTEXT_PREDECESSOR_DEPTH by default). The walk also
    stops once the lines gathered so far take more than `budget` tokens: the packer
    could not fit an older session's lines anyway, and each step back costs queries.
    Their section order is negative (depth first), so they render before the session's
    own lines, oldest session first. The summary helpers are the caller's, passed in, so
    that a predecessor's summary reads exactly like one of the session's own."""
    out: list[Candidate] = []
    current = session
    gathered = 0
    for level in range(1, depth + 1):
        if current.previous_session_id is None:
            break
        if budget is not None and gathered >= budget:
            break
        previous = session_previous(current)
        if previous is None:
            break
        prefix = f"previous:{previous.pk}:"
        for candidate in summary_candidates(previous, active_summaries(previous)):
            out.append(
                replace(
                    candidate,
                    key=prefix + candidate.key,
                    kind=f"previous_{candidate.kind}",
                    order=(-level, *candidate.order),
                )
            )
        turns = list(
            turns_open(session_id=previous.pk)
            .order_by("-turn_number")
            .values_list("turn_number", "user_message", "assistant_response", "created_at")[
                :MAX_OPEN_TURNS
            ]
        )
        for number, user, assistant, at in turns:
            out.append(
                Candidate(
                    key=f"{prefix}turn:{number}",
                    kind="previous_turn",
                    section="summaries",
                    text=line(
                        f"[previous session, turn {number}] user: {user} | agent: {assistant}"
                    ),
                    role="user",
                    at=at,
                    signal=OPEN_TURN_SIGNAL,
                    order=(-level, 10**9 + number),  # after that session's summaries
                )
            )
        gathered = sum(content_tokens(candidate) for candidate in out)
        current = previous
    return out
