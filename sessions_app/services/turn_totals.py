"""A turn's steps priced and summed: the step input, pricing, the turn's totals and what
they add to the session, the per-turn ceilings, and the warnings a turn's spend raises.
Nothing here writes; `turn_drafts` decides the turn and `turn_recording` records it."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings

from sessions_app.errors import InvalidInput
from sessions_app.fastpaths import instance_new
from sessions_app.hooks import StepUsage, price_step, turn_runaway_sign
from sessions_app.models import ChatSession, ChatTurn, TurnStep
from sessions_app.selectors.budgets import budget_remaining
from sessions_app.selectors.spend import session_window_failures
from sessions_app.services.capture import capture_capped
from sessions_app.services.rotation import rotation_threshold
from sessions_app.services.spend_budgets import BudgetPassed
from sessions_app.usage import TokenCounts, UsageError

COST_PRECISION = Decimal("1e-10")  # money_field's decimal places
SUCCESS_WITH_ERROR = (
    "A step with `success: true` carries no error: send `success: false` with it, or no error."
)


@dataclass(frozen=True)
class StepInput:
    """One call inside a turn, counts already normalised (see `sessions_app.usage`)."""

    step_type: str
    counts: TokenCounts
    model: str = ""
    duration_ms: int = 0
    success: bool = True
    error: str | None = None
    usage_raw: dict[str, Any] | None = None
    tool_output: str = ""
    prompt: list[dict[str, Any]] | None = None  # kept only when capture is on
    completion: str = ""


@dataclass(frozen=True)
class TurnWarning:
    code: str
    message: str


def turn_limits_passed(turn: ChatTurn) -> str:
    """The per-turn ceilings the turn's summed steps passed, comma-separated ("tokens",
    "cost"); blank when none is set or passed. A turn is never refused for it: it is
    stored, flagged and warned about, so that a runaway loop shows in the log."""
    passed = []
    max_tokens = int(settings.ENGRAM_TURN_MAX_TOKENS)
    if max_tokens and turn.input_tokens + turn.output_tokens > max_tokens:
        passed.append("tokens")
    max_cost = Decimal(str(settings.ENGRAM_TURN_MAX_COST_USD))
    if max_cost and turn.cost_usd > max_cost:
        passed.append("cost")
    return ",".join(passed)


def _quantize(cost: Decimal | None) -> Decimal | None:
    """To the stored precision, so that the turn's sum equals the sum of its stored steps."""
    return None if cost is None else cost.quantize(COST_PRECISION)


def turn_price_steps(
    *,
    turn: ChatTurn,
    session: ChatSession,
    steps: list[StepInput],
    at: datetime,
    capture: bool = False,
) -> list[TurnStep]:
    """The turn's step rows, priced, not saved. InvalidInput for counts that do not add
    up; nothing is written before that, so a batch can refuse just this turn."""
    rows = []
    for order, step in enumerate(steps, start=1):
        prompt, completion = capture_capped(step.prompt, step.completion) if capture else (None, "")
        try:
            counts = step.counts.validate(prefix=f"steps.{order - 1}.")
        except UsageError as exc:
            raise InvalidInput(fields={exc.field: [exc.message]}) from exc
        cost = _quantize(price_step(StepUsage(model=step.model, tokens=counts, at=at)))
        if cost is None and not step.model and counts == TokenCounts():
            cost = Decimal(0)  # a tool call: no LLM, nothing to price
        rows.append(
            instance_new(
                TurnStep,
                tenant_id=session.tenant_id,
                turn=turn,
                session=session,
                user_id=session.user_id,
                agent_id=session.agent_id,
                step_order=order,
                step_type=step.step_type,
                model=step.model,
                input_tokens=counts.input_tokens,
                output_tokens=counts.output_tokens,
                cached_tokens=counts.cached_tokens,
                cache_write_tokens=counts.cache_write_tokens,
                reasoning_tokens=counts.reasoning_tokens,
                cost_usd=cost,
                price_missing=cost is None,
                duration_ms=step.duration_ms,
                success=step.success,
                error=step.error,
                usage_raw=step.usage_raw,
                tool_output=step.tool_output,
                prompt=prompt,
                completion=completion,
            )
        )
    return rows


# The session's running totals and the turn attribute each one adds up.
SESSION_TOTALS = {
    "total_input_tokens": "input_tokens",
    "total_output_tokens": "output_tokens",
    "total_cached_tokens": "cached_tokens",
    "total_reasoning_tokens": "reasoning_tokens",
    "total_cost_usd": "cost_usd",
    "total_calls": "call_count",
    "total_errors": "error_count",
    "unpriced_calls": "unpriced_calls",
    "total_duration_ms": "duration_ms",
}


def turn_set_totals(*, turn: ChatTurn, step_rows: list[TurnStep], duration_ms: int | None) -> None:
    """The turn's totals from its priced steps (before it is inserted)."""
    priced = [row.cost_usd for row in step_rows if row.cost_usd is not None]
    turn.input_tokens = sum(row.input_tokens for row in step_rows)
    turn.output_tokens = sum(row.output_tokens for row in step_rows)
    turn.cached_tokens = sum(row.cached_tokens for row in step_rows)
    turn.reasoning_tokens = sum(row.reasoning_tokens for row in step_rows)
    turn.cost_usd = sum(priced, Decimal(0))
    turn.call_count = len(step_rows)
    turn.error_count = sum(1 for row in step_rows if not row.success)
    turn.unpriced_calls = len(step_rows) - len(priced)
    turn.duration_ms = (
        duration_ms if duration_ms is not None else sum(row.duration_ms for row in step_rows)
    )


def turn_increments(turn: ChatTurn) -> dict[str, Any]:
    """What the turn adds to its session's counters."""
    return {
        "turn_count": 1,
        "last_turn_number": 1,
        **{total: getattr(turn, name) for total, name in SESSION_TOTALS.items()},
    }


def turn_price_warnings(step_rows: list[TurnStep]) -> list[TurnWarning]:
    return [
        TurnWarning(
            code="price_missing",
            message=f"No price for model {row.model!r}; the step's cost is not counted.",
        )
        for row in step_rows
        if row.cost_usd is None and row.model
    ]


def budget_exceeded_warning(*, was_exceeded: bool) -> TurnWarning:
    return TurnWarning(
        code="budget_exceeded",
        message=(
            "The session's budget is spent"
            + ("" if was_exceeded else " with this turn")
            + "; the turn was stored. Check POST …/budget/check before spending more."
        ),
    )


def spend_budget_warnings(passed: list[BudgetPassed]) -> list[TurnWarning]:
    """One `spend_budget_exceeded` per period budget the turn's spend is at or past."""
    warnings = []
    for budget in passed:
        spent = [
            f"{budget.spent_tokens} of {budget.limit_tokens} tokens"
            if budget.limit_tokens is not None
            else "",
            f"{budget.spent_usd} of {budget.limit_usd} USD" if budget.limit_usd is not None else "",
        ]
        then = (
            "`budget/check` refuses calls under it"
            if budget.action == "refuse"
            else "it only alerts"
        )
        warnings.append(
            TurnWarning(
                code="spend_budget_exceeded",
                message=(
                    f"The {budget.scope} budget {budget.name or budget.budget_id} "
                    f"({budget.period}, id {budget.budget_id}) is spent with this turn's "
                    f"spend: {', '.join(part for part in spent if part)}. The turn was "
                    f"stored; {then} until its period ends."
                ),
            )
        )
    return warnings


def reservation_unknown_warning(reservation_id: Any) -> TurnWarning:
    return TurnWarning(
        code="reservation_unknown",
        message=(
            f"`reservation_id` {reservation_id} names no reservation of this session: "
            "unknown, another session's, already spent by an earlier turn, or purged after "
            "its lease ended. The turn was stored and spent the session's oldest live "
            "reservation, if any; name the id `budget/check` returned for this session."
        ),
    )


def steps_validate(steps: list[StepInput]) -> None:
    """InvalidInput for counts that do not add up, or a successful step that carries an
    error (which would count as a success and hide the failure), before anything is
    written for the turn (a batch refuses just that item)."""
    for order, step in enumerate(steps):
        try:
            step.counts.validate(prefix=f"steps.{order}.")
        except UsageError as exc:
            raise InvalidInput(fields={exc.field: [exc.message]}) from exc
        if step.success and (step.error or "").strip():
            raise InvalidInput(fields={f"steps.{order}.error": [SUCCESS_WITH_ERROR]})


def turn_warnings(
    *,
    turn: ChatTurn,
    step_rows: list[TurnStep],
    session: ChatSession,
    rotated_from: ChatSession | None,
    was_exceeded: bool,
    now: datetime,
    failures: WindowFailures | None = None,
) -> list[TurnWarning]:
    """What the turn's answer warns of: unpriced models, a per-turn ceiling passed, the
    session rotated into `session`, the budget spent (`was_exceeded`: before the turn),
    a runaway sign (counting `failures` of turns drafted before it in the same batch)."""
    warnings = turn_price_warnings(step_rows)
    if turn.over_limit:
        warnings.append(
            TurnWarning(
                code="turn_over_limit",
                message=(
                    f"The turn's steps passed the per-turn {turn.over_limit.replace(',', ' and ')} "
                    "ceiling (ENGRAM_TURN_MAX_TOKENS / ENGRAM_TURN_MAX_COST_USD); the turn was "
                    "stored and flagged."
                ),
            )
        )
    if rotated_from is not None:
        warnings.append(
            TurnWarning(
                code="session_rotated",
                message=(
                    f"Session {rotated_from.pk} passed {rotation_threshold(rotated_from)} "
                    f"tokens and was archived; this turn opened its successor {session.pk}. "
                    "Record further turns there."
                ),
            )
        )
    if budget_remaining(session).exceeded:
        warnings.append(budget_exceeded_warning(was_exceeded=was_exceeded))
    runaway = runaway_warning(session=session, step_rows=step_rows, now=now, failures=failures)
    if runaway is not None:
        warnings.append(runaway)
    return warnings


FailureKey = tuple[str, str, str]  # (step_type, model, error) of a failing step


def _failing(step_rows: list[TurnStep]) -> Counter[FailureKey]:
    return Counter((s.step_type, s.model, s.error or "") for s in step_rows if not s.success)


@dataclass
class WindowFailures:
    """The failures in the runaway window of the sessions of turns drafted together (one
    batch): those stored before (read from the database once per session and failure,
    then kept) and those of the turns drafted so far, which are not written until the
    batch's COPY. So an item whose failure makes the Nth of a retry loop warns in its
    own answer when earlier items of its batch failed the same way, as it would had
    they been posted one by one."""

    stored: dict[tuple[Any, FailureKey], int] = field(default_factory=dict)
    drafted: Counter[tuple[Any, FailureKey]] = field(default_factory=Counter)

    def earlier(
        self, *, session_id: Any, keys: list[FailureKey], since: datetime, until: datetime
    ) -> dict[FailureKey, int]:
        unread = [key for key in keys if (session_id, key) not in self.stored]
        if unread:
            read = session_window_failures(
                session_id=session_id, keys=unread, since=since, until=until
            )
            for key in unread:
                self.stored[(session_id, key)] = read.get(key, 0)
        return {
            key: self.stored[(session_id, key)] + self.drafted[(session_id, key)] for key in keys
        }

    def add(self, *, session_id: Any, step_rows: list[TurnStep]) -> None:
        """Count a drafted turn's failing steps for the turns drafted after it."""
        for key, count in _failing(step_rows).items():
            self.drafted[(session_id, key)] += count


def _earlier_failures(
    *,
    session: ChatSession,
    step_rows: list[TurnStep],
    now: datetime,
    failures: WindowFailures | None = None,
) -> dict[FailureKey, int]:
    """How often the turn's failing steps failed earlier in the runaway window, read only
    when that can make a retry loop: the session's failures, this turn's included
    (`total_errors`), reach the loop count, and the turn's own do not alone. Most turns
    fail nothing or belong to a session with few failures, and read nothing. With
    `failures` (turns drafted together), the earlier turns' failures are counted too."""
    loop = settings.ENGRAM_RUNAWAY_RETRY_LOOP_COUNT
    failing = _failing(step_rows)
    if not failing or session.total_errors < loop or max(failing.values()) >= loop:
        return {}
    since = now - timedelta(seconds=settings.ENGRAM_RUNAWAY_WINDOW_SECONDS)
    if failures is not None:
        return failures.earlier(session_id=session.pk, keys=list(failing), since=since, until=now)
    return session_window_failures(
        session_id=session.pk, keys=list(failing), since=since, until=now
    )


def runaway_warning(
    *,
    session: ChatSession,
    step_rows: list[TurnStep],
    now: datetime,
    failures: WindowFailures | None = None,
) -> TurnWarning | None:
    """`session_runaway` while the session is flagged (read with its lock); else
    `runaway_detected` when this turn's steps show a runaway sign, counting the same
    failures earlier in the window (`_earlier_failures`), which the check that follows
    the turn flags."""
    if session.runaway_at is not None:
        blocked = session.runaway_blocked
        return TurnWarning(
            code="session_runaway",
            message=(
                f"The session is flagged runaway ({session.runaway_reason})"
                + (" and blocked: `budget/check` refuses until an operator unblocks it."
                   if blocked else "; stop and look before spending more.")
            ),
        )  # fmt: skip
    sign = turn_runaway_sign(
        step_rows,
        _earlier_failures(session=session, step_rows=step_rows, now=now, failures=failures),
    )
    if sign is None:
        return None
    reason, detail = sign
    return TurnWarning(
        code="runaway_detected",
        message=(
            f"This turn's steps show a runaway sign, {reason} ({detail}); the session is "
            "being flagged runaway (and blocked when ENGRAM_RUNAWAY_AUTO_BLOCK is on). "
            "Stop the loop before spending more."
        ),
    )
