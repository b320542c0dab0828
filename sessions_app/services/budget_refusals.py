"""Why a budget check is refused, in words a person reads, and when asking again can
help: a period budget's end, sooner when others' live reservations hold it (the first
of them to end), never for a limit that does not reset by itself."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import TYPE_CHECKING

from django.conf import settings

from sessions_app.selectors.budgets import amount_text, budget_remaining, overdraw_text
from sessions_app.selectors.spend_budgets import BudgetFigures

if TYPE_CHECKING:
    from sessions_app.services.budgets import BudgetDecision

# The most whole seconds to wait when others' reservations hold what is left: one of them
# may be spent sooner than its lease ends.
RESERVED_RETRY_SECONDS = 60
DOES_NOT_RESET = (
    "This limit does not reset by itself: asking again later will not help until an "
    "operator raises it (or unblocks the session)."
)


@dataclass(frozen=True)
class PeriodRefusal:
    """The first refusing period budget that says no, and when to ask again."""

    figures: BudgetFigures
    reason: str
    retry_after: int | None  # seconds; None: the budget never resets (period "none")


def _seconds_until(moment: datetime, now: datetime) -> int:
    """Whole seconds from `now` until `moment`, rounded up, at least 1."""
    return max(1, math.ceil((moment - now).total_seconds()))


def _retry_until_end(figures: BudgetFigures, now: datetime) -> int | None:
    end = figures.period_end
    if end is None:
        return None  # a lifetime limit: nothing refills it by itself
    return _seconds_until(end, now)


def _retry_when_lease_ends(until: datetime | None, now: datetime) -> int:
    """When the first of the reservations holding a budget ends (it may be spent sooner),
    at most RESERVED_RETRY_SECONDS or the default lease."""
    cap = min(RESERVED_RETRY_SECONDS, settings.ENGRAM_BUDGET_LEASE_SECONDS)
    return cap if until is None else min(cap, _seconds_until(until, now))


def period_refusal(
    *,
    periods: list[BudgetFigures],
    estimated_tokens: int,
    estimated_usd: Decimal | None,
    now: datetime,
    usd_priced: bool = False,
) -> PeriodRefusal | None:
    """Would the estimate overdraw a refusing period budget, once the other agents' live
    reservations are set aside? The first that would, in id order. `usd_priced`: the
    USD estimate was priced from the tokens (the agent sent none), as the reason says."""
    for figures in periods:
        if not figures.refuses:
            continue
        budget = figures.budget
        lines = (
            ("tokens", budget.limit_tokens, figures.spent_tokens, figures.reserved_tokens,
             estimated_tokens),
            ("USD", budget.limit_usd, figures.spent_usd, figures.reserved_usd,
             estimated_usd or Decimal(0)),
        )  # fmt: skip
        for unit, limit, spent, held, estimate in lines:
            if limit is None:
                continue
            name = f"The {budget.scope} budget {budget.name or budget.pk} ({budget.period})"
            leased = figures.reserved_count > 0
            pending = figures.reserved_count
            if spent >= limit:
                reason = f"{name} is spent: {amount_text(spent)} of {amount_text(limit)} {unit}."
                leased = False
            elif spent + held >= limit:
                reason = f"{name}: the rest is reserved by {pending} pending step(s)."
            elif spent + held + estimate > limit:
                priced = unit == "USD" and usd_priced
                overdraw = overdraw_text(
                    estimate=estimate, spent=spent, held=held, limit=limit, unit=unit,
                    pending=pending,
                    how=f" ({estimated_tokens} tokens priced as output)" if priced else "",
                )  # fmt: skip
                reason = f"{name}: {overdraw}."
            else:
                continue
            return PeriodRefusal(
                figures=figures, reason=reason, retry_after=_period_retry(figures, leased, now)
            )
    return None


def _period_retry(figures: BudgetFigures, leased: bool, now: datetime) -> int | None:
    """The period's end; sooner when live reservations hold the budget (`leased`): the
    first of them ends, whichever comes first."""
    end = _retry_until_end(figures, now)
    if not leased:
        return end
    lease = _retry_when_lease_ends(figures.reserved_until, now)
    return lease if end is None else min(lease, end)


def budget_retry_after(decision: BudgetDecision) -> int | None:
    """Seconds after which a refused check may pass: a period budget's end, or sooner
    when others' leases hold it; a session held by others' reservations, when the first
    of their leases ends (a turn may spend one sooner). None when the check was allowed,
    and when waiting cannot help: a session's own budget spent or too small for the
    estimate, a budget of period "none", a session blocked as runaway (none of them
    resets by itself)."""
    if decision.check.allowed:
        return None
    if decision.refusal is not None:
        return decision.refusal.retry_after
    session = decision.session
    if session.runaway_blocked or budget_remaining(session).exceeded or not decision.held.count:
        return None
    return _retry_when_lease_ends(decision.held.until, decision.at)


def budget_refusal_message(decision: BudgetDecision) -> str:
    """Why the check was refused, saying so when waiting will not help."""
    reason = decision.check.reason
    if budget_retry_after(decision) is None:
        return f"{reason} {DOES_NOT_RESET}"
    return reason
