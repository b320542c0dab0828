"""Tool outputs as context candidates, and seed 004's page-out rules.

A step may carry a short `tool_output` (or a summary of it). The newest ones of the
session are offered to the context as kind `tool_output`, in their own section, with the
step's success as their signal (seed 004: "tool success"). Rolled-back turns' outputs are
not offered.

Page-out (seed 004's `should_evict`): before packing, a verbatim turn outside the window
older than ENGRAM_CONTEXT_EVICT_TURN_MINUTES and, when there is a query, a snippet (a
found memory, a tool output, a line from a rotated predecessor) whose similarity to it is below
ENGRAM_CONTEXT_SIMILARITY_FLOOR are evicted: they do not compete for the budget at all,
and the breakdown lists them as excluded with reason `evicted_age` or
`evicted_below_similarity`.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from django.conf import settings

from memory_app.window.packing import Candidate
from sessions_app.selectors.turns import steps_with_tool_output

if TYPE_CHECKING:
    from sessions_app.models import ChatSession

# What seed 004 calls snippets. A `related_memory` is not one: it comes in because of
# its anchor's edge, not because it matches the query.
SNIPPET_KINDS = frozenset({"memory", "tool_output", "previous_turn", "previous_summary"})
FAILED_TOOL_SIGNAL = 0.3


def tool_output_candidates(session: ChatSession, line: Callable[[str], str]) -> list[Candidate]:
    """The newest ENGRAM_CONTEXT_TOOL_OUTPUTS tool outputs of the session's live turns."""
    limit = int(settings.ENGRAM_CONTEXT_TOOL_OUTPUTS)
    if limit <= 0:
        return []
    steps = steps_with_tool_output(session_id=session.pk, limit=limit)
    return [
        Candidate(
            key=f"tool:{step.pk}",
            kind="tool_output",
            section="tools",
            text=line(f"[t{step.turn.turn_number}] {step.step_type}: {step.tool_output}"),
            role="tool",
            at=step.created_at,
            signal=1.0 if step.success else FAILED_TOOL_SIGNAL,
            order=(step.turn.turn_number, step.step_order),
        )
        for step in steps
    ]


def eviction_reason(
    candidate: Candidate,
    *,
    window: set[str],
    semantic: dict[str, float],
    has_query: bool,
    now: datetime,
) -> str | None:
    """Why seed 004's page-out drops the candidate before packing, or None."""
    if candidate.kind == "turn" and candidate.key not in window and candidate.at is not None:
        age = timedelta(minutes=float(settings.ENGRAM_CONTEXT_EVICT_TURN_MINUTES))
        if now - candidate.at > age:
            return "evicted_age"
    floor = float(settings.ENGRAM_CONTEXT_SIMILARITY_FLOOR)
    if has_query and candidate.kind in SNIPPET_KINDS and semantic.get(candidate.key, 0.0) < floor:
        return "evicted_below_similarity"
    return None
