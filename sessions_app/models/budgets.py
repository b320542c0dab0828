from __future__ import annotations

import uuid

from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.db import models

from sessions_app.models.sessions import ChatSession


class BudgetReservation(models.Model):
    """Tokens (and USD) an agent said it is about to spend, held against the session's
    budget by `POST …/budget/check` with `reserve: true` until the turn that spends them
    is recorded (which deletes the reservation) or the lease ends. Without it, agents
    that check concurrently all see the same remaining budget and all go ahead.

    `budget_ids` are the period budgets (`SpendBudget`) it is held against besides the
    session's own budget: an array rather than a join table, so that deleting the
    reservation (a plain DELETE) releases every hold at once."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    session = models.ForeignKey(
        ChatSession, on_delete=models.CASCADE, related_name="budget_reservations"
    )
    tokens = models.BigIntegerField()
    cost_usd = models.DecimalField(max_digits=14, decimal_places=6, null=True, blank=True)
    budget_ids = ArrayField(models.UUIDField(), default=list, blank=True)
    created_at = models.DateTimeField()
    expires_at = models.DateTimeField()

    class Meta:
        db_table = "budget_reservation"
        indexes = [
            models.Index(fields=["session", "created_at"], name="reservation_session_created"),
            models.Index(fields=["expires_at"], name="reservation_expires"),
            GinIndex(fields=["budget_ids"], name="reservation_budget_ids"),
        ]

    def __str__(self) -> str:
        return f"{self.tokens} tokens until {self.expires_at:%H:%M:%S}"
