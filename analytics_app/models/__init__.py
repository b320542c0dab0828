"""analytics_app models, one module per concept: prices, spend rollups, runaway alerts."""

from analytics_app.models.alerts import AlertStatus, RunawayAlert
from analytics_app.models.budget_alerts import BudgetAlert
from analytics_app.models.prices import ModelPrice
from analytics_app.models.reconciliation import ProviderUsage
from analytics_app.models.rollups import (
    ROLLUP_COUNTERS,
    Granularity,
    RollupFillState,
    SpendCounters,
    SpendRollup,
    UserSpendRollup,
)

__all__ = [
    "ROLLUP_COUNTERS",
    "AlertStatus",
    "BudgetAlert",
    "Granularity",
    "ModelPrice",
    "ProviderUsage",
    "RollupFillState",
    "RunawayAlert",
    "SpendCounters",
    "SpendRollup",
    "UserSpendRollup",
]
