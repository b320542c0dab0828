"""What remains of a session's budget. Budgets count input + output tokens and USD."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from django.db.models import Count, Min, Sum

from sessions_app.models import BudgetReservation, ChatSession

AMOUNT_STEP = Decimal("0.000001")  # the precision the dashboards show USD in


def amount_text(amount: int | Decimal) -> str:
    """An amount as a person reads it in a message: tokens as they are, USD to at most
    six decimals without trailing zeros ("0.0074", not "0.0074000000")."""
    if isinstance(amount, int):
        return str(amount)
    text = format(Decimal(amount).quantize(AMOUNT_STEP), "f")
    text = text.rstrip("0").rstrip(".") if "." in text else text
    return "0" if text in ("-0", "") else text


def overdraw_text(
    *, estimate: int | Decimal, spent: int | Decimal, held: int | Decimal, limit: int | Decimal,
    unit: str, pending: int, how: str = "",
) -> str:  # fmt: skip
    """What an estimate that does not fit would do: "estimated 0.0012 USD would bring
    spend to 0.0086 USD, over the 0.008 USD budget (0.0074 USD spent)", with what others'
    live reservations hold when they hold some; `how` the estimate was made, if told."""
    parts = [f"{amount_text(spent)} {unit} spent"]
    if pending:
        parts.append(f"{amount_text(held)} {unit} reserved by {pending} pending step(s)")
    return (
        f"estimated {amount_text(estimate)} {unit}{how} would bring spend to "
        f"{amount_text(spent + held + estimate)} {unit}, over the {amount_text(limit)} {unit} "
        f"budget ({', '.join(parts)})"
    )


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
class Held:
    """What live reservations of a session hold against its budget."""

    count: int = 0
    tokens: int = 0
    usd: Decimal = Decimal(0)
    until: datetime | None = None  # when the first of them ends (None: none held)


NOTHING_HELD = Held()


def reservations_held(*, session: ChatSession, now: datetime) -> Held:
    """The session's reservations whose lease has not ended."""
    row = BudgetReservation.objects.filter(session=session, expires_at__gt=now).aggregate(
        count=Count("pk"), tokens=Sum("tokens"), usd=Sum("cost_usd"), until=Min("expires_at")
    )
    return Held(
        count=row["count"],
        tokens=row["tokens"] or 0,
        usd=row["usd"] or Decimal(0),
        until=row["until"],
    )


@dataclass(frozen=True)
class BudgetCheck:
    allowed: bool
    reason: str  # "" when allowed
    tokens_remaining_after: int | None


def budget_check(
    *,
    session: ChatSession,
    estimated_tokens: int,
    estimated_usd: Decimal | None = None,
    held: Held = NOTHING_HELD,
) -> BudgetCheck:
    """May the agent spend this much more? No, if a runaway flag blocks the session, if
    the budget is spent, or if the estimate would overdraw what is left once the other
    agents' live reservations (`held`) are set aside."""
    spent = budget_remaining(session)
    remaining = BudgetRemaining(
        tokens=None if spent.tokens is None else spent.tokens - held.tokens,
        usd=None if spent.usd is None else spent.usd - held.usd,
    )
    after = None if remaining.tokens is None else remaining.tokens - estimated_tokens
    if session.runaway_blocked:
        reason = "The session is blocked as runaway."
    elif spent.exceeded:
        reason = "The session's budget is spent."
    elif remaining.exceeded:
        reason = f"The rest of the budget is reserved by {held.count} pending step(s)."
    elif after is not None and after < 0:
        reason = f"The estimate exceeds the {remaining.tokens} tokens that remain" + (
            f" ({held.tokens} more are reserved)." if held.count else "."
        )
    elif (
        estimated_usd is not None
        and remaining.usd is not None
        and session.budget_usd is not None
        and remaining.usd - estimated_usd < 0
    ):
        overdraw = overdraw_text(
            estimate=estimated_usd, spent=Decimal(session.total_cost_usd), held=held.usd,
            limit=Decimal(session.budget_usd), unit="USD", pending=held.count,
        )  # fmt: skip
        reason = f"The session's {overdraw}."
    else:
        reason = ""
    return BudgetCheck(allowed=not reason, reason=reason, tokens_remaining_after=after)
