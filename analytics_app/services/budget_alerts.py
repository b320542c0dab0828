"""Budget threshold alerts: when a recorded turn moves a period budget's spend past one of
its thresholds, sessions_app says so after commit (`budget_threshold_crossed`, once per
budget, period and threshold); this opens the alert and sends it through the signed
webhook of the runaway alerts (`services.alerts`), with the budget's figures."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from django.db import transaction

from analytics_app.models import BudgetAlert
from sessions_app.api.renderers import jsonable
from sessions_app.selectors.spend_budgets import budgets_figures, spend_budgets_by_id
from sessions_app.services.outbox import task_publish

if TYPE_CHECKING:
    from sessions_app.models import SpendBudget
    from sessions_app.selectors.spend_budgets import BudgetFigures
    from sessions_app.services.spend_budgets import ThresholdCrossed

logger = logging.getLogger(__name__)


def _payload(budget: SpendBudget, figures: BudgetFigures, threshold: int) -> dict[str, Any]:
    return jsonable(
        {
            "event": "budget.threshold",
            "tenant": budget.tenant.name,
            "budget": {
                "id": budget.pk,
                "name": budget.name,
                "scope": budget.scope,
                "user_id": budget.user_id,
                "agent_id": budget.agent_id,
                "model": budget.model,
                "period": budget.period,
                "time_zone": budget.time_zone,
                "limit_tokens": budget.limit_tokens,
                "limit_usd": None if budget.limit_usd is None else str(budget.limit_usd),
                "action": budget.action,
            },
            "threshold_percent": threshold,
            "period_start": figures.period_start,
            "period_end": figures.period_end,
            "spent_tokens": figures.spent_tokens,
            "spent_usd": str(figures.spent_usd),
        }
    )


def _deliver_later(task: Any, alert_id: int) -> Callable[[], None]:
    def deliver() -> None:
        task_publish(task, alert_id)

    return deliver


def budget_alerts_open(*, crossed: list[ThresholdCrossed]) -> list[BudgetAlert]:
    """One alert per (budget, period, threshold) crossed, each delivered after commit;
    none for an alert already opened (a repeated signal) or a budget deleted since."""
    from analytics_app.tasks import budget_alert_deliver

    budgets = spend_budgets_by_id([item.budget_id for item in crossed])
    opened = []
    with transaction.atomic():
        for item in crossed:
            budget = budgets.get(item.budget_id)
            if budget is None:
                continue
            (figures,) = budgets_figures(budgets=[budget], at=item.period_start)
            alert, created = BudgetAlert.objects.get_or_create(
                budget_id=budget.pk,
                period_start=item.period_start,
                threshold=item.threshold,
                defaults={
                    "tenant_id": budget.tenant_id,
                    "payload": _payload(budget, figures, item.threshold),
                },
            )
            if created:
                opened.append(alert)
                transaction.on_commit(_deliver_later(budget_alert_deliver, alert.pk), robust=True)
    return opened


def on_budget_threshold_crossed(*, crossed: list[ThresholdCrossed], **_: Any) -> None:
    """The receiver: quick, and never raises into the request that recorded the turn."""
    try:
        budget_alerts_open(crossed=crossed)
    except Exception:  # a lost alert must not fail a stored turn
        logger.exception("budget alerts not opened for %s", crossed)


def budget_alerts_erase_user(*, tenant_id: int, user_id: str) -> int:
    """The alerts about budgets keyed by the user (their payload names the user), sent
    or pending: they go with the rest of the user's data."""
    deleted, _ = BudgetAlert.objects.filter(
        tenant_id=tenant_id, payload__budget__user_id=user_id
    ).delete()
    return deleted
