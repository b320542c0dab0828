"""Sessions app models, one module per concept."""

from sessions_app.models.budgets import BudgetReservation
from sessions_app.models.idempotency import IdempotencyRecord
from sessions_app.models.outbox import OutboxMessage
from sessions_app.models.sessions import ChatSession, SessionStatus
from sessions_app.models.spend_budgets import (
    BudgetAction,
    BudgetPeriod,
    BudgetScope,
    BudgetSpend,
    SpendBudget,
)
from sessions_app.models.tenancy import ApiKey, Tenant, TenantContextPolicy
from sessions_app.models.turns import ChatTurn, TurnKind, TurnStep
from sessions_app.models.workspace import SessionComponent, SessionSelection

__all__ = [
    "ApiKey",
    "BudgetAction",
    "BudgetPeriod",
    "BudgetReservation",
    "BudgetScope",
    "BudgetSpend",
    "ChatSession",
    "ChatTurn",
    "IdempotencyRecord",
    "OutboxMessage",
    "SessionComponent",
    "SessionSelection",
    "SessionStatus",
    "SpendBudget",
    "Tenant",
    "TenantContextPolicy",
    "TurnKind",
    "TurnStep",
]
