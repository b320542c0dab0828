"""What remains of a session's budget. Budgets count input + output tokens and USD."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from sessions_app.models import ChatSession


@dataclass(frozen=True)
class BudgetRemaining:
    tokens: int | None  # None: no token budget
    usd: Decimal | None  # None: no USD budget

    @property
    def exceeded(self) -> bool:
        """Spent means nothing left: at exactly the budget, the next call would exceed it."""
        return (self.tokens is not None and self.tokens <= 0) or (
            self.usd is not None and self.usd <= 0
        )


def budget_remaining(session: ChatSession) -> BudgetRemaining:
    return BudgetRemaining(
        tokens=None
        if session.budget_tokens is None
        else int(session.budget_tokens) - session.total_tokens,
        usd=None
        if session.budget_usd is None
        else Decimal(session.budget_usd) - Decimal(session.total_cost_usd),
    )


@dataclass(frozen=True)
class BudgetCheck:
    allowed: bool
    reason: str  # "" when allowed
    tokens_remaining_after: int | None


def budget_check(
    *, session: ChatSession, estimated_tokens: int, estimated_usd: Decimal | None = None
) -> BudgetCheck:
    """May the agent spend this much more? No, if a runaway flag blocks the session, if
    the budget is spent, or if the estimate would overdraw it."""
    remaining = budget_remaining(session)
    after = None if remaining.tokens is None else remaining.tokens - estimated_tokens
    if session.runaway_blocked:
        reason = "The session is blocked as runaway."
    elif remaining.exceeded:
        reason = "The session's budget is spent."
    elif after is not None and after < 0:
        reason = f"The estimate exceeds the {remaining.tokens} tokens that remain."
    elif (
        estimated_usd is not None
        and remaining.usd is not None
        and remaining.usd - estimated_usd < 0
    ):
        reason = f"The estimate exceeds the {remaining.usd} USD that remain."
    else:
        reason = ""
    return BudgetCheck(allowed=not reason, reason=reason, tokens_remaining_after=after)
