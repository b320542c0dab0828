"""Context candidates from the session's recent failing steps, one line each of the
"failures" section, so the agent sees what just went wrong."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from memory_app.selectors.context.candidate import Candidate
from memory_app.selectors.context.lines import line
from sessions_app.selectors.turns import steps_failed_recent

if TYPE_CHECKING:
    from sessions_app.models import ChatSession

MAX_FAILURES = 5
FAILURE_SIGNAL = 0.7


def failure_candidates(session: ChatSession, said_by: datetime | None = None) -> list[Candidate]:
    """The session's newest MAX_FAILURES failed steps; for a context asked in the past,
    of the turns said by then (`said_by`, `candidates.said`)."""
    steps = steps_failed_recent(session_id=session.pk, limit=MAX_FAILURES, said_by=said_by)
    return [
        Candidate(
            key=f"failure:{step.pk}",
            kind="failure",
            section="failures",
            text=line(
                f"[t{step.turn_number}] {step.step_type}"
                + (f" ({step.model})" if step.model else "")
                + f" failed: {step.error or 'no error given'}"
            ),
            role="tool",
            at=step.created_at,
            signal=FAILURE_SIGNAL,
            order=(step.turn_number, step.step_order),
        )
        for step in steps
    ]
