"""Runaway detection: the "$2,100 night" (a retry loop that ran all night, 42M tokens)
must be caught within minutes, not on the next invoice.

A session is judged on four signs, all over indexed reads of its recent steps and turns:
- `retry_loop`: the same step (step_type + model + error) failed again and again in the
  window;
- `token_velocity` / `cost_velocity`: tokens or dollars spent in the window over a ceiling;
- `context_growth`: input tokens grew on each of the last N turns up to a floor (the
  context is never compacted, so every turn costs more than the last);
- `budget_exceeded`: past its token or dollar budget.

The first sign found flags the session (through `sessions_app.services.runaway`), opens
one alert for the episode and, with ENGRAM_RUNAWAY_AUTO_BLOCK, blocks it. Checks run
after every recorded turn (`turn_recorded` → task) and in a scan every minute that
catches what a lost task missed.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from itertools import pairwise
from typing import TYPE_CHECKING, Any
from uuid import UUID

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from analytics_app.services.alerts import alert_open, alert_requeue_stuck
from sessions_app.selectors.sessions import (
    session_unflagged,
    sessions_unflagged_with_steps_between,
)
from sessions_app.selectors.spend import (
    sessions_recent_turn_inputs,
    sessions_repeated_failure,
    sessions_step_spend,
)
from sessions_app.services.runaway import session_flag_runaway

if TYPE_CHECKING:
    from sessions_app.models import ChatSession, ChatTurn, TurnStep

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Thresholds:
    window_seconds: int
    max_tokens: int
    max_usd: Decimal
    retry_loop_count: int
    growth_turns: int
    growth_min_input_tokens: int

    @classmethod
    def from_settings(cls) -> Thresholds:
        return cls(
            window_seconds=settings.ENGRAM_RUNAWAY_WINDOW_SECONDS,
            max_tokens=settings.ENGRAM_RUNAWAY_MAX_TOKENS_PER_WINDOW,
            max_usd=Decimal(str(settings.ENGRAM_RUNAWAY_MAX_USD_PER_WINDOW)),
            retry_loop_count=settings.ENGRAM_RUNAWAY_RETRY_LOOP_COUNT,
            growth_turns=settings.ENGRAM_RUNAWAY_GROWTH_TURNS,
            growth_min_input_tokens=settings.ENGRAM_RUNAWAY_GROWTH_MIN_INPUT_TOKENS,
        )


@dataclass(frozen=True)
class RunawayFinding:
    reason: str
    detail: dict[str, Any]


@dataclass
class _Evidence:
    """What the checks read for a batch of sessions: three queries, whatever its size."""

    tokens: dict[UUID, int] = field(default_factory=dict)
    cost: dict[UUID, Decimal] = field(default_factory=dict)
    loops: dict[UUID, tuple[str, str, str, int]] = field(default_factory=dict)
    inputs: dict[UUID, list[int]] = field(default_factory=lambda: defaultdict(list))


def _gather(ids: list[UUID], since: datetime, until: datetime, t: Thresholds) -> _Evidence:
    evidence = _Evidence()
    if not ids:
        return evidence
    for session_id, (tokens, cost) in sessions_step_spend(
        session_ids=ids, since=since, until=until
    ).items():
        evidence.tokens[session_id] = tokens
        evidence.cost[session_id] = cost
    evidence.loops = sessions_repeated_failure(
        session_ids=ids, since=since, until=until, at_least=t.retry_loop_count
    )
    evidence.inputs = sessions_recent_turn_inputs(
        session_ids=ids, until=until, turns=t.growth_turns
    )
    return evidence


def _judge(session: ChatSession, evidence: _Evidence, t: Thresholds) -> RunawayFinding | None:
    """The first sign found, most specific first: a retry loop says what to fix."""
    return _judge_steps(session.pk, evidence, t) or _judge_budget(session)


def runaway_sign_of_turn(
    steps: list[TurnStep], earlier_failures: dict[tuple[str, str, str], int]
) -> tuple[str, dict[str, Any]] | None:
    """The sign a turn's steps show, judged as the check judges the window (the turn's
    steps are all inside it, so the check that follows the turn finds this sign or one
    it ranks first): a failure repeated in the window, the turn's own failures counted
    with `earlier_failures` (the same failures earlier in the window, by (step_type,
    model, error)); tokens or dollars past the ceiling. In memory; registered as
    sessions_app's `turn_runaway_sign` judge."""
    t = Thresholds.from_settings()
    evidence = _Evidence()
    key = None
    failures: dict[tuple[str, str, str], int] = defaultdict(int)
    for step in steps:
        key = step.session_id
        if key is None:  # an erased user's step: in no session, so in no turn being judged
            continue
        evidence.tokens[key] = evidence.tokens.get(key, 0) + step.input_tokens + step.output_tokens
        evidence.cost[key] = evidence.cost.get(key, Decimal(0)) + (step.cost_usd or Decimal(0))
        if not step.success:
            failure = (step.step_type, step.model, step.error or "")
            if failure not in failures:
                failures[failure] = earlier_failures.get(failure, 0)
            failures[failure] += 1
    if failures and key is not None:  # a failure means a step, so its session's key
        (step_type, model, error), count = max(failures.items(), key=lambda item: item[1])
        if count >= t.retry_loop_count:
            evidence.loops[key] = (step_type, model, error, count)
    finding = _judge_steps(key, evidence, t)
    return None if finding is None else (finding.reason, finding.detail)


def _judge_steps(key: Any, evidence: _Evidence, t: Thresholds) -> RunawayFinding | None:
    window = {"window_seconds": t.window_seconds}
    loop = evidence.loops.get(key)
    if loop is not None:
        step_type, model, error, count = loop
        return RunawayFinding(
            "retry_loop",
            {**window, "step_type": step_type, "model": model, "error": error[:500],
             "failures": count, "threshold": t.retry_loop_count},
        )  # fmt: skip
    tokens = evidence.tokens.get(key, 0)
    if tokens > t.max_tokens:
        return RunawayFinding(
            "token_velocity", {**window, "tokens": tokens, "threshold": t.max_tokens}
        )
    cost = evidence.cost.get(key, Decimal(0))
    if cost > t.max_usd:
        return RunawayFinding(
            "cost_velocity", {**window, "cost_usd": str(cost), "threshold": str(t.max_usd)}
        )
    inputs = evidence.inputs.get(key, [])
    if (
        len(inputs) >= t.growth_turns >= 2
        and all(later > earlier for earlier, later in pairwise(inputs))
        and inputs[-1] >= t.growth_min_input_tokens
    ):
        return RunawayFinding(
            "context_growth",
            {"turns": len(inputs), "input_tokens": inputs, "floor": t.growth_min_input_tokens},
        )
    return None


def _judge_budget(session: ChatSession) -> RunawayFinding | None:
    total_tokens = session.total_input_tokens + session.total_output_tokens
    over_tokens = session.budget_tokens is not None and total_tokens > session.budget_tokens
    over_usd = session.budget_usd is not None and session.total_cost_usd > session.budget_usd
    if session.budget_exceeded_at is not None or over_tokens or over_usd:
        return RunawayFinding(
            "budget_exceeded",
            {
                "tokens": total_tokens,
                "budget_tokens": session.budget_tokens,
                "cost_usd": str(session.total_cost_usd),
                "budget_usd": None if session.budget_usd is None else str(session.budget_usd),
            },
        )
    return None


def runaway_ruled_out(*, session: ChatSession, turn: ChatTurn, t: Thresholds) -> bool:
    """True when no sign of `_judge` can be found for the session just after `turn`, from
    the committed instances alone, so the per-turn hook need not enqueue a check. The
    session's lifetime totals bound what its steps add up to in any window; the growth
    sign needs the latest turn's input at the floor (a concurrent later turn is checked
    by its own hook). Anything else, and any doubt, enqueues the check as before."""
    if session.runaway_at is not None:
        return True  # the check skips flagged sessions
    total_tokens = session.total_input_tokens + session.total_output_tokens
    over_tokens = session.budget_tokens is not None and total_tokens > session.budget_tokens
    over_usd = session.budget_usd is not None and session.total_cost_usd > session.budget_usd
    return (
        session.total_errors < t.retry_loop_count
        and total_tokens <= t.max_tokens
        and session.total_cost_usd <= t.max_usd
        and turn.input_tokens < t.growth_min_input_tokens
        and session.budget_exceeded_at is None
        and not over_tokens
        and not over_usd
    )


def _flag(session: ChatSession, finding: RunawayFinding, now: datetime) -> bool:
    """Flag and open the episode's alert in one transaction: no flag without its alert."""
    with transaction.atomic():
        flagged = session_flag_runaway(
            session_id=session.pk,
            reason=finding.reason,
            detail=finding.detail,
            at=now,
            block=settings.ENGRAM_RUNAWAY_AUTO_BLOCK,
        )
        if flagged:
            session.refresh_from_db()
            alert_open(session=session, episode=now, reason=finding.reason, detail=finding.detail)
    if flagged:
        logger.warning(
            "session %s flagged runaway: %s %s", session.pk, finding.reason, finding.detail
        )
    return flagged


def _check(sessions: list[ChatSession], now: datetime, t: Thresholds) -> list[ChatSession]:
    since = now - timedelta(seconds=t.window_seconds)
    evidence = _gather([s.pk for s in sessions], since, now, t)
    flagged = []
    for session in sessions:
        finding = _judge(session, evidence, t)
        if finding is not None and _flag(session, finding, now):
            flagged.append(session)
    return flagged


def runaway_check_session(*, session_id: UUID, now: datetime | None = None) -> str | None:
    """The per-turn check: the reason if this call flagged the session, else None."""
    now = now or timezone.now()
    session = session_unflagged(session_id=session_id)
    if session is None:
        return None
    flagged = _check([session], now, Thresholds.from_settings())
    return flagged[0].runaway_reason if flagged else None


@dataclass
class ScanReport:
    checked: int = 0
    flagged: list[tuple[UUID, str]] = field(default_factory=list)
    complete: bool = True


def runaway_scan(
    *,
    now: datetime | None = None,
    batch_size: int | None = None,
    max_seconds: float | None = None,
) -> ScanReport:
    """Checks every unflagged session that recorded a step in the window, in batches by
    id, until done or out of time (the next minute's run starts over: the window moves)."""
    now = now or timezone.now()
    t = Thresholds.from_settings()
    size = batch_size or settings.ENGRAM_RUNAWAY_SCAN_BATCH_SIZE
    deadline = time.monotonic() + (max_seconds or settings.ENGRAM_RUNAWAY_SCAN_MAX_SECONDS)
    candidates = sessions_unflagged_with_steps_between(
        since=now - timedelta(seconds=t.window_seconds), until=now
    )
    report = ScanReport()
    after: UUID | None = None
    while True:
        page = candidates.filter(pk__gt=after) if after else candidates
        batch = list(page[:size])
        if not batch:
            break
        report.checked += len(batch)
        for session in _check(batch, now, t):
            report.flagged.append((session.pk, session.runaway_reason))
        after = batch[-1].pk
        if len(batch) < size:
            break
        if time.monotonic() >= deadline:
            report.complete = False
            break
    requeued = alert_requeue_stuck()
    logger.info(
        "runaway scan: %d session(s) checked, %d flagged, %d stuck alert(s) requeued%s",
        report.checked,
        len(report.flagged),
        requeued,
        "" if report.complete else " (stopped at the time limit)",
    )
    return report
