"""Context candidates from tool outputs.

A step may carry a short `tool_output` (or a summary of it). The newest ones of the
session are offered to the context as kind `tool_output`, in their own section, with the
step's success as their signal (seed 004: "tool success"). Rolled-back turns' outputs are
not offered; nor, for a context asked in the past, those of turns said after it
(`candidates.said`).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from django.conf import settings

from memory_app.selectors.context.candidate import Candidate
from memory_app.selectors.context.lines import line
from sessions_app.selectors.turns import steps_with_tool_output

if TYPE_CHECKING:
    from sessions_app.models import ChatSession

TOOL_SIGNAL = 1.0
FAILED_TOOL_SIGNAL = 0.3


def tool_output_candidates(
    session: ChatSession, said_by: datetime | None = None
) -> list[Candidate]:
    """The newest ENGRAM_CONTEXT_TOOL_OUTPUTS tool outputs of the session's live turns;
    with `said_by`, of the turns said by then."""
    limit = int(settings.ENGRAM_CONTEXT_TOOL_OUTPUTS)
    if limit <= 0:
        return []
    steps = steps_with_tool_output(session_id=session.pk, limit=limit, said_by=said_by)
    return [
        Candidate(
            key=f"tool:{step.pk}",
            kind="tool_output",
            section="tools",
            text=line(f"[t{step.turn_number}] {step.step_type}: {step.tool_output}"),
            role="tool",
            at=step.created_at,
            signal=TOOL_SIGNAL if step.success else FAILED_TOOL_SIGNAL,
            order=(step.turn_number, step.step_order),
        )
        for step in steps
    ]
