"""Engram's own LLM calls, recorded as steps of the session that caused them.

A summary or an extraction that called the LLM costs tokens like any agent's call; it
is stored through `sessions_app.services.steps.turn_steps_append` as a step of type
`engram.summarize` or `engram.extract` (model, tokens, cost, duration, success, error),
so it counts in `/usage`, the rollups, the dashboards and the session's budget. A failed
call is recorded too (success false, with what it cost, if anything).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memory_app.llm import ChatCompletion, LLMError
from sessions_app.services.steps import turn_steps_append
from sessions_app.services.turn_totals import StepInput
from sessions_app.usage import TokenCounts

if TYPE_CHECKING:
    from sessions_app.models import TurnStep

STEP_SUMMARIZE = "engram.summarize"
STEP_EXTRACT = "engram.extract"


def llm_step_record(
    *, turn_id: int, step_type: str, outcome: ChatCompletion | LLMError
) -> TurnStep | None:
    """Store the call as a step of turn `turn_id`; None when the turn is gone."""
    error = str(outcome)[:2000] if isinstance(outcome, LLMError) else None
    step = StepInput(
        step_type=step_type,
        model=outcome.model,
        counts=TokenCounts(input_tokens=outcome.input_tokens, output_tokens=outcome.output_tokens),
        duration_ms=outcome.duration_ms,
        success=error is None,
        error=error,
        usage_raw=outcome.usage_raw if isinstance(outcome, ChatCompletion) else None,
    )
    rows = turn_steps_append(turn_id=turn_id, steps=[step])
    return rows[0] if rows else None
