"""Period budgets as the API shows them (plain dicts for the serializers)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sessions_app.models import SpendBudget
from sessions_app.selectors.spend_budgets import BudgetFigures, budget_forecast, budgets_figures
from sessions_app.services.spend_budgets import spend_percent


def figures_data(figures: BudgetFigures) -> dict[str, Any]:
    budget = figures.budget
    return {
        "id": budget.pk,
        "scope": budget.scope,
        "period": budget.period,
        "action": budget.action,
        "limit_tokens": budget.limit_tokens,
        "limit_usd": budget.limit_usd,
        "period_start": figures.period_start,
        "period_end": figures.period_end,
        "spent_tokens": figures.spent_tokens,
        "spent_usd": figures.spent_usd,
        "reserved_tokens": figures.reserved_tokens,
        "reserved_usd": figures.reserved_usd,
    }


def _current(figures: BudgetFigures, at: datetime) -> dict[str, Any]:
    budget = figures.budget
    percent = spend_percent(
        tokens=figures.spent_tokens,
        usd=figures.spent_usd,
        limit_tokens=budget.limit_tokens,
        limit_usd=budget.limit_usd,
    )
    forecast = budget_forecast(figures, at=at)
    return {
        "period_start": figures.period_start,
        "period_end": figures.period_end,
        "spent_tokens": figures.spent_tokens,
        "spent_usd": figures.spent_usd,
        "reserved_tokens": figures.reserved_tokens,
        "reserved_usd": figures.reserved_usd,
        "percent": None if percent.is_infinite() else round(float(percent), 2),
        "forecast_tokens": forecast.tokens,
        "forecast_usd": forecast.usd,
    }


def budgets_data(budgets: list[SpendBudget], *, at: datetime) -> list[dict[str, Any]]:
    """Each budget with its current period, in the order given (one figures query)."""
    current = {f.budget.pk: _current(f, at) for f in budgets_figures(budgets=budgets, at=at)}
    fields = (
        *("id", "name", "scope", "user_id", "agent_id", "model", "period", "time_zone"),
        *("limit_tokens", "limit_usd", "action", "alert_thresholds", "created_at", "updated_at"),
    )
    return [
        {**{name: getattr(budget, name) for name in fields}, "current": current[budget.pk]}
        for budget in budgets
    ]
