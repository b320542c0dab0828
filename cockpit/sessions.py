"""Small derived figures about a session that several cockpit pages print."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sessions_app.models import ChatSession


@dataclass(frozen=True)
class BudgetUse:
    tokens_percent: float | None
    usd_percent: float | None

    @property
    def worst(self) -> float | None:
        known = [p for p in (self.tokens_percent, self.usd_percent) if p is not None]
        return max(known) if known else None


def budget_use(session: ChatSession) -> BudgetUse:
    """Share of each budget the session used; None where it has no such budget."""
    tokens = 100 * session.total_tokens / session.budget_tokens if session.budget_tokens else None
    usd = float(100 * session.total_cost_usd / session.budget_usd) if session.budget_usd else None
    return BudgetUse(tokens, usd)
